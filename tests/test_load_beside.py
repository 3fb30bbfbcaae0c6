"""Slow clients and idle connections beside the load, against a real nginx: slowloris connections
held by nginx as shipped, cut by its client_header_timeout where one is set and opened again, and
idle connections closed at its keepalive_timeout. Each run is a few seconds."""

from conftest import free_port, nghttpd, start_nginx, stop, wait_for_port


def beside_nginx(load, tmp_path, settings: str, *args: str) -> dict:
    """`httpbench-load ARGS` against nginx serving a small file with `settings` in its server
    block, stopped after: the report of a run that exited 0."""
    root = tmp_path / "www"
    root.mkdir()
    (root / "index.html").write_bytes(b"x" * 7)
    port = free_port()
    proc = start_nginx(tmp_path, f"access_log off;\n    server {{ listen 127.0.0.1:{port}; root {root}; {settings} }}")
    try:
        wait_for_port(port, proc)
        code, r, err = load(*args, f"http://127.0.0.1:{port}/index.html")
    finally:
        stop(proc)
    assert code == 0, err
    return r


def test_slowloris_is_held_by_nginx_as_shipped_and_the_load_is_answered(load, tmp_path):
    r = beside_nginx(load, tmp_path, "", "-c", "2", "-d", "2s", "--slow-clients", "50", "--slow", "headers")
    slow = r["slow_clients"]
    assert (slow["mode"], slow["opened"], slow["held"], slow["cut_by_server"]) == ("headers", 50, 50, 0), slow
    assert r["requests"]["succeeded"] > 0 and r["errors_total"] == 0 and r["aborted"] is None
    assert r["client"]["hostile_thread"]["wall_s"] > 0


def test_nginx_cuts_slow_heads_at_its_client_header_timeout_and_they_come_back(load, tmp_path):
    args = ("-c", "2", "-d", "3s", "--slow-clients", "20", "--slow-interval", "200ms")
    r = beside_nginx(load, tmp_path, "client_header_timeout 1s;", *args)
    slow = r["slow_clients"]
    assert slow["cut_by_server"] >= 20 and slow["opened"] > 20, slow
    assert slow["cut_after_ms"]["count"] == slow["cut_by_server"]
    assert slow["series"][-1]["closed"] == slow["cut_by_server"]


def test_nginx_closes_idle_connections_at_its_keepalive_timeout(load, tmp_path):
    r = beside_nginx(load, tmp_path, "keepalive_timeout 1s;", "-c", "2", "-d", "2500ms", "--idle", "30")
    idle = r["idle_connections"]
    assert (idle["opened"], idle["closed_by_server"], idle["held"]) == (30, 30, 0), idle
    # The load's own connections stay busy, so keep-alive's timeout never closes them.
    assert r["requests"]["succeeded"] > 0 and r["errors_total"] == 0


def test_slow_reads_and_bodies_over_h2c_hold_nghttpd(load, tmp_path):
    """Over h2 a slow reader's stream window holds a large answer back (opened a chunk every
    interval), and a slow body goes in DATA frames: both held to the end."""
    (tmp_path / "index.html").write_bytes(b"x" * 7)
    (tmp_path / "big.bin").write_bytes(b"x" * (16 << 20))
    with nghttpd(tmp_path) as port:
        url = f"http://127.0.0.1:{port}/index.html"
        runs = {
            mode: load("-c", "1", "-d", "1500ms", "--http2", "--slow-clients", "10", "--slow", mode, *extra, url)
            for mode, extra in [
                ("read", ("--slow-path", "/big.bin", "--slow-interval", "100ms")),
                ("body", ("--slow-interval", "100ms")),
            ]
        }
    for mode, (code, r, err) in runs.items():
        assert code == 0, err
        slow = r["slow_clients"]
        assert (slow["mode"], slow["opened"], slow["held"], slow["cut_by_server"]) == (mode, 10, 10, 0), slow
        assert r["requests"]["succeeded"] > 0 and r["protocol"] == "h2"
