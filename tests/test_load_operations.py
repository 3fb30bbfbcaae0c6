"""The engine under a server's operations (issue 29): a reused keep-alive connection lost before
its answer (error class `retryable`, `--retry-idempotent`), a server that goes away for a while
(`--keep-going`), and the fine series (`--tick`).

Every load here targets 127.0.0.1 and is bounded by -n or -d and by a subprocess timeout.
"""

import subprocess

import pytest
from conftest import accounted, binary, free_port, stop
from httpbench.load import engine


def nonzero(errors: dict) -> dict:
    return {name: n for name, n in errors.items() if n}


@pytest.mark.parametrize("io", ["io-uring", "epoll"])
def test_a_reused_connection_closed_before_its_answer_is_retryable_and_retried_once(testserver, load, io):
    # Each connection answers 3 requests, reads the 4th and closes without answering it (and
    # without having said Connection: close). One connection, 20 requests: 5 rounds of 3 answers
    # and a 4th lost, each written to a connection that had answered.
    url = testserver("close-reused", "--close-after", "3")
    rc, r, err = load("-c", "1", "-n", "20", "--io", io, url)
    assert rc == 0, err
    q = r["requests"]
    assert (q["sent"], q["completed"], q["retried"]) == (20, 15, 0), q
    assert nonzero(r["errors"]) == {"retryable": 5} and r["errors_total"] == 5, r["errors"]
    assert "retryable" in r["errors"] and r["errors"]["eof"] == 0
    accounted(r)
    # Retried, each goes first on a new connection, which answers it and 2 new requests, then
    # loses its 4th: new requests 4, 7, 10, 13, 16 and 19 are retried, 20 is answered on the 7th
    # connection. None fails; sent stays the budget. A retry counts among its connection's
    # requests: 4 a connection are as many as the server takes.
    for per_connection in ((), ("--requests-per-connection", "4")):
        rc, r, err = load("-c", "1", "-n", "20", "--io", io, "--retry-idempotent", *per_connection, url)
        assert rc == 0, err
        q = r["requests"]
        assert (q["sent"], q["completed"], q["retried"]) == (20, 20, 6), q
        assert r["errors_total"] == 0, nonzero(r["errors"])
        assert r["connections"]["opened"] == 7
        assert r["spec"]["retry_idempotent"] is True
        accounted(r)


def test_a_close_on_a_fresh_connection_is_no_retryable(testserver, load):
    # A connection that answers nothing before closing was never reused: its request fails as
    # eof, and --retry-idempotent does not retry it.
    url = testserver("close-reused", "--close-after", "1")
    rc, r, err = load("-c", "1", "-n", "6", "--pipeline", "2", "--retry-idempotent", url)
    assert rc == 0, err
    # Each connection gets 2 requests at once, answers the first and closes on the second, which
    # was written before the connection had answered.
    assert nonzero(r["errors"]) == {"eof": 3} and r["requests"]["retried"] == 0, r["errors"]
    accounted(r)


def test_keep_going_runs_to_its_end_through_refused_connects(load):
    # The server exits 1 s into a 3 s run: without --keep-going the run ends early (nothing
    # listens any more); with it, it runs to its end, counting the refused connects.
    for keep_going in (False, True):
        proc = subprocess.Popen(
            [str(binary("httpbench-testserver")), "--mode", "ok", "--max-seconds", "1"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            url = f"http://{proc.stdout.readline().split()[1]}/"
            rc, r, err = load("-c", "2", "-d", "3s", *(["--keep-going"] if keep_going else []), url)
        finally:
            stop(proc)
        assert r["requests"]["completed"] > 0 and r["errors"]["connect_refused"] > 0, r["errors"]
        accounted(r)
        if keep_going:
            assert rc == 0 and r["aborted"] is None, (rc, r["aborted"])
            assert r["duration_s"] == 3.0
        else:
            assert rc == 1 and "refused" in r["aborted"], (rc, r["aborted"])


def test_keep_going_against_nothing_counts_refused_until_the_end(load):
    port = free_port()
    rc, r, err = load("-c", "1", "-d", "1s", "--no-validate", "--keep-going", f"http://127.0.0.1:{port}/")
    assert r["aborted"] is None and r["requests"]["sent"] == 0, (rc, r["aborted"])
    assert nonzero(r["errors"]).keys() == {"connect_refused"}


def test_the_fine_series_has_every_point_and_adds_up_to_the_run(testserver, load):
    url = testserver("close-reused", "--close-after", "50")
    rc, r, err = load("-c", "4", "-t", "2", "-d", "1s", "--tick", "100ms", url)
    assert rc == 0, err
    ticks = r["ticks"]
    assert ticks["interval_ms"] == 100
    points = ticks["points"]
    assert [p["at_ms"] for p in points] == list(range(0, 1000, 100))
    assert sum(p["requests"] for p in points) == r["requests"]["completed"]
    errors = {}
    for p in points:
        assert all(n > 0 for n in p["errors"].values()), p["errors"]
        for name, n in p["errors"].items():
            errors[name] = errors.get(name, 0) + n
    assert errors == nonzero(r["errors"]) and errors.keys() == {"retryable"}
    # Every retryable close is the server's; so is every other connection it ended.
    assert sum(p["closed_by_server"] for p in points) >= errors["retryable"]
    assert sum(n for p in points for _, n in p["latency_us"]) == r["latency"]["total"]["count"]
    for p in points:
        values = [v for v, _ in p["latency_us"]]
        assert values == sorted(set(values))
    whole = engine.ticks_window(r, 0, 1000)
    assert whole["requests"] == r["requests"]["completed"] and whole["errors"] == errors
    # 2 significant digits against the run's 3: within 1% and a bucket.
    assert whole["p99_us"] == pytest.approx(r["latency"]["total"]["p99_us"], rel=0.02, abs=2)
    assert whole["max_us"] >= r["latency"]["total"]["max_us"]
    assert engine.ticks_window(r, 300, 400)["requests"] == points[3]["requests"]
    rc, r, err = load("-c", "1", "-n", "100", url)
    assert rc == 0 and r["ticks"] is None, err


@pytest.mark.parametrize("tick", ["5ms", "2s", "10.5ms", "soon"])
def test_a_tick_out_of_range_is_refused_in_one_line(load, tick):
    rc, r, err = load("--tick", tick, "http://127.0.0.1:1/")
    assert rc == 2 and r is None
    assert len(err.strip().splitlines()) == 1 and "--tick" in err, err


def test_a_goaways_unprocessed_streams_are_moved_and_its_close_counted_once(testserver, load):
    # Each connection's GOAWAY comes after its 3rd request, with a 4th stream open: that one was
    # never processed and goes again on a new connection, no error. The fine series counts each
    # connection's end once, at its GOAWAY, not again at its close.
    url = testserver("h2-goaway", "--goaway-after", "3")
    rc, r, err = load("--http2", "--streams", "4", "-c", "2", "-n", "300", "--tick", "100ms", url)
    assert rc == 0, err
    h2 = r["h2"]
    assert r["errors_total"] == 0 and r["requests"]["completed"] == 300, r["errors"]
    assert h2["goaway_streams_moved"] == h2["refused_streams"] > 0, h2
    assert sum(p["closed_by_server"] for p in r["ticks"]["points"]) == h2["goaways"], h2
    accounted(r)
