"""HTTP/2 faults through the engine: the purpose-built server's h2-* modes (docs/DESIGN-engine.md,
"Test server"), each loaded by `httpbench-load --http2` with a few streams per connection. Each
fault lands in its place in the report (an error class, `h2`'s counts), the run ends within its
timeouts, nothing panics, and every request is accounted for. One server per mode for the module
(h2c by prior knowledge; one over TLS with ALPN h2); every load targets 127.0.0.1 and is bounded
by -n, the timeouts and a subprocess timeout.

`h2-data-over-window` is left out: our client grants 2^30-1 and opens its windows as it reads,
so whether the server's extra byte is over the window is a race (see the mode's doc)."""

import json
import subprocess
import time

import pytest
from conftest import Testservers, accounted, binary

# Two connections of four streams: REQUESTS fill them once.
CONNECT_TIMEOUT, REQUEST_TIMEOUT, REQUESTS = 0.3, 0.5, 8
# However a fault ends, a run is over within its timeouts; the rest is slack for a busy machine.
BOUND_S = CONNECT_TIMEOUT + REQUEST_TIMEOUT + 1 + 5


def engine_speaks_http2() -> bool:
    """An engine without --http2, or one that still refuses HTTP/2 runs (issue 15 under way)."""
    load = binary("httpbench-load")
    if "--http2" not in subprocess.run([str(load), "--help"], capture_output=True, text=True).stdout:
        return False
    # Port 9 on loopback: refused at once, if the engine gets as far as connecting at all.
    args = [str(load), "--http2", "-n", "1", "-c", "1", "--no-validate", "--connect-timeout", "0.2s"]
    done = subprocess.run([*args, "http://127.0.0.1:9/"], capture_output=True, text=True, timeout=30)
    return "cannot run yet" not in done.stderr


pytestmark = pytest.mark.skipif(not engine_speaks_http2(), reason="httpbench-load does not speak HTTP/2 yet")

# The fault: the server's mode, the load's extra arguments, the error classes the run must show
# (exactly; empty: none), and how many of the REQUESTS complete ("all", "some", "none").
FAULTS = {
    "GOAWAY NO_ERROR mid-load": ("h2-goaway", (), set(), "all"),
    # Streams above its last id go again in an open loop too, on the next connection: the server
    # ended the connection, not the request. The rate has every stream due at once.
    "GOAWAY NO_ERROR mid-load in an open loop": ("h2-goaway", ("-R", "1000000"), set(), "all"),
    "RST_STREAM INTERNAL_ERROR on every 3rd stream": ("h2-rst-stream", (), {"h2_stream_reset"}, "some"),
    # Sent again, so no error: h2_refused_stream counts only those that could not be.
    "REFUSED_STREAM on every 3rd stream": ("h2-refuse-stream", (), set(), "all"),
    # An open loop's refused request had its moment: it fails rather than go again late.
    "REFUSED_STREAM in an open loop": ("h2-refuse-stream", ("-R", "400"), {"h2_refused_stream"}, "some"),
    "SETTINGS_MAX_CONCURRENT_STREAMS 1": ("h2-one-stream", (), set(), "all"),
    "HEADERS, then never the DATA": ("h2-no-data", (), {"timeout"}, "none"),
    "a window of 0 for a POST body": ("h2-zero-window", ("-m", "POST", "--body", "hello"), {"timeout"}, "none"),
    "a WINDOW_UPDATE past 2^31-1": ("h2-window-overflow", (), {"h2_protocol"}, "none"),
    "response headers over CONTINUATION frames": ("h2-continuation", (), set(), "all"),
    "padded HEADERS and DATA": ("h2-padded", (), set(), "all"),
    "a header list over our SETTINGS_MAX_HEADER_LIST_SIZE": ("h2-big-headers", (), {"h2_protocol"}, "none"),
    "frames of an unknown type": ("h2-unknown-frame", (), set(), "all"),
    # The stream it names as its last was cut off: h2_protocol. Those above it were never
    # processed (RFC 9113 6.8, whatever the code): moved, and each fails in turn as the next
    # connection's first.
    "GOAWAY PROTOCOL_ERROR": ("h2-goaway-error", (), {"h2_protocol"}, "none"),
    # Apache's graceful restart: a stream that crossed the shutdown notice gets a second GOAWAY
    # naming the stream before it, with an undefined error code (RFC 9113 7: no special
    # behaviour). Never processed, it is moved like any GOAWAY's, no error, in both loops.
    "GOAWAY with an undefined code above the last stream": ("h2-goaway-unprocessed", (), set(), "all"),
    "GOAWAY with an undefined code above the last stream, open loop": (
        "h2-goaway-unprocessed",
        ("-R", "1000000"),
        set(),
        "all",
    ),
    "a PING from the server": ("h2-ping", (), set(), "all"),
    "a frame over our SETTINGS_MAX_FRAME_SIZE": ("h2-big-frame", (), {"h2_protocol"}, "none"),
    "RST_STREAM over TLS with ALPN h2": ("tls:h2-rst-stream", (), {"h2_stream_reset"}, "some"),
}
# The GOAWAY's last stream is each connection's 3rd: its 4th stream goes again on a new one.
SERVER_OPTIONS = {"h2-goaway": ("--goaway-after", "3"), "h2-goaway-unprocessed": ("--goaway-after", "3")}


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    """Each mode's URL (https:// for the TLS one), and the CA that verifies the TLS one."""
    started = Testservers(tmp_path_factory.mktemp("h2-faults"))
    try:
        urls = {}
        for mode in {mode for mode, *_ in FAULTS.values()}:
            plain = mode.removeprefix("tls:")
            urls[mode] = started(plain, *SERVER_OPTIONS.get(plain, ()), tls=plain != mode)
        yield urls, started.ca
    finally:
        started.stop()


def load(url: str, ca, *extra: str) -> dict:
    done = subprocess.run(
        [
            str(binary("httpbench-load")),
            "--json", "--http2", "--streams", "4", "-c", "2", "-n", str(REQUESTS), "--no-validate",
            "--max-errors", "100%",  # the faults fail requests: where they land is the test
            "--connect-timeout", f"{CONNECT_TIMEOUT}s", "--timeout", f"{REQUEST_TIMEOUT}s",
            *(("--cacert", str(ca)) if url.startswith("https:") else ()), *extra, url,
        ],
        capture_output=True, text=True, timeout=3 * BOUND_S,
    )  # fmt: skip
    assert "panicked" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), done.stderr  # 1: a run that could not go on says so
    return json.loads(done.stdout)


@pytest.mark.parametrize("fault", FAULTS)
def test_an_h2_fault_lands_in_its_place_and_ends_in_time(faults, fault):
    urls, ca = faults
    mode, extra, classes, completed = FAULTS[fault]
    started = time.monotonic()
    r = load(urls[mode], ca, *extra)
    assert time.monotonic() - started < BOUND_S
    assert r["protocol"] == "h2", r["protocol"]
    errors = {name: count for name, count in r["errors"].items() if count}
    assert set(errors) == classes, errors
    q, h2 = r["requests"], r["h2"]
    accounted(r)
    done = {"all": q["completed"] == REQUESTS, "some": 0 < q["completed"] < REQUESTS, "none": q["completed"] == 0}
    assert done[completed], q
    assert r["status"]["2xx"] == q["completed"], r["status"]
    if mode.startswith("h2-goaway"):
        assert h2["goaways"] >= 2 and h2["refused_streams"] >= 2, h2
        # Never processed (RFC 9113 6.8): every one moved to a new connection, none an error.
        assert h2["goaway_streams_moved"] == h2["refused_streams"], h2
    if mode.endswith("h2-rst-stream"):
        assert h2["resets"].get("INTERNAL_ERROR") == r["errors"]["h2_stream_reset"], h2
    if mode == "h2-refuse-stream":
        assert h2["refused_streams"] == h2["resets"].get("REFUSED_STREAM") > 0, h2
        assert r["errors"].get("h2_refused_stream", 0) in (0, h2["refused_streams"]), r["errors"]
    if mode == "h2-one-stream":
        assert h2["streams_granted"] == 1 and h2["streams_requested"] == 4, h2
    if mode == "h2-padded":
        # Padding is framing, not body: 20 bytes of it per answer, 10 per header block.
        assert h2["frame_bytes"] >= REQUESTS * 30, h2


def test_a_server_that_refuses_every_stream_ends_the_run(tmp_path):
    # Refused streams go again, and neither they nor the connections they go on are progress:
    # the run ends when no stream was answered for its timeouts, and says why.
    started = Testservers(tmp_path)
    try:
        url = started("h2-refuse-stream", "--every", "1")
        begun = time.monotonic()
        r = load(url, None)
    finally:
        started.stop()
    assert time.monotonic() - begun < BOUND_S
    assert r["requests"]["completed"] == 0 and r["h2"]["refused_streams"] > 0, r["h2"]
    assert "no stream answered" in r["aborted"] and "refused every stream" in r["aborted"], r["aborted"]


def test_an_http1_server_ends_an_h2c_run_at_once_saying_so(tmp_path):
    # Its answer to our preface is no frame: one h2_protocol error per connection, no request
    # failed, and the run ends saying why (the validation request says the same, as a refusal).
    started = Testservers(tmp_path)
    try:
        url = started("ok")
        r = load(url, None)
        checked = subprocess.run(
            [str(binary("httpbench-load")), "--http2", "-n", "1", "-c", "1", "--timeout", f"{REQUEST_TIMEOUT}s", url],
            capture_output=True, text=True, timeout=3 * BOUND_S,
        )  # fmt: skip
    finally:
        started.stop()
    said = "the server answered in HTTP/1.1: it does not speak h2c by prior knowledge"
    assert said in r["aborted"], r["aborted"]
    assert "--" not in r["aborted"], "the engine names no flag (a plan user reads it too)"
    q = r["requests"]
    assert q["failed"] == q["completed"] == 0 and q["sent"] == q["in_flight"], q
    assert r["errors"]["h2_protocol"] >= 1, r["errors"]
    assert checked.returncode == 2 and said in checked.stderr, checked.stderr
