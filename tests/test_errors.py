"""Errors speak the caller's language and never kill the interpreter.

The engine's errors are kinds with fields, worded without any front end's flags; a plan's user is
told plan keys; a panic in the engine is an exception (and a failed cell in a sweep); every error
the user can fix is an `httpbench.Error` (one line, exit 2), anything else a bug (traceback,
exit 1). Loads here are a handful of requests against 127.0.0.1.
"""

import re
import subprocess
import sys

import httpbench
import pytest
from conftest import quick_sweep, short_plan
from httpbench.load import engine
from httpbench.plan.model import PlanError
from httpbench.sweep.sweep import Sweep

# A flag as a command line writes it: -c, -n 5, --allow-errors.
FLAG = re.compile(r"(^|[\s(;'\"])--?[a-zA-Z]")


def names_a_flag(text: str) -> bool:
    """Whether `text` names one of httpbench's flags (the shell's `ulimit -Hn` is no such flag)."""
    return bool(FLAG.search(text.replace("ulimit -Hn", "")))


def refusal(spec: dict) -> engine.EngineError:
    with pytest.raises(engine.EngineError) as caught:
        engine.run(spec)
    return caught.value


def test_engine_errors_carry_their_kind_and_fields(testserver):
    url = testserver("status", "--status", "503")
    e = refusal({"urls": [url], "connections": 2, "stop": {"requests": 10}})
    assert e.kind == "validation_failed" and e.fields["status"] == 503 and "503" in e.fields["problem"]
    e = refusal({"urls": [url], "connections": 10, "stop": {"requests": 5}})
    fact = "5 requests are fewer than the 10 connections: some connections would send nothing"
    assert (e.kind, e.fields) == ("too_few_requests", {"requests": 5, "connections": 10, "fact": fact})
    e = refusal({"urls": ["http://127.0.0.1:1/"], "connections": 1, "stop": {"requests": 1}})
    assert e.kind == "unreachable" and e.fields["addr"] == "127.0.0.1:1"
    e = refusal({"urls": [url], "connections": 1, "threads": 2})
    fact = "2 threads for 1 connections leaves threads idle"
    assert (e.kind, e.fields) == ("idle_threads", {"threads": 2, "connections": 1, "fact": fact})
    e = refusal({"urls": [url], "connections": 0})
    assert (e.kind, e.fields["field"]) == ("invalid_spec", "connections")
    # An exception that survives pickling (Dask hands them between processes) keeps its kind.
    import pickle

    again = pickle.loads(pickle.dumps(e))
    assert (str(again), again.kind, again.fields) == (str(e), e.kind, e.fields)


@pytest.mark.parametrize(
    "spec",
    [
        {"connections": 0},
        {"threads": 0},
        {"threads": 11},
        {"pipeline": 0},
        {"pipeline": 2000},
        {"stop": {"requests": 0}},
        {"stop": {"requests": 5}},
        {"stop": {"duration": -1}},
        {"rate": 0},
        {"requests_per_connection": 0},
        {"keep_alive": False, "pipeline": 4},
        {"method": "G T"},
        {"headers": ["nocolon"]},
        {"warmup": -1},
        {"connect_timeout": 0},
        {"request_timeout": 0},
        {"bind": ["::1"]},
        {"bind": ["10.99.99.99"]},
        {"cpus": [4096]},
        {"urls": ["http://u:p@127.0.0.1:1/"]},
        {"conections": 3},
        {"urls": []},
        {"connections": 10**6},
    ],
)
def test_no_engine_message_names_a_flag(spec):
    e = refusal({"urls": ["http://127.0.0.1:1/"], "stop": {"requests": 100}, **spec})
    assert not names_a_flag(str(e)), str(e)
    assert e.kind != "other", str(e)


def test_a_failed_validation_without_allow_errors_names_no_flag(testserver):
    e = refusal({"urls": [testserver("garbage")], "connections": 1, "stop": {"requests": 1}})
    assert e.kind == "validation_failed" and not names_a_flag(str(e)), str(e)


@pytest.mark.parametrize("where", ["run", "worker"])
def test_a_panic_in_the_engine_is_an_exception_and_the_interpreter_goes_on(testserver, where):
    url = testserver("ok")
    with pytest.raises(engine.EnginePanicked, match="panicked"):
        engine.run({"urls": [url], "connections": 2, "threads": 2, "stop": {"duration": 30}, "_panic": where})
    # Not a user error: a bug, with a traceback.
    assert not issubclass(engine.EnginePanicked, httpbench.Error)
    report = engine.run({"urls": [url], "connections": 2, "stop": {"requests": 20}})
    assert report["requests"]["completed"] == 20


def sweep_of(tmp_path, extra: str = "") -> tuple:
    tmp_path.mkdir(exist_ok=True)
    plan = short_plan(tmp_path, '["reference", "nginx"]', "1", "requests = 50", extra=extra)
    notes: list = []
    return quick_sweep(plan, tmp_path / "r.db", notes), notes


def cells_of(sweep: Sweep) -> dict:
    run_id = sweep.start()
    sweep.run(run_id)
    return {c["server"]: c for c in sweep.store.run(run_id)["cells"]}


def with_spec(sweep: Sweep, first: dict) -> None:
    """The sweep's first load gets `first` added to its spec; the others run as planned."""
    real, calls = sweep.load, []

    def load(spec: dict) -> dict:
        calls.append(spec)
        return real({**spec, **first} if len(calls) == 1 else spec)

    sweep.load = load


def test_a_panic_in_a_sweep_fails_its_cell_and_the_sweep_goes_on(tmp_path):
    sweep, notes = sweep_of(tmp_path)
    with_spec(sweep, {"_panic": "worker"})
    cells = cells_of(sweep)
    assert cells["reference"]["status"] == "failed" and "panicked" in cells["reference"]["error"]
    assert cells["nginx"]["status"] == "done" and len(cells["nginx"]["rounds"]) == 1
    assert any("panicked" in note for note in notes), notes


def test_a_plan_user_is_told_plan_keys_not_flags(tmp_path):
    # The first response has 7 bytes, not the 1 the (injected) spec expects: the engine refuses.
    sweep, _ = sweep_of(tmp_path)
    with_spec(sweep, {"expect_length": 1})
    cells = cells_of(sweep)
    error = cells["reference"]["error"]
    assert cells["reference"]["status"] == "failed" and "allow_errors = true" in error and not names_a_flag(error), (
        error
    )
    # The plan key does what the message says.
    sweep, _ = sweep_of(tmp_path / "allowed", extra="allow_errors = true")
    with_spec(sweep, {"expect_length": 1})
    cells = cells_of(sweep)
    assert cells["reference"]["status"] == "done", cells["reference"]["error"]
    (measured,) = cells["reference"]["rounds"]
    assert measured["measurement"]["errors"]["length_mismatch"] == 50


def test_plan_wording_of_the_engine_refusals_a_plan_can_cause():
    said = engine.in_plan_terms(engine.EngineError("x", "too_few_requests", {"requests": 5, "connections": 10}))
    assert "budget.requests = 5" in said and "levels above 5" in said and not names_a_flag(said)
    # A level no open-file limit allows: the engine's fact, once, then the plan's remedy.
    refused = refusal({"urls": ["http://127.0.0.1:1/"], "connections": 100_000_000})
    said = engine.in_plan_terms(refused)
    assert refused.kind == "open_files" and said.startswith("level 100000000: ") and said.count("open files") == 1
    assert f"levels above {refused.fields['most']}" in said and not names_a_flag(said)
    said = engine.in_plan_terms(engine.EngineError("x", "pipeline_without_keep_alive", {"pipeline": 4}))
    assert "pipeline = 4" in said and "keep_alive" in said and not names_a_flag(said)
    # TLS: the suite made the certificate and the authority, so the remedy is in the plan.
    said = engine.in_plan_terms(
        engine.EngineError("x", "tls_certificate", {"reason": "unknown CA", "host": "127.0.0.1", "problem": "p"})
    )
    assert "unknown CA" in said and "config_file" in said and not names_a_flag(said)
    said = engine.in_plan_terms(
        engine.EngineError("x", "tls_handshake", {"addr": "127.0.0.1:1", "refused": True, "problem": "an alert"})
    )
    assert "refused every offer: an alert" in said and "tls.version" in said and not names_a_flag(said)
    said = engine.in_plan_terms(
        engine.EngineError("x", "http2_not_selected", {"selected": "http/1.1", "fact": "it selected http/1.1"})
    )
    assert "it selected http/1.1; " in said and 'drop "h2" from protocols' in said and not names_a_flag(said)


def test_every_domain_error_is_an_httpbench_error():
    from httpbench import cluster, placement
    from httpbench.load.tools.process import ClientError
    from httpbench.plan import workload
    from httpbench.report.output import NothingToChart
    from httpbench.servers import ServerFailed, UnknownServer, VerificationFailed
    from httpbench.store import database as store

    for error in (
        PlanError,
        ServerFailed,
        VerificationFailed,
        UnknownServer,
        engine.EngineError,
        cluster.ClusterError,
        store.StoreError,
        ClientError,
        placement.PlacementError,
        workload.WorkloadError,
        NothingToChart,
    ):
        assert issubclass(error, httpbench.Error), error
        assert not issubclass(error, ValueError), error


def httpbench_with(code: str, *args: str) -> subprocess.CompletedProcess:
    """`httpbench ARGS` after `code` ran in the cli module (to plant a bug)."""
    script = f"import sys; from httpbench.cli import main as cli\n{code}\nsys.exit(cli.main({list(args)!r}))"
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)


def test_a_user_error_is_one_line_and_exit_2(tmp_path):
    done = httpbench_with("", "run", str(tmp_path / "no-such-plan.toml"), "--db", str(tmp_path / "r.db"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("httpbench: ") and "Traceback" not in done.stderr


@pytest.mark.parametrize("bug", ["ValueError('a bug')", "__import__('json').JSONDecodeError('a bug', '', 0)"])
def test_a_bug_is_a_traceback_and_exit_1(tmp_path, bug):
    done = httpbench_with(
        f"def _runs(args):\n    raise {bug}\ncli._runs = _runs", "runs", "--db", str(tmp_path / "r.db")
    )
    assert done.returncode == 1 and "Traceback" in done.stderr and "a bug" in done.stderr, done.stderr
