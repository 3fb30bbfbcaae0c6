"""The write-ups' own clients: their output parsed into the engine's report shape.

Parsers are checked on output captured from the Debian 12 tools (ab 2.3, wrk 4.1.0, h2load
1.52.0); each client is then run against a real nginx, pinned to the client CPU, for about a
second at most.
"""

import pytest
from conftest import CLIENT_CPU, FILES
from httpbench.load import tools
from httpbench.load.tools import ab, h2load, wrk
from httpbench.load.tools.process import ClientError, Level

# --------------------------------------------------------------------------- captured outputs

AB_KEEPALIVE = """\
This is ApacheBench, Version 2.3 <$Revision$>
Copyright 1996 Adam Twiss, Zeus Technology Ltd, http://www.zeustech.net/
Licensed to The Apache Software Foundation, http://www.apache.org/

Benchmarking 127.0.0.1 (be patient)


Server Software:        nginx/1.22.1
Server Hostname:        127.0.0.1
Server Port:            18089

Document Path:          /index.html
Document Length:        7 bytes

Concurrency Level:      10
Time taken for tests:   0.025 seconds
Complete requests:      2000
Failed requests:        0
Keep-Alive requests:    2000
Total transferred:      482000 bytes
HTML transferred:       14000 bytes
Requests per second:    79697.15 [#/sec] (mean)
Time per request:       0.125 [ms] (mean)
Time per request:       0.013 [ms] (mean, across all concurrent requests)
Transfer rate:          18756.85 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    0   0.0      0       0
Processing:     0    0   0.0      0       0
Waiting:        0    0   0.0      0       0
Total:          0    0   0.0      0       0

Percentage of the requests served within a certain time (ms)
  50%      0
  66%      0
  75%      0
  80%      0
  90%      0
  95%      0
  98%      0
  99%      0
 100%      0 (longest request)
"""

# Lines of the matching `-e` file (the real one has every percent from 0 to 100).
AB_CSV = """\
Percentage served,Time in ms
0,0.052
1,0.098
50,0.123
75,0.130
90,0.141
99,0.191
100,0.481
"""

AB_NOT_FOUND = """\
Concurrency Level:      10
Time taken for tests:   0.010 seconds
Complete requests:      200
Failed requests:        0
Non-2xx responses:      200
Total transferred:      60600 bytes
HTML transferred:       30600 bytes
Requests per second:    20372.82 [#/sec] (mean)
"""

# `ab -r -c 10 -t 1 -n 1000` against a port nobody listens on: ab calls it 83,724 requests/s.
AB_REFUSED = """\
Concurrency Level:      10
Time taken for tests:   0.012 seconds
Complete requests:      1000
Failed requests:        1500
   (Connect: 0, Receive: 1000, Length: 0, Exceptions: 500)
Total transferred:      0 bytes
HTML transferred:       0 bytes
Requests per second:    83724.05 [#/sec] (mean)
"""

WRK = """\
Running 1s test @ http://127.0.0.1:18089/index.html
  1 threads and 10 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   127.72us   63.63us   2.26ms   98.79%
    Req/Sec    79.33k     4.56k   86.57k    70.00%
  Latency Distribution
     50%  126.00us
     75%  133.00us
     90%  143.00us
     99%  185.00us
  78613 requests in 1.00s, 18.07MB read
Requests/sec:  78597.12
Transfer/sec:     18.06MB
"""

# Pipelined 8 deep, to a missing file: wrk's 99th percentile comes out as 0.00us.
WRK_PIPELINED_404 = """\
Running 1s test @ http://127.0.0.1:18089/missing
  1 threads and 20 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     0.90ms  506.35us   5.55ms   66.13%
    Req/Sec   116.11k    19.63k  137.57k    54.55%
  Latency Distribution
     50%    0.86ms
     75%    1.28ms
     90%    1.66ms
     99%    0.00us
  126541 requests in 1.10s, 37.17MB read
  Non-2xx or 3xx responses: 126541
Requests/sec: 115048.15
Transfer/sec:     33.79MB
"""

# The socket-errors line as wrk prints it (src/wrk.c), into the captured run above.
WRK_ERRORS = WRK.replace(
    "  78613 requests in 1.00s, 18.07MB read\n",
    "  78613 requests in 1.00s, 18.07MB read\n  Socket errors: connect 0, read 3, write 1, timeout 12\n",
)

H2LOAD = """\
starting benchmark...
spawning thread #0: 10 total client(s). Timing-based test with 0s of warm-up time and 1s of main duration for measurements.
Application protocol: http/1.1
Main benchmark duration is over for thread #0. Stopping all clients.
Stopped all clients for thread #0

finished in 1.00s, 75398.00 req/s, 17.33MB/s
requests: 75398 total, 75408 started, 75398 done, 75398 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 75398 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 17.33MB (18170918) total, 13.16MB (13798749) headers (space savings 0.00%), 515.45KB (527821) data
                     min         max         mean         sd        +/- sd
time for request:       68us      1.90ms       132us        46us    98.19%
time for connect:       11us        76us        48us        20us    70.00%
time to 1st byte:      330us       399us       363us        24us    60.00%
req/s           :    7535.51     7541.61     7538.51        1.77    70.00%
"""  # noqa: E501 (h2load's output as it printed it)

H2LOAD_REFUSED = """\
starting benchmark...
spawning thread #0: 4 total client(s). 100 total requests

finished in 352us, 0.00 req/s, 0B/s
requests: 100 total, 0 started, 0 done, 0 succeeded, 100 failed, 100 errored, 0 timeout
status codes: 0 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 0B (0) total, 0B (0) headers (space savings 0.00%), 0B (0) data
                     min         max         mean         sd        +/- sd
time for request:        0us         0us         0us         0us     0.00%
time for connect:        0us         0us         0us         0us     0.00%
time to 1st byte:        0us         0us         0us         0us     0.00%
req/s           :       0.00        0.00        0.00        0.00   100.00%
"""

# h2load 1.52.0 against `httpbench-testserver --mode status --status 503`: its manual says
# "failed" counts requests that failed "including HTTP level failures (non-successful HTTP status
# code)" and "errored" the same "except for HTTP level failures"; here every response is a 503,
# so failed is 20 and errored 0.
H2LOAD_503 = """\
starting benchmark...
spawning thread #0: 2 total client(s). 20 total requests
Application protocol: http/1.1
progress: 10% done
progress: 20% done
progress: 30% done
progress: 40% done
progress: 50% done
progress: 60% done
progress: 70% done
progress: 80% done
progress: 90% done
progress: 100% done

finished in 1.62ms, 12330.46 req/s, 746.57KB/s
requests: 20 total, 20 started, 20 done, 0 succeeded, 20 failed, 0 errored, 0 timeout
status codes: 0 2xx, 0 3xx, 0 4xx, 20 5xx
traffic: 1.21KB (1240) total, 300B (300) headers (space savings 0.00%), 140B (140) data
                     min         max         mean         sd        +/- sd
time for request:       35us       205us        68us        40us    85.00%
time for connect:      227us       555us       391us       232us   100.00%
time to 1st byte:      371us       761us       566us       275us   100.00%
req/s           :    7192.31     9435.40     8313.86     1586.11   100.00%
"""


# --------------------------------------------------------------------------- parsers


def test_ab_parser():
    r = ab.parse(AB_KEEPALIVE, AB_CSV)
    assert r["schema"] == "httpbench-load/1" and r["client"]["tool"] == "ab"
    assert r["requests"]["completed"] == 2000 and r["requests"]["per_second"] == pytest.approx(79697.15)
    assert r["requests"]["sent"] is None and r["duration_s"] == pytest.approx(0.025)
    assert r["errors_total"] == 0 and r["errors"]["receive"] == 0 and r["status"]["non_2xx"] == 0
    assert r["bytes"] == {"head": 468000, "body": 14000, "read": 482000, "written": None}
    t = r["latency"]["total"]
    assert (t["min_us"], t["p50_us"], t["p75_us"], t["p90_us"], t["p99_us"], t["max_us"]) == pytest.approx(
        (52, 123, 130, 141, 191, 481)
    )
    assert t["mean_us"] is None and t["p99_9_us"] is None  # ab gives no usable mean


def test_ab_parser_without_csv_gives_no_percentiles():
    # The printed table is whole milliseconds: "0" would be a lie about sub-millisecond times.
    t = ab.parse(AB_KEEPALIVE)["latency"]["total"]
    assert all(v is None for v in t.values())


def test_ab_parser_counts_non_2xx():
    r = ab.parse(AB_NOT_FOUND)
    assert r["status"]["non_2xx"] == 200 and r["status"]["2xx"] is None and r["errors_total"] == 0


def test_ab_parser_does_not_count_failed_receives_as_completed():
    r = ab.parse(AB_REFUSED)
    assert r["requests"]["completed"] == 0 and r["requests"]["per_second"] == 0
    assert r["requests"]["failed"] == 1500 and r["errors_total"] == 1500
    assert r["errors"] == {"connect": 0, "receive": 1000, "length": 0, "exceptions": 500, "write": 0}


def test_wrk_parser():
    r = wrk.parse(WRK)
    assert r["requests"]["completed"] == 78613 and r["requests"]["per_second"] == pytest.approx(78597.12)
    assert r["duration_s"] == pytest.approx(1.0) and r["errors_total"] == 0
    assert r["status"]["non_2xx_3xx"] == 0 and r["bytes"]["read"] is None
    t = r["latency"]["total"]
    assert (t["mean_us"], t["stdev_us"], t["max_us"]) == pytest.approx((127.72, 63.63, 2260))
    assert (t["p50_us"], t["p75_us"], t["p90_us"], t["p99_us"]) == pytest.approx((126, 133, 143, 185))
    assert t["min_us"] is None and t["count"] is None


def test_wrk_parser_pipelined_not_found():
    r = wrk.parse(WRK_PIPELINED_404)
    assert r["status"]["non_2xx_3xx"] == 126541 and r["duration_s"] == pytest.approx(1.1)
    t = r["latency"]["total"]
    assert t["p50_us"] == pytest.approx(860) and t["p99_us"] is None  # wrk's "0.00us"


def test_wrk_parser_socket_errors():
    r = wrk.parse(WRK_ERRORS)
    assert r["errors"] == {"connect": 0, "read": 3, "write": 1, "timeout": 12} and r["errors_total"] == 16


def test_h2load_parser():
    r = h2load.parse(H2LOAD)
    req = r["requests"]
    assert (req["sent"], req["completed"], req["failed"]) == (75408, 75398, 0)
    assert req["per_second"] == pytest.approx(75398) and r["duration_s"] == pytest.approx(1.0)
    assert r["status"] == {"1xx": None, "2xx": 75398, "3xx": 0, "4xx": 0, "5xx": 0, "other": None}
    assert r["bytes"] == {"head": 13798749, "body": 527821, "read": 18170918, "written": None}
    t = r["latency"]["total"]
    assert (t["min_us"], t["max_us"], t["mean_us"], t["stdev_us"]) == pytest.approx((68, 1900, 132, 46))
    assert t["p50_us"] is None
    assert r["latency"]["connect"]["mean_us"] == pytest.approx(48)
    assert r["latency"]["first_byte"]["count"] is None  # h2load's is per connection, not per request


def test_h2load_parser_refused():
    r = h2load.parse(H2LOAD_REFUSED)
    assert r["requests"]["completed"] == 0 and r["errors_total"] == 100
    assert r["duration_s"] == pytest.approx(352e-6)
    assert r["latency"]["total"]["mean_us"] is None  # its zeros are not times


def test_h2load_parser_failing_status_is_not_an_error():
    r = h2load.parse(H2LOAD_503)
    assert r["status"]["5xx"] == 20 and r["requests"]["completed"] == 20
    # The 503s are in "failed" already; they are statuses, not transport errors.
    assert r["errors"] == {"failed": 20, "errored": 0, "timeout": 0}
    assert r["errors_total"] == 0 and r["requests"]["failed"] == 0


# --------------------------------------------------------------------------- command lines


def level(url, connections, requests, seconds, keep_alive, pipeline=1, cpus=1) -> Level:
    """A level as tools.run hands it to a tool, pinned to `cpus` CPUs."""
    return Level(url, connections, requests, seconds, keep_alive, tuple(range(cpus)), pipeline, 60.0)


def test_ab_command_lines():
    args = ab.argv(level("http://h:1", 10, None, 2.5, False), "p.csv")
    # -n after -t (else ab stops at 50,000), whole seconds rounded up, no -k: keep-alive off.
    assert args.index("-n") > args.index("-t") and args[args.index("-t") + 1] == "3"
    assert "-k" not in args and args[-1] == "http://h:1/"
    assert "-k" in ab.argv(level("http://h:1/", 10, 100, None, True), "p.csv")
    with pytest.raises(ClientError, match="-c 10 cannot exceed -n 5"):
        ab.argv(level("http://h:1/", 10, 5, None, True), "p.csv")
    with pytest.raises(ClientError, match="pipeline"):
        ab.argv(level("http://h:1/", 10, 100, None, True, pipeline=4), "p.csv")


def test_wrk_command_lines():
    assert wrk.argv(level("http://h:1/", 2, None, 0.4, True, cpus=4), None) == [
        "wrk",
        "-t",
        "2",
        "-c",
        "2",
        "-d",
        "1s",
        "--latency",
        "http://h:1/",
    ]
    with pytest.raises(ClientError, match="keep-alive off"):
        wrk.argv(level("http://h:1/", 10, None, 1, False), None)
    with pytest.raises(ClientError, match="no request budget"):
        wrk.argv(level("http://h:1/", 10, 1000, None, True), None)


def test_h2load_command_lines():
    args = h2load.argv(level("http://h:1/", 10, None, 1.5, True, pipeline=16))
    assert args[:2] == ["h2load", "--h1"] and args[args.index("-m") + 1] == "16"
    assert args[args.index("-D") + 1] == "1500ms"
    assert "-n" in h2load.argv(level("http://h:1/", 10, 100, None, True))
    with pytest.raises(ClientError, match="keep-alive off"):
        h2load.argv(level("http://h:1/", 10, 100, None, False))
    with pytest.raises(ClientError, match="-n 5 must be at least -c 10"):
        h2load.argv(level("http://h:1/", 10, 5, None, True))


def test_dispatcher_refuses_bad_input():
    with pytest.raises(ClientError, match="unknown client"):
        tools.run("siege", "http://h:1/", 1, 10, None, True, [])
    with pytest.raises(ClientError, match="exactly one budget"):
        tools.run("ab", "http://h:1/", 1, 10, 1.0, True, [])


# --------------------------------------------------------------------------- against nginx


def _check(r: dict, tool: str) -> None:
    assert r["requests"]["completed"] > 0 and r["requests"]["per_second"] > 0, r
    assert r["errors_total"] == 0 and r["aborted"] is None
    c = r["client"]
    assert c["tool"] == tool and c["version"] and c["argv"][:3] == ["taskset", "-c", str(CLIENT_CPU)]
    assert c["user_s"] + c["sys_s"] > 0 and c["wall_s"] > 0


@pytest.mark.parametrize(
    "client, budget_requests, budget_seconds, pipeline",
    [
        ("ab", None, 1.0, 1),
        ("wrk", None, 1.0, 1),
        ("wrk", None, 1.0, 8),
        ("h2load", None, 0.5, 1),
        ("h2load", 2000, None, 4),
    ],
)
def test_client_against_nginx(nginx, client, budget_requests, budget_seconds, pipeline):
    url, _ = nginx(FILES, access_log=False)
    r = tools.run(client, url + "index.html", 10, budget_requests, budget_seconds, True, [CLIENT_CPU], pipeline)
    _check(r, client)
    if budget_requests:
        assert r["requests"]["completed"] == budget_requests


@pytest.mark.parametrize("keep_alive", [True, False])
def test_ab_request_budget_is_exact(nginx, keep_alive):
    url, log = nginx(FILES)
    r = tools.run("ab", url + "index.html", 4, 1000, None, keep_alive, [CLIENT_CPU])
    _check(r, "ab")
    assert r["requests"]["completed"] == 1000 and r["status"]["non_2xx"] == 0
    from conftest import log_lines

    connections = {line.split()[0] for line in log_lines(log)}
    # Without -k, ab opens a connection per request; with it, a handful serve them all.
    assert len(connections) == 1000 if not keep_alive else len(connections) <= 10


def test_a_client_past_its_time_limit_is_stopped(nginx):
    url, _ = nginx(FILES, access_log=False)
    r = tools.run("ab", url + "index.html", 4, None, 30, True, [CLIENT_CPU], timeout=1.0)
    # ab prints what it measured when interrupted; the report says it was cut short.
    assert r["aborted"] and r["requests"]["completed"] > 0 and r["client"]["wall_s"] < 10
