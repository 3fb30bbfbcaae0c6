"""TLS faults through the engine: the purpose-built server's TLS modes (docs/DESIGN-engine.md, "The
suite's own servers over TLS") and a plain-HTTP server behind an https:// URL, each loaded by
`httpbench-load` (on io_uring and on epoll) and by the Python engine module. Each fault lands in
its error class, the run ends within its timeouts, nothing panics, and every request is accounted
for. One server per mode for the module; every load targets 127.0.0.1 and is bounded by -d and a
subprocess timeout."""

import json
import subprocess
import time

import pytest
from conftest import Testservers, accounted, binary

CONNECT_TIMEOUT, REQUEST_TIMEOUT, DURATION = 0.3, 1.0, 0.5
# However a fault ends, a run is over within its duration, both timeouts and the engine's second
# of grace for what is in flight; the rest is slack for a busy machine.
BOUND_S = DURATION + CONNECT_TIMEOUT + REQUEST_TIMEOUT + 1 + 5

# The fault, the server (a testserver mode; "plain" is mode ok behind an https:// URL), and the
# error classes a run against it must show (empty: none at all).
FAULTS = {
    "an alert mid-handshake": ("tls-alert", {"tls_handshake"}),
    "garbage instead of a ServerHello": ("tls-garbage", {"tls_handshake"}),
    "a stalled handshake": ("tls-stall", {"tls_handshake"}),
    "a close without close_notify inside a body": ("tls-short-body", {"tls_protocol"}),
    "a plain-HTTP server behind an https URL": ("plain", {"tls_handshake"}),
    "a whole response, then a close without close_notify": ("tls-no-close-notify", set()),
}


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    """Each fault's https:// URL, and the CA that verifies the servers that finish a handshake."""
    started = Testservers(tmp_path_factory.mktemp("tls-faults"))
    try:
        urls = {mode: started(mode) for mode, _ in FAULTS.values() if mode != "plain"}
        urls["plain"] = started("ok").replace("http://", "https://")
        urls["tls-data-after-close-notify"] = started("tls-data-after-close-notify")
        yield urls, started.ca
    finally:
        started.stop()


def through_httpbench_load(url: str, ca, io: str) -> dict:
    done = subprocess.run(
        [
            str(binary("httpbench-load")),
            "--json", "-d", f"{DURATION}s", "-c", "2", "--no-validate", "--cacert", str(ca), "--io", io,
            "--max-errors", "100%",  # the faults fail requests: where they land is the test
            "--connect-timeout", f"{CONNECT_TIMEOUT}s", "--timeout", f"{REQUEST_TIMEOUT}s", url,
        ],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "panicked" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), done.stderr  # 1: a run that could not go on says so
    return json.loads(done.stdout)


def through_engine_module(url: str, ca, io: str) -> dict:
    from httpbench.load import engine

    spec = {
        "urls": [url], "connections": 2, "stop": {"duration": DURATION}, "validate": False, "io": io,
        "connect_timeout": CONNECT_TIMEOUT, "request_timeout": REQUEST_TIMEOUT, "tls": {"cacert": str(ca)},
    }  # fmt: skip
    return engine.run(spec)


FRONTS = {
    "httpbench-load-io_uring": (through_httpbench_load, "io-uring"),
    "httpbench-load-epoll": (through_httpbench_load, "epoll"),
    "engine-module": (through_engine_module, "auto"),
}


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("fault", FAULTS)
def test_a_tls_fault_lands_in_its_class_and_ends_in_time(faults, fault, front):
    urls, ca = faults
    mode, classes = FAULTS[fault]
    run, io = FRONTS[front]
    started = time.monotonic()
    r = run(urls[mode], ca, io)
    assert time.monotonic() - started < BOUND_S
    assert {name for name, count in r["errors"].items() if count} == classes, r["errors"]
    accounted(r)
    if classes <= {"tls_handshake"} and classes:
        # No handshake finished: no request could be sent.
        assert r["requests"]["sent"] == 0 and r["tls"]["handshakes_full"] == 0, r["requests"]
    elif classes:
        assert r["requests"]["completed"] == 0 and r["requests"]["failed"] > 0, r["requests"]
    else:
        # Every connection carries one whole answer and ends: each is completed, none failed.
        q = r["requests"]
        assert q["completed"] > 0 and q["failed"] == 0 and r["status"]["2xx"] == q["completed"], q
        assert r["tls"]["verified"] and r["tls"]["handshakes_full"] + r["tls"]["handshakes_resumed"] > 0


@pytest.mark.parametrize("fault", [fault for fault, (_, classes) in FAULTS.items() if classes])
def test_with_validation_a_tls_fault_is_one_line_and_exit_2(faults, fault):
    urls, ca = faults
    mode, _ = FAULTS[fault]
    done = subprocess.run(
        [
            str(binary("httpbench-load")),
            "-n", "10", "-c", "2", "--cacert", str(ca), "--connect-timeout", f"{CONNECT_TIMEOUT}s",
            "--timeout", f"{REQUEST_TIMEOUT}s", urls[mode],
        ],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("httpbench-load: "), done.stderr


def test_data_after_close_notify_is_ignored_and_the_connection_replaced(faults):
    """A server that says close_notify and keeps talking on an open connection: its later bytes
    are ignored (RFC 8446 6.1) and the close_notify ends the connection as a FIN would, so each
    connection carries its one answer and is replaced; none waits for its timeout."""
    urls, ca = faults
    started = time.monotonic()
    done = subprocess.run(
        [
            str(binary("httpbench-load")),
            "--json", "-n", "6", "-c", "2", "--no-validate", "--cacert", str(ca),
            "--connect-timeout", f"{CONNECT_TIMEOUT}s", "--timeout", f"{REQUEST_TIMEOUT}s",
            urls["tls-data-after-close-notify"],
        ],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert time.monotonic() - started < BOUND_S
    assert "panicked" not in done.stderr and done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    accounted(r)
    assert r["errors_total"] == 0, {k: v for k, v in r["errors"].items() if v}
    assert r["requests"]["completed"] == 6 and r["status"]["2xx"] == 6, r["requests"]
