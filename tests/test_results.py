"""A level read back from its rounds: its counts and latency from the one report the engine merges
the rounds into, one after another; its requests/s, noise and series round by round."""

import copy

from httpbench import results
from httpbench.judge import honesty
from httpbench.load import engine
from httpbench.load import report as load_report
from httpbench.load.tools import wrk
from test_clients import WRK, WRK_ERRORS, WRK_PIPELINED_404
from test_load_report import older_report


def engine_round(n: int) -> dict:
    """The n-th round of an HTTP/2 level over TLS, as the sweep stores it: n of each count."""
    r = older_report()
    r["duration_s"] = float(n)
    r["requests"].update(completed=3 * n, per_second=100.0 + n)
    r["status"].update({"2xx": 3 * n, "4xx": n, "other": n})
    r["errors"], r["errors_total"] = {"timeout": n, "reset": 0}, n
    r["latency"]["total"] = engine.merge_latency([])  # a histogram, holding no request
    r["h2"] = {
        "streams_requested": 8,
        "streams_granted": 100 // n,
        "goaways": n,
        "resets": {"CANCEL": n},
        "refused_streams": n,
        "frame_bytes": 9,
    }
    r["tls"] = {
        "version": "1.3",
        "cipher": None,
        "group": None,
        "alpn": "h2",
        "verified": True,
        "handshakes_full": n,
        "handshakes_resumed": 10 * n,
    }
    r["flags"] = [{"kind": "contended", "reason": f"round {n}"}]
    return load_report.stored_round(r)


def test_a_levels_counts_are_its_rounds_added_and_its_duration_theirs_together():
    rounds = [engine_round(1), engine_round(2)]
    level = results._level(20, rounds)
    assert (level.completed, level.errors, level.errors_by_class, level.non_2xx) == (9, 3, {"timeout": 3}, 6)
    # Rounds run one after another (a cluster's hosts at once would last 2 s)...
    assert level.duration_s == 3.0
    # ...but a level's requests/s is the mean of its rounds', each its own.
    assert level.rps_values == (101.0, 102.0) and level.rps.mean == 101.5
    # Of those, what was served: a round stored before `succeeded` whose status classes count
    # every answer served its 2xx (4 of 6); those above count 10 answers of 6, so tell nothing.
    served = engine_round(2)
    served["status"].update({"2xx": 4, "4xx": 2, "other": 0})
    assert results._level(20, [served]).rps_values == (102.0 * 4 / 6,)
    assert (level.goaways, level.refused_streams, level.resets, level.streams_granted) == (3, 3, {"CANCEL": 3}, 50)
    assert (level.handshakes_full, level.handshakes_resumed, level.tls_versions) == (3, 30, ("1.3",))
    assert level.handshakes_per_second("all") == 33 / 3.0
    assert level.latency.exact and level.latency.p50_us is None and level.latency.summaries == ()
    assert level.flags == {"contended": "round 1"}
    # A count results name nowhere is the level's too: a new one needs nothing here to be shown.
    assert level.report["connections"]["opened"] == sum(r["connections"]["opened"] for r in rounds) == 4
    assert [p["round"] for p in level.timeseries] == [0, 1] and [p["second"] for p in level.timeseries] == [0, 1]


def test_a_level_of_a_client_tools_rounds_counts_the_tools_own_groups():
    """wrk names its errors and non-2xx responses its own way and keeps no histogram: the merge
    adds what it counted and the level's latency is the median of the rounds' percentiles."""
    rounds = [load_report.stored_round(wrk.parse(out)) for out in (WRK, WRK_ERRORS, WRK_PIPELINED_404)]
    level = results._level(10, rounds)
    assert level.completed == 78613 * 2 + 126541
    assert level.errors == 16 and level.errors_by_class == {"read": 3, "write": 1, "timeout": 12}
    assert level.non_2xx == 126541
    assert abs(level.duration_s - 3.1) < 1e-9
    assert not level.latency.exact and level.latency.p50_us == 126.0 and level.latency.summaries == ()


def test_a_tool_round_that_measured_no_duration_lasts_its_wall_time():
    measured = load_report.stored_round(wrk.parse(WRK))
    unmeasured = copy.deepcopy(measured)
    unmeasured["duration_s"], unmeasured["client"]["wall_s"] = None, 2.5
    assert results._level(10, [measured, unmeasured]).duration_s == 3.5


def test_a_noisy_level_says_so_in_honestys_words():
    rounds = [engine_round(1), engine_round(2)]
    rounds[1]["requests"]["per_second"] = 150.0
    level = results._level(20, rounds)
    assert level.flags["noisy"] == honesty.noisy([101.0, 150.0]).reason
