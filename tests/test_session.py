"""A session's resume command, built from what its run stored, and its progress bar when a
level's rounds are "auto". (Sessions run for real in test_sweep, test_cli and test_run_exit.)"""

import shlex
from types import SimpleNamespace

from httpbench.cli import console
from httpbench.load.report import stored_host
from httpbench.plan.model import Cell, Rounds
from httpbench.sweep.session import Setup, resume_command


def test_the_resume_command_is_built_from_the_runs_stored_facts():
    assert resume_command(3, "my results.db", stored_host({})) == "httpbench run --resume 3 --db 'my results.db'"
    assert (
        resume_command(3, "r.db", stored_host({}), ["nginx", "h2o"])
        == "httpbench run --resume 3 --db r.db --servers nginx,h2o"
    )
    # A cluster's run goes on from its client hosts, not this one: `runs` and `show` say so too.
    stored = stored_host(
        {
            "cluster": {
                "scheduler": "tls://sched:8786",
                "server_host": "s1",
                **Setup(cluster="tls://sched:8786", certs="my certs", on_client_loss="stop").facts(),
            }
        }
    )
    assert shlex.split(resume_command(3, "r.db", stored)) == [
        "httpbench",
        "run",
        "--resume",
        "3",
        "--db",
        "r.db",
        "--cluster",
        "tls://sched:8786",
        "--certs",
        "my certs",
        "--on-client-loss",
        "stop",
    ]
    # A run stored before its certificates were: the scheduler at least.
    assert resume_command(3, "r.db", stored_host({"cluster": {"scheduler": "tls://sched:8786"}})).endswith(
        "--cluster tls://sched:8786"
    )


def test_auto_rounds_add_to_the_bar_beyond_each_levels_fewest():
    rounds = Rounds(None, 6)
    assert (rounds.fewest, rounds.longest, str(rounds)) == (3, 6, "auto")
    bar, progress = console.live_progress(2 * rounds.fewest, 0, rounds)
    cell = Cell("reference", "tuned", None, True, 1)
    for level, taken in ((1, 3), (10, 5)):
        for index in range(taken):
            progress.on_round(cell, level, index, {"requests": {"per_second": 1000.0}, "flags": []})
    task = bar.tasks[0]
    assert task.completed == task.total == 8


def test_a_capacity_bar_counts_the_probes_each_search_took_and_ends_full():
    # A search takes however many probes it needs: the bar re-estimates what is left at each cell
    # from the cells still to search, and ends at what was taken (not "374/572 rounds, ETA 5:07").
    bar, progress = console.live_progress(2 * 13, 0, per_cell=13)
    cell = SimpleNamespace(key="reference/tuned/7B/ka/1cpu")
    for index, probes in enumerate((9, 7)):
        progress.on_cell(index, 2, cell)
        if index == 1:
            assert bar.tasks[0].total == 9 + 13
        for n in range(probes):
            progress.on_round(cell, 1000 * (n + 1), 0, {"requests": {"per_second": 1000.0}, "flags": []})
    progress.on_finished()
    task = bar.tasks[0]
    assert task.completed == task.total == 16


def test_fixed_rounds_are_decided_by_their_count_and_auto_by_their_agreement():
    assert Rounds(2, 10).more([50.0]) and not Rounds(2, 10).more([50.0, 150.0])
    auto = Rounds(None, 4)
    assert auto.more([100.0, 100.0]) and not auto.more([100.0, 101.0, 99.0])
    assert not auto.more([100.0, 150.0, 50.0, 120.0])  # the cap wins
