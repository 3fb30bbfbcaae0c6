"""Plans with clients that are not a benchmark (issue 28): idle_connections, idle_ping, slow and
slow_clients make cells as other axes do, each cell's key naming its attack; every mistake is one
line, exit 2, nothing started."""

import pytest
from conftest import SHORT_PLAN, refused_run, short_plan
from httpbench.load.engine import host_facts
from httpbench.plan import builtin as plans
from httpbench.plan.model import RUN_OVERHEAD_S, PlanError


def parse(extra: str, servers: str = '["nginx"]', levels: str = "10"):
    """The plan, checked as a run checks it here (its connections against the open-file limits)."""
    plan = plans.parse(SHORT_PLAN.format(servers=servers, levels=levels, budget='duration = "1s"', extra=extra), "p")
    plan.check_open_files()
    return plan


def error(extra: str, **kwargs) -> str:
    with pytest.raises(PlanError) as caught:
        parse(extra, **kwargs)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_idle_and_slow_are_axes_and_keys_name_the_attack():
    plan = parse(
        'idle_connections = [0, 5000]\nidle_ping = "5s"\nslow = ["none", "headers", "read"]\nslow_clients = 300'
    )
    keys = [c.key for c in plan.cells(["nginx"])]
    assert keys == [
        "nginx/default/7B/ka/1cpu",
        "nginx/default/7B/ka/1cpu/slowloris-300",
        "nginx/default/7B/ka/1cpu/slow-read-300",
        "nginx/default/7B/ka/1cpu/idle-5000",
        "nginx/default/7B/ka/1cpu/idle-5000/slowloris-300",
        "nginx/default/7B/ka/1cpu/idle-5000/slow-read-300",
    ]
    assert plan.idle_ping == 5.0 and plan.slow_clients == 300
    alone = parse("").estimate_seconds(1) - RUN_OVERHEAD_S
    assert plan.estimate_seconds(1) - RUN_OVERHEAD_S == pytest.approx(6 * alone)
    # A plan without the keys keeps its cells and keys as before.
    assert [c.key for c in parse("").cells(["nginx"])] == ["nginx/default/7B/ka/1cpu"]


def test_attacks_pairs_idle_and_slow_in_place_of_crossing_them():
    plan = parse('attacks = [[0, "none"], [0, "headers"], [5000, "none"]]\nslow_clients = 300')
    assert [c.key for c in plan.cells(["nginx"])] == [
        "nginx/default/7B/ka/1cpu",
        "nginx/default/7B/ka/1cpu/slowloris-300",
        "nginx/default/7B/ka/1cpu/idle-5000",
    ]
    assert plan.idle_connections == (0, 5000) and plan.slow == (None, "headers")
    alone = parse("").estimate_seconds(1) - RUN_OVERHEAD_S
    assert plan.estimate_seconds(1) - RUN_OVERHEAD_S == pytest.approx(3 * alone)


def test_slow_settings_reach_the_plan():
    plan = parse(
        'slow = "body"\nslow_clients = 5\nslow_interval = "2s"\nslow_content_length = 100000\nslow_hold = "30s"'
    )
    assert plan.slow == ("body",)
    s = plan.slow_settings
    assert (s.interval, s.content_length, s.hold, s.chunk_bytes) == (2.0, 100000, 30.0, None)


@pytest.mark.parametrize(
    "extra, says",
    [
        ('slow = ["none", "drip"]\nslow_clients = 5', "slow must be one of"),
        ('slow = "headers"', "needs slow_clients = N"),
        ("slow_clients = 5", 'add slow = ["none", "headers"]'),
        ('slow_interval = "1s"', "slow_interval sets the slow clients"),
        ('idle_ping = "5s"', "add idle_connections"),
        ("idle_connections = 10\nkeep_alive = [true, false]", "idle_connections are keep-alive connections"),
        ('slow = "headers"\nslow_clients = 5\nclient = "ab"', 'cannot be used with client = "ab"'),
        ('idle_connections = 5\nclient = "wrk"', 'cannot be used with client = "wrk"'),
        ('slow = "headers"\nslow_clients = 0', "slow_clients must be"),
        ('attacks = [[0, "none"]]\nslow = "headers"', "attacks lists the cells' idle connections"),
        ('attacks = [[0, "none", 1]]', "attacks lists [idle connections, slow mode] pairs"),
        ('attacks = [[0, "drip"]]', "attacks must be one of"),
        ('attacks = [[0, "none"], [0, "none"]]', "twice"),
        ('attacks = [[0, "headers"]]', "needs slow_clients = N"),
        ('attacks = [[10, "none"]]\nkeep_alive = [true, false]', "idle_connections are keep-alive connections"),
    ],
)
def test_bad_input_is_one_line(extra, says):
    # keep_alive given twice is refused by TOML itself: the case above replaces the plan's.
    if "keep_alive" in extra:
        text = SHORT_PLAN.replace("keep_alive = [true]\n", "")
        with pytest.raises(PlanError) as caught:
            plans.parse(text.format(servers='["nginx"]', levels="10", budget='duration = "1s"', extra=extra), "p")
        message = str(caught.value)
    else:
        message = error(extra)
    assert says in message and "\n" not in message, message


def test_more_connections_than_the_open_file_limits_allow_are_refused():
    hard = host_facts()["nofile_hard"]
    if hard is None:
        pytest.skip("no open-file hard limit here")
    message = error(f'slow = "headers"\nslow_clients = {hard}')
    assert "open-file hard limit" in message and "httpbench doctor" in message, message
    message = error(f"idle_connections = [0, {hard // 2}]", levels="10")
    assert "idle_connections:" in message, message


def test_paired_attacks_count_each_cells_own_connections_against_the_limits():
    hard = host_facts()["nofile_hard"]
    if hard is None:
        pytest.skip("no open-file hard limit here")
    idle = hard // 2 - 20
    parse(f'attacks = [[0, "headers"], [{idle}, "none"]]\nslow_clients = 20')
    message = error(f'idle_connections = [0, {idle}]\nslow = ["none", "headers"]\nslow_clients = 20')
    assert "open-file hard limit" in message, message


def test_a_refused_plan_starts_nothing(tmp_path):
    plan = short_plan(tmp_path, '["nginx"]', "10", 'duration = "1s"', extra='slow = "sideways"\nslow_clients = 5')
    assert "slow must be one of" in refused_run(plan, tmp_path / "db.sqlite")


def test_an_attacked_cell_is_read_against_its_twin_without_the_attack():
    from httpbench.results.hostile import without
    from httpbench.results.model import CellResult

    plan = parse('idle_connections = [0, 50]\nslow = ["none", "headers"]\nslow_clients = 5')
    stored = [
        CellResult(
            1,
            c.key,
            c.server,
            c.profile,
            c.workload.label,
            True,
            1,
            "",
            None,
            "done",
            None,
            1.0,
            "",
            "",
            [],
            idle=c.idle,
            slow=c.slow,
            slow_clients=c.slow_clients,
        )  # fmt: skip
        for c in plan.cells(["nginx"])
    ]
    by_key = {c.key: c for c in stored}
    both = by_key["nginx/default/7B/ka/1cpu/idle-50/slowloris-5"]
    assert without(both, stored, slow=True).key == "nginx/default/7B/ka/1cpu/idle-50"
    assert without(both, stored, idle=True).key == "nginx/default/7B/ka/1cpu/slowloris-5"
    assert without(by_key["nginx/default/7B/ka/1cpu/slowloris-5"], stored, slow=True).key == "nginx/default/7B/ka/1cpu"
    # Groups name the attack: no two of these four are ranked together.
    assert len({c.group for c in stored}) == 4


def test_requests_per_second_against_the_unattacked_level_are_judged_as_any_ratio():
    # One round each: a share within the noise is said as "as many", never as a bare 97%.
    from types import SimpleNamespace

    from httpbench.judge.stats import LevelStats
    from httpbench.report.attacks import against_unattacked
    from httpbench.results.hostile import SlowFigures

    def figures(attacked, unattacked):
        level = lambda rates: SimpleNamespace(rps=LevelStats.of(rates))  # noqa: E731
        return SlowFigures(level(attacked), level(unattacked))

    assert against_unattacked(figures([970.0], [1000.0])) == (
        " (as many requests/s as without them; 0.97 times: within 5%, which single rounds cannot tell from noise)"
    )
    assert against_unattacked(figures([500.0], [1000.0])) == " (50% of its requests/s without them)"
    assert against_unattacked(figures([800.0, 900.0, 1000.0], [700.0, 1000.0, 1300.0])) == (
        " (as many requests/s as without them; 0.90 times: within the noise, its 95% interval 0.18 to 1.62)"
    )
