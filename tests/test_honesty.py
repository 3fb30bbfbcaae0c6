"""Honesty checks on synthetic measurements, and once on a real client-bound level."""

from typing import Optional

import pytest
from conftest import CLIENT_CPU, FILES, spinning
from httpbench.judge import honesty
from httpbench.load import engine
from httpbench.load.report import tool_report


def measurement(
    rps: float = 10_000,
    mean_us: Optional[float] = 1_000,
    busy: Optional[float] = 0.5,
    user: float = 0.2,
    system: float = 0.2,
    duration: float = 1.0,
    open_loop=None,
    **client,
) -> dict:
    """A report (httpbench-load/1) with the fields the checks read set, the rest unknown."""
    report = tool_report("engine")
    report.update(duration_s=duration, open_loop=open_loop)
    report["requests"]["per_second"] = rps
    report["latency"]["total"]["mean_us"] = mean_us
    report["client"].update(busy_share=busy, user_s=user, sys_s=system, **client)
    return report


# --------------------------------------------------------------------------- client saturated


def test_busy_engine_thread_is_saturation():
    flag = honesty.client_saturated([measurement(), measurement(busy=0.95)], None, 1)
    assert flag.kind == "client_saturated" and "round 2" in flag.reason and "95.0% busy" in flag.reason


def test_an_engine_thread_starved_of_its_cpu_is_saturation():
    starved = measurement(
        busy=None, threads=[{"busy_share": 0.2, "waiting_share": 0.1}, {"busy_share": 0.5, "waiting_share": 0.45}]
    )
    flag = honesty.client_saturated([starved], None, 2)
    assert "busiest client thread 50.0% busy and 45.0% waiting for its CPU" in flag.reason
    # A little waiting that tips a thread over the limit is named too.
    tipped = measurement(busy=None, threads=[{"busy_share": 0.89, "waiting_share": 0.02}])
    assert (
        "busiest client thread 89.0% busy and 2.0% waiting for its CPU"
        in honesty.client_saturated([tipped], None, 1).reason
    )
    calm = measurement(busy=None, threads=[{"busy_share": 0.5, "waiting_share": 0.3}])
    assert honesty.client_saturated([calm], None, 1) is None


def test_client_cpu_at_its_cores_is_saturation():
    busy_cpu = measurement(busy=None, user=0.6, system=1.35, duration=1.0)
    assert "1.95 of the 2 core(s)" in honesty.client_saturated([busy_cpu], None, 2).reason
    assert honesty.client_saturated([measurement(busy=None, user=0.5, system=0.5)], None, 2) is None


def test_a_single_threaded_tool_can_only_use_one_core():
    ab_like = measurement(busy=None, user=0.1, system=0.9, duration=1.0, wall_s=1.02, thread_count=1)
    assert "of the 1 core(s)" in honesty.client_saturated([ab_like], None, 2).reason


def test_throughput_near_the_client_ceiling_is_saturation():
    flag = honesty.client_saturated([measurement(rps=92_000), measurement(rps=94_000)], 100_000, 1)
    assert "93,000 req/s is within 10% of the client ceiling (100,000 req/s" in flag.reason
    assert honesty.client_saturated([measurement(rps=80_000)], 100_000, 1) is None


def test_an_idle_client_is_not_saturated():
    assert honesty.client_saturated([measurement(), measurement()], None, 1) is None
    assert honesty.client_saturated([measurement(rps=5.0, busy=None, user=None, system=None)], None, 1) is None


# --------------------------------------------------------------------------- Little's law


def test_littles_law_holds():
    # 10,000 req/s x 1 ms = 10 requests in flight; 10.9 is within 10%
    assert honesty.littles_law([measurement()], 10) is None
    assert honesty.littles_law([measurement(mean_us=1_090)], 10) is None


def test_littles_law_broken():
    flag = honesty.littles_law([measurement(), measurement(mean_us=500)], 10)
    assert flag.kind == "littles_law"
    assert "round 2: 10 requests in flight" in flag.reason and "= 5.0 (off by 50.0%)" in flag.reason


def test_the_engines_handling_delay_is_part_of_the_cycle():
    # Latency 700 us from the kernel's arrival stamps, plus 300 us before the engine handled
    # each response: 10,000 req/s x 1 ms = 10 in flight.
    handled_late = measurement(mean_us=700)
    handled_late["client"]["handling_delay_us"] = 300.0
    assert honesty.littles_law([handled_late], 10) is None
    assert honesty.littles_law([measurement(mean_us=700)], 10).kind == "littles_law"


def test_requests_unanswered_at_the_end_count_for_the_time_they_waited():
    # 4 of 10 connections starved for the whole second: 6,000 req/s x 1 ms = 6 in flight, plus
    # 4 requests that waited 1 s each over a 1 s round.
    starved = measurement(rps=6_000)
    starved["requests"].update(in_flight=10, in_flight_age_mean_us=400_500.0)
    assert honesty.littles_law([starved], 10) is None
    flag = honesty.littles_law([measurement(rps=6_000)], 10)
    assert "= 6.0 (off by 40.0%)" in flag.reason
    starved["requests"]["in_flight_age_mean_us"] = 100_500.0
    assert "x 1,000 us + 1.0 unanswered at the end = 7.0" in honesty.littles_law([starved], 10).reason


def test_littles_law_does_not_apply():
    assert honesty.littles_law([measurement(mean_us=500, open_loop={"target_rate": 1000})], 10) is None
    assert honesty.littles_law([measurement(mean_us=None)], 10) is None  # a tool without a mean


def test_over_http2_each_connection_keeps_its_streams_in_flight():
    # 10 connections x 10 streams: 10,000 req/s x 10 ms = 100 requests in flight, as asked.
    def h2(mean_us: float, granted) -> dict:
        m = measurement(mean_us=mean_us)
        m["h2"] = {"streams_requested": 10, "streams_granted": granted, "goaways": 0, "resets": {},
                   "refused_streams": 0, "frame_bytes": 0}  # fmt: skip
        return m

    assert honesty.requests_in_flight(10, 1, h2(10_000, None)) == 100
    assert honesty.littles_law([h2(10_000, None)], honesty.requests_in_flight(10, 1, h2(10_000, None))) is None
    flag = honesty.littles_law([h2(1_000, 128)], honesty.requests_in_flight(10, 1, h2(1_000, 128)))
    assert "100 requests in flight" in flag.reason and "= 10.0 (off by 90.0%)" in flag.reason
    # A server that grants 4 streams keeps 4 of each connection's in flight; 40 in all.
    assert honesty.requests_in_flight(10, 1, h2(4_000, 4)) == 40
    assert honesty.littles_law([h2(4_000, 4)], honesty.requests_in_flight(10, 1, h2(4_000, 4))) is None
    # HTTP/1.1: each connection's pipeline.
    assert honesty.requests_in_flight(10, 4, measurement()) == 40


# --------------------------------------------------------------------------- noise and rounds


def test_noisy():
    assert honesty.noisy([100, 101, 99]) is None
    assert honesty.noisy([100]) is None
    flag = honesty.noisy([100, 120, 80])  # stdev 20, cv 20%
    assert flag.kind == "noisy"
    assert flag.reason == "rounds vary by 20.0% (coefficient of variation > 5%): 80 to 120 req/s"


def test_auto_rounds():
    assert honesty.needs_more_rounds([100], 10)  # at least 3 rounds
    assert honesty.needs_more_rounds([100, 100], 10)
    assert not honesty.needs_more_rounds([100, 101, 99], 10)  # cv 1% < 2.5%
    assert honesty.needs_more_rounds([100, 104, 96], 10)  # cv 4%
    assert not honesty.needs_more_rounds([100, 120, 80] * 3 + [100], 10)  # the cap wins
    assert not honesty.needs_more_rounds([100, 120], 2)  # even before 3 rounds


# --------------------------------------------------------------------------- a real client-bound level


def test_a_client_bound_level_is_flagged(nginx):
    """The engine on one CPU, one thread, 100 connections without keep-alive, against nginx:
    connecting and closing costs the client more than the server (bench/RESULTS.md: ~26 us of
    client CPU per request), so the client is the limit; measured busy share 0.96-0.98.
    (Pipelining, the obvious choice, does not do it: the engine then spends less per request
    than nginx, which saturates first at ~0.7 client busy share.)

    Other work on the client CPU of a shared machine turns busy time into time waiting for the
    CPU, which counts too; a miss is retried all the same, up to three 1-second levels."""
    url, _ = nginx(FILES, access_log=False)
    spec = {
        "urls": [url + "index.html"],
        "connections": 100,
        "threads": 1,
        "cpus": [CLIENT_CPU],
        "keep_alive": False,
        "stop": {"duration": 1.0},
    }
    seen = []
    for _ in range(3):
        report = engine.run(spec)
        flag = honesty.client_saturated([report], None, 1)
        if flag:
            assert flag.kind == "client_saturated" and "busy" in flag.reason
            return
        seen.append(report["client"]["busy_share"])
    pytest.fail(f"a client-bound level was not flagged; busy shares {seen}")


def test_a_client_starved_by_another_process_is_flagged(nginx):
    """A process spinning on the client's CPU leaves the engine about half of it: its thread is
    then busy about half the time and waiting for its CPU most of the rest, and the level is
    client-bound even though the engine's own CPU time says 50%."""
    url, _ = nginx(FILES, access_log=False)
    with spinning(CLIENT_CPU, seconds=20):
        report = engine.run(
            {
                "urls": [url + "index.html"],
                "connections": 100,
                "threads": 1,
                "cpus": [CLIENT_CPU],
                "keep_alive": False,
                "stop": {"duration": 1.5},
            }
        )
    client = report["client"]
    assert client["waiting_share"] > 0.2, client
    flag = honesty.client_saturated([report], None, 1)
    assert flag and "waiting for its CPU" in flag.reason, (client, flag)


def test_without_keep_alive_connecting_and_the_handshake_are_part_of_the_cycle():
    # 5,000 req/s, each on a connection of its own: 1 ms of response, 0.4 ms of connect and
    # 0.6 ms of TLS handshake before it = 2 ms a cycle, 10 in flight.
    closing = measurement(rps=5_000)
    closing["latency"]["connect"].update(count=5_000, mean_us=400.0)
    closing["latency"]["tls_handshake"] = dict(closing["latency"]["connect"], mean_us=600.0)
    assert honesty.littles_law([closing], 10) is None
    assert "= 5.0 (off by 50.0%)" in honesty.littles_law([measurement(rps=5_000)], 10).reason
    closing["latency"]["tls_handshake"] = None  # http://: a connect only, 1.4 ms a cycle
    assert "x 1,000 us + 2.0 connecting = 7.0" in honesty.littles_law([closing], 10).reason
