"""One level on a client host: the worker's task starts the host's engine in a process of its own,
says it is ready, waits at the level's barrier, then has it run, spoken to line by line on its
stdin (spec, "go", "stop") and answering with one JSON line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import List, Optional

from httpbench.cluster.errors import ClusterError
from httpbench.load import engine
from httpbench.load.report import Report, filled

# How long the client hosts have to get their engines ready for a level. Once the load runs there
# is no time limit: a level takes as long as its budget and the engine's own timeouts say, and a
# host is lost only when its worker leaves the cluster.
READY_TIMEOUT_S = 60.0
# An engine told to stop looks for the signal every 20 ms: one still running after this is stuck.
ENGINE_STOP_TIMEOUT_S = 5.0

# The engine's stop flag is reached only through a signal to the main thread of the process that
# runs it, and a Dask task runs in a worker's thread: so each host's engine gets a process.
_ENGINE_PROCESS = "from httpbench.cluster.client_host import engine_process; engine_process()"


def engine_process() -> None:
    """One host's engine for one level, as a process of its own: its spec comes on stdin; it says
    "ready", starts at the line "go" and stops at the next line or at the end of input (its worker
    gone). It prints one JSON line: the report, or the engine's error; stopped, nothing."""
    spec = json.loads(sys.stdin.readline())
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return
    threading.Thread(target=_stop_at_next_line, daemon=True).start()
    try:
        report = engine.run(engine.with_threads(spec))
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the figures are in hand: a late stop changes nothing
        print(json.dumps({"report": report}), flush=True)
    except engine.EngineError as e:
        # Its kind and fields too, so the controller words it as a local refusal would be.
        print(json.dumps({"error": {"message": str(e), "kind": e.kind, "fields": e.fields}}), flush=True)
    except KeyboardInterrupt:
        pass


def _stop_at_next_line() -> None:
    sys.stdin.readline()
    # The engine looks for signals every 20 ms: SIGINT stops it as Ctrl-C would.
    os.kill(os.getpid(), signal.SIGINT)


def share_at_barrier(spec: dict, level: str, authority: Optional[str] = None) -> Optional[Report]:
    """On a client worker: start this host's engine process, say ready, wait for every host, then
    run. Returns the report with `started_at`, or None when the level was stopped. `authority`:
    over TLS, the certificate authority (PEM) to verify the server against, written here."""
    with tempfile.TemporaryDirectory(prefix="httpbench-level-") as scratch:
        if authority is not None:
            cacert = Path(scratch) / "ca.pem"
            cacert.write_text(authority)
            spec = {**spec, "tls": {**spec["tls"], "cacert": str(cacert)}}
        return _share(spec, level)


def _share(spec: dict, level: str) -> Optional[Report]:
    from distributed import Event, Queue, get_worker

    go, stop = Event(f"{level}-go"), Event(f"{level}-stop")
    worker = get_worker()
    with subprocess.Popen(
        [sys.executable, "-c", _ENGINE_PROCESS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as process:
        try:
            process.stdin.write(json.dumps(spec) + "\n")
            process.stdin.flush()
            if process.stdout.readline().strip() != "ready":
                raise ClusterError(f"the engine process on {worker.name} did not start (exit code {process.wait()})")
            Queue(f"{level}-ready").put(worker.address)
            if not _wait_for_go(go, stop):
                return None
            process.stdin.write("go\n")
            process.stdin.flush()
            return report_of(process, stop, worker.name)
        finally:
            if process.poll() is None:
                process.kill()


def _wait_for_go(go, stop) -> bool:
    """True once every host is ready, False if the level was stopped first."""
    # The controller sets one or the other within its own READY_TIMEOUT_S.
    deadline = time.monotonic() + 2 * READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if stop.is_set():
            return False
        if go.wait(timeout=0.5):
            return not stop.is_set()
    raise ClusterError(f"no word from the controller within {2 * READY_TIMEOUT_S:.0f} s of being ready")


def report_of(process: subprocess.Popen, stop, host: str) -> Optional[Report]:
    """The engine process's report, with the wall-clock time its load started; None when the
    level is stopped meanwhile (the process is told to stop)."""
    printed: List[str] = []
    reader = threading.Thread(target=lambda: printed.append(process.stdout.read()), daemon=True)
    reader.start()
    while reader.is_alive():
        reader.join(timeout=0.2)
        if reader.is_alive() and stop.is_set():
            try:
                process.stdin.write("stop\n")
                process.stdin.flush()
            except BrokenPipeError:
                pass  # it has just ended on its own
            reader.join(ENGINE_STOP_TIMEOUT_S)
            if reader.is_alive():
                process.kill()
            return None
    if not printed[0].strip():
        raise ClusterError(f"the engine process on {host} ended without a report (exit code {process.wait()})")
    try:
        out = json.loads(printed[0])
    except ValueError:
        raise ClusterError(
            f"the engine process on {host} printed no report but: {printed[0].strip()[:200]!r}"
        ) from None
    if "error" in out:
        raise engine.EngineError(**out["error"])
    # A client host's httpbench may be another version than the controller's.
    return filled(out["report"])
