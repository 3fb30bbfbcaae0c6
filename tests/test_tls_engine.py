"""The engine over TLS against a real nginx: versions, exact counts and resumed handshakes checked
in nginx's own access log, refused certificates, a plain server behind an https URL, bad TLS
input. One nginx for the module (sites on ports of their own: the suite's certificate, another
CA's, an expired one, one for another name); every load targets 127.0.0.1 and is bounded by -n
or -d and by a subprocess timeout."""

import datetime as dt
import json
import subprocess
import time

import pytest
from conftest import accounted, binary, log_lines, tls_nginx

SEVEN = b"hello!\n"


def certificate(authority, hosts=("localhost", "127.0.0.1"), **validity):
    from httpbench.certificates import pem_cert, pem_key

    key, cert = authority.issue("test server", hosts=hosts, **validity)
    return pem_cert(cert), pem_key(key)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The nginx, and beside its sites `trusted`: the CA file a client trusts for each (the
    suite's CA, except for the expired and misnamed certificates of a CA of their own)."""
    from httpbench.certificates import Authority, pem_cert

    folder = tmp_path_factory.mktemp("tls-nginx")
    other, ours = Authority.new("another CA"), Authority.new("a test CA")
    sites = {
        "other_ca": certificate(other),
        "expired": certificate(ours, valid_from=dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=30), days=2),
        "other_name": certificate(ours, hosts=("www.example.com",)),
    }
    ours_ca = folder / "ours-ca.pem"
    ours_ca.write_bytes(pem_cert(ours.cert))
    with tls_nginx(folder / "nginx", {"index.html": SEVEN}, sites) as nginx:
        nginx.trusted = {"other_ca": nginx.ca, "expired": ours_ca, "other_name": ours_ca}
        yield nginx


def load(*args, timeout=60):
    done = subprocess.run([str(binary("httpbench-load")), *args], capture_output=True, text=True, timeout=timeout)
    report = json.loads(done.stdout) if done.stdout.startswith("{") else None
    return done.returncode, report, done.stdout, done.stderr


def logged(server, before: int, expected: int) -> list[list[str]]:
    """The access log's lines after the first `before`, split: serial, method, path, protocol,
    TLS version, session reused (r or .)."""
    return [line.split() for line in log_lines(server.log, before + expected)[before:]]


@pytest.mark.parametrize("io", ["io-uring", "epoll"])
@pytest.mark.parametrize("version", ["1.2", "1.3"])
def test_exactly_n_requests_over_each_tls_version(server, io, version):
    before = len(log_lines(server.log))
    rc, r, _, err = load(
        "--json", "-n", "3000", "-c", "20", "--io", io, "--tls-version", version, "--cacert", str(server.ca),
        server.url() + "index.html",
    )  # fmt: skip
    assert rc == 0, err
    assert r["requests"]["sent"] == r["requests"]["completed"] == 3000 and r["errors_total"] == 0
    assert r["bytes"]["body"] == 3000 * len(SEVEN) and r["engine"]["io"] == io.replace("-", "_")
    tls = r["tls"]
    assert tls["version"] == version and tls["verified"] and tls["alpn"] == "http/1.1"
    assert tls["cipher"].startswith("TLS_") and tls["group"]
    assert tls["handshakes_full"] + tls["handshakes_resumed"] == r["connections"]["opened"] == 20
    hs = r["latency"]["tls_handshake"]
    assert hs["count"] == 20 and hs["min_us"] > 0
    assert r["latency"]["connect"]["count"] == 20
    # The validation request, then exactly -n, every one over the version asked for.
    lines = logged(server, before, 3001)
    assert len(lines) == 3001
    assert {line[4] for line in lines} == {f"TLSv{version}"}
    accounted(r)


@pytest.mark.parametrize(
    "version,resumption",
    [("1.3", "tickets"), ("1.2", "tickets"), ("1.2", "ids"), ("1.3", "none"), ("1.2", "none")],
)
def test_resumed_handshakes_agree_with_nginx(server, version, resumption):
    # One connection at a time, no validation request: every handshake nginx logs is one of
    # the run's, in order.
    before = len(log_lines(server.log))
    rc, r, _, err = load(
        "--json", "-n", "40", "-c", "1", "--no-keepalive", "--no-validate", "--tls-version", version,
        "--tls-resumption", resumption, "--cacert", str(server.ca), server.url() + "index.html",
    )  # fmt: skip
    assert rc == 0, err
    lines = logged(server, before, 40)
    assert len(lines) == 40 and len({line[0] for line in lines}) == 40  # a connection each
    reused = sum(line[5] == "r" for line in lines)
    tls = r["tls"]
    assert (tls["handshakes_full"], tls["handshakes_resumed"]) == (40 - reused, reused)
    assert reused == (0 if resumption == "none" else 39)


@pytest.mark.parametrize("io", ["io-uring", "epoll"])
def test_many_connections_without_keep_alive_resume_after_their_first(server, io):
    # Every connection's first handshake is full (no ticket yet), every later one resumed: the
    # store serves them all, where rustls' own would run out of TLS 1.3 tickets.
    before = len(log_lines(server.log))
    rc, r, _, err = load(
        "--json", "-n", "600", "-c", "30", "--no-keepalive", "--no-validate", "--io", io, "--cacert", str(server.ca),
        server.url() + "index.html",
    )  # fmt: skip
    assert rc == 0, err
    assert r["requests"]["completed"] == 600 and r["errors_total"] == 0
    tls = r["tls"]
    assert tls["version"] == "1.3" and tls["handshakes_full"] == 30
    # Handshakes of connections opened as the budget ran out carry no request: nginx logs none.
    lines = logged(server, before, 600)
    assert len(lines) == 600
    assert 600 - 30 <= sum(line[5] == "r" for line in lines) <= tls["handshakes_resumed"]


@pytest.mark.parametrize("io", ["io-uring", "epoll"])
@pytest.mark.parametrize("loop", [(), ("-R", "400")], ids=["closed", "open"])
def test_a_warm_up_of_the_connections_keeps_their_handshakes_out_of_the_window(server, io, loop):
    # Two threads, so that one moment has to hold for both; -n counts only measured requests.
    rc, r, _, err = load(
        "--json", "-n", "300", "-c", "30", "-t", "2", "--warmup-connections", "--io", io, *loop,
        "--cacert", str(server.ca), server.url() + "index.html",
    )  # fmt: skip
    assert rc == 0, err
    accounted(r)
    assert r["requests"]["sent"] == r["requests"]["completed"] == 300 and r["errors_total"] == 0, r["errors"]
    tls, c = r["tls"], r["connections"]
    assert tls["handshakes_full"] + tls["handshakes_resumed"] == c["opened"] == 0, (tls, c)
    assert r["latency"]["connect"]["count"] == r["latency"]["tls_handshake"]["count"] == 0


def test_without_keep_alive_a_warm_up_of_the_connections_leaves_only_resumed_handshakes(server):
    # The first wave's full handshakes are the warm-up's: every one measured is resumed (a
    # connection may carry a measured request after a handshake begun in the warm-up).
    rc, r, _, err = load(
        "--json", "-n", "200", "-c", "10", "--no-keepalive", "--warmup-connections", "--tls-resumption", "tickets",
        "--cacert", str(server.ca), server.url() + "index.html",
    )  # fmt: skip
    assert rc == 0, err
    tls = r["tls"]
    assert r["requests"]["completed"] == 200, r["errors"]
    assert tls["handshakes_full"] == 0 and tls["handshakes_resumed"] >= 200 - 10, tls


@pytest.mark.parametrize(
    "site,says",
    [
        ("other_ca", "(unknown CA)"),
        ("expired", "(expired)"),
        ("other_name", "(name mismatch): it does not name 127.0.0.1"),
    ],
)
def test_an_untrusted_certificate_is_one_line_naming_the_reason(server, site, says):
    ca = str(server.trusted[site])
    rc, r, out, err = load("--json", "-n", "10", "--cacert", ca, server.url(site))
    assert rc == 2 and out == "", out
    assert len(err.strip().splitlines()) == 1 and says in err, err
    assert "pass --cacert FILE with the CA that signed it, or --insecure" in err
    # Without the validation request every handshake fails, in its own class.
    rc, r, _, err = load("--json", "-d", "300ms", "-c", "2", "--no-validate", "--cacert", ca, server.url(site))
    assert r["errors"]["tls_certificate"] > 0 and r["requests"]["sent"] == 0, err
    accounted(r)


def test_insecure_loads_any_certificate_and_says_so(server):
    rc, _, out, err = load("-n", "50", "-c", "5", "--insecure", server.url("other_ca"))
    assert rc == 0, err
    assert "certificate not verified" in out and "handshakes 5 full" in out, out
    assert "TLS 1.3 TLS_" in out and "handshake " in out


def test_an_https_url_at_a_plain_server_fails_its_handshakes_in_time(server):
    https_at_plain = server.plain_url.replace("http://", "https://")
    rc, _, out, err = load("-n", "10", https_at_plain)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "TLS handshake" in err and "does the server speak TLS on that port?" in err, err
    started = time.monotonic()
    rc, r, _, err = load("--json", "-d", "500ms", "-c", "2", "--no-validate", "--timeout", "2s", https_at_plain)
    assert time.monotonic() - started < 10 and "panicked" not in err, err
    assert r["errors"]["tls_handshake"] > 0 and r["requests"]["sent"] == 0, r["errors"]
    assert r["tls"]["version"] is None and not r["tls"]["handshakes_full"]
    accounted(r)


@pytest.mark.parametrize(
    "args,says",
    [
        (("--insecure",), "--insecure is for https:// URLs"),
        (("--cacert", "{ca}"), "--cacert is for https:// URLs"),
        (("--tls-version", "1.3"), "--tls-version is for https:// URLs"),
        (("--tls-resumption", "none"), "--tls-resumption is for https:// URLs"),
    ],
)
def test_tls_flags_with_an_http_url_are_refused(server, args, says):
    rc, _, out, err = load("-n", "10", *[a.format(ca=server.ca) for a in args], server.plain_url)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and says in err, err


@pytest.mark.parametrize(
    "args,says",
    [
        (("--cacert", "/nonexistent/ca.pem"), "--cacert: cannot use /nonexistent/ca.pem as CA certificates: No such"),
        (("--cacert", "{log}"), "holds no PEM certificate"),
        (("--cacert", "/"), "--cacert: cannot use / as CA certificates: Is a directory"),
        (
            ("--tls-version", "1.3", "--tls-ciphers", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
            "--tls-ciphers: none of the cipher suites offered is for TLS 1.3: offer one of TLS_AES_256_GCM_SHA384,",
        ),
        (("--tls-version", "1.1"), "'1.1'"),
        (("--tls-ciphers", "RC4-MD5"), '--tls-ciphers: "RC4-MD5" is not one this client offers; choose among'),
        (("--tls-groups", "ffdhe1024"), '--tls-groups: "ffdhe1024" is not one this client offers'),
        (("--tls-version", "1.3", "--tls-resumption", "ids"), "add --tls-version 1.2"),
        (("--tls-resumption", "ids"), "TLS 1.3 resumes with tickets only"),
        (("--insecure", "--cacert", "{ca}"), "drop one of the two"),
        # nginx's certificate is ECDSA: an RSA-only suite leaves it nothing to choose.
        (
            ("--tls-version", "1.2", "--tls-ciphers", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
            "the server speaks TLS but refused what was offered; check --tls-version, --tls-ciphers",
        ),
    ],
)
def test_bad_tls_input_is_one_line_and_exit_2(server, args, says):
    rc, _, out, err = load("-n", "10", *[a.format(ca=server.ca, log=server.log) for a in args], server.url())
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert says in err and err.startswith("httpbench-load: "), err


def test_httpbench_load_runs_the_same_tls_flags(server, capfd):
    from httpbench.cli import main as cli

    capfd.readouterr()
    code = cli.main(["load", "--json", "-n", "20", "-c", "2", "--cacert", str(server.ca), server.url()])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert json.loads(out)["tls"]["verified"]
    code = cli.main(["load", "-n", "20", "--insecure", server.plain_url])
    out, err = capfd.readouterr()
    assert code == 2 and err.startswith("httpbench load: --insecure is for https:// URLs"), err


def test_a_stalled_handshake_times_out_as_tls_handshake():
    # A listening socket nobody accepts on: the kernel completes TCP, nothing ever answers the
    # ClientHello.
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        url = f"https://127.0.0.1:{listener.getsockname()[1]}/"
        rc, _, out, err = load("-n", "10", "-c", "2", "--connect-timeout", "500ms", url, timeout=30)
        assert rc == 2 and out == "" and "no TLS handshake with" in err and "within 500ms" in err, err
        started = time.monotonic()
        rc, r, _, err = load(
            "--json", "-n", "10", "-c", "2", "--no-validate", "--connect-timeout", "500ms", "--timeout", "1s", url,
            timeout=30,
        )  # fmt: skip
        # No handshake ever ends, so the run gives up after the connect and request timeouts
        # and a second, instead of waiting for requests it can never send.
        assert rc == 1 and time.monotonic() - started < 10, err
        assert r["errors"]["tls_handshake"] > 0 and r["requests"]["sent"] == 0 and r["aborted"], r["errors"]
        accounted(r)
