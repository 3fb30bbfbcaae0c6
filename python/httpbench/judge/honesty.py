"""Honesty checks: signs that a level measured the client or the machine rather than the server,
or a server that did not stay whole while it was measured.

Each check is a small pure function over the measurements of one level (engine reports, schema
httpbench-load/1, or a client's report in the same shape: httpbench.load.report), so the sweep can call them per
level and a report can show the flag wherever the number is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, List, Optional, Sequence, Tuple

from httpbench.judge.stats import LevelStats
from httpbench.load import engine
from httpbench.load.report import Client, Report

BUSY_SHARE_LIMIT = 0.9  # an engine thread's CPU time (and time waiting for its CPU) / wall time
CPU_SHARE_LIMIT = 0.95  # client CPU time / wall time, as a share of the cores it was given
CEILING_MARGIN = 0.10  # throughput within this of the client ceiling
LITTLE_MARGIN = 0.10
NOISY_CV = 0.05
# A level measured on a machine busy with other work (`contended`): the server's threads waited
# for a CPU over this share of the time they were ready to run (or the client's busiest thread
# of its time, as the engine reports it), and
# other processes used at least this many CPUs, so that the wait is theirs, not the server's own
# processes queueing for the CPUs it was given (apache2 with more processes than CPUs) or the
# client's on a shared CPU. With nothing else able to take their CPUs (nginx, lighttpd and the
# engine SCHED_FIFO, 1 to 10 connections, on a 2-CPU VM) they waited 0.0-1.5% of it, wake-ups
# included; beside another job on the machine, 30-75%, and nginx then served a fifth to a half
# of what it served alone. A quarter of a CPU of other work is enough to have taken a tenth of
# a server's or the client's CPU, and far above what this machine's own daemons use (under 0.01).
SERVER_WAIT_LIMIT = 0.10
CLIENT_WAIT_LIMIT = 0.10
OTHERS_CPU_LIMIT = 0.25
# Flags that stop their cell (the sweep fails it at that level), with what each says of the
# level: a cell holding one is never ranked, even once --resume has measured the levels it lacked.
CELL_STOPPERS = {"crashed": "its server died during", "ended_early": "the load ended early at"}
# A cell resumed by tickets (or session IDs) ranks as resumed only where this share of its
# handshakes resumed: lighttpd and h2o issue two TLS 1.3 tickets per full handshake and none on a
# resumed one, so a client that uses each ticket once, as browsers do (RFC 8446 C.4), resumes two
# handshakes in three with them, where nginx resumes every one.
RESUMED_SHARE_LIMIT = 0.95
# Flags that keep a cell out of its group's ranking, with what each says of the cell.
# A cell that asked a coding and got none of its answers in it measured another coding than its
# group's: ranking it among them would compare unlike work under one name.
UNRANKED = {
    "not_resumed": "resumed under 95% of its handshakes at",
    "not_encoded": "sent none of its answers in the coding asked at",
}
AUTO_CV = 0.025  # rounds = "auto" stops once cv drops below this
AUTO_MIN_ROUNDS = 3


@dataclass(frozen=True)
class Flag:
    kind: str  # client_saturated, littles_law, noisy, crashed, server_restarted, ended_early, errors
    # (the sweep adds others, e.g. shared_cpus)
    reason: str  # one sentence with the numbers, shown next to the figure


def stops_cell(measurement: dict, stoppers: Collection[str] = tuple(CELL_STOPPERS)) -> bool:
    """Whether a stored round stopped its cell: it is flagged with a kind of `stoppers`, and a
    resumed cell measures it again."""
    return any(f["kind"] in stoppers for f in measurement["flags"])


def _rps(m: Report) -> Optional[float]:
    return m["requests"]["per_second"]


def client_saturated(
    measurements: Sequence[Report], ceiling_rps: Optional[float], client_cores: int, against: str = "reference"
) -> Optional[Flag]:
    """The client, not the server, set the pace in some round (see `_client_bound`), or the
    level's mean throughput is within 10% of the client ceiling (its throughput against the
    server `against`, measured at the start of the run)."""
    reasons = [
        f"round {index}: {reason}"
        for index, m in enumerate(measurements, 1)
        for reason in _client_bound(m, client_cores)
    ]
    return _saturated(reasons + _near_ceiling(measurements, ceiling_rps, against))


def client_host_saturated(host: str, report: Report) -> Optional[Flag]:
    """One client host of a cluster level, judged on its own engine's report against the CPUs
    that host let it use: one saturated host is enough to distort the whole level."""
    cores = len(report["host"]["cpus_allowed"]) or 1
    return _saturated([f"client host {host}: {reason}" for reason in _client_bound(report, cores)])


def _client_bound(m: Report, client_cores: int) -> List[str]:
    """Why one measurement's client was the limit: its busiest engine thread above 90% busy
    (counting the time it was ready but other processes had its CPU: on a shared machine a
    starved client is as much the limit as a busy one), or its CPU time at 95% of the cores it
    was given."""
    reasons: List[str] = []
    client = m["client"]
    busy, waiting = _busiest(client)
    if busy is not None and busy + waiting > BUSY_SHARE_LIMIT:
        # Named when it is large, or when the busy share alone would not have crossed the limit;
        # tenths, or "90.4%" would read "90% (> 90%)".
        shown = waiting > 0.05 or busy <= BUSY_SHARE_LIMIT
        starved = f" and {waiting:.1%} waiting for its CPU" if shown else ""
        reasons.append(f"busiest client thread {busy:.1%} busy{starved} (> {BUSY_SHARE_LIMIT:.0%})")
    user, system = client["user_s"], client["sys_s"]
    # A tool's rusage covers its whole life (start-up, connecting), so it is set against the
    # process's wall time when the client report has one (a tool's); the engine's is measurement
    # only.
    wall = client.get("wall_s") or m["duration_s"]
    # A client with fewer threads than cores (ab has one) can use no more than its threads (a
    # tool's count; the engine's are `threads`).
    usable = min(client_cores, client.get("thread_count") or client_cores)
    if user is not None and system is not None and wall and usable > 0:
        cores = (user + system) / wall
        if cores >= usable * CPU_SHARE_LIMIT:
            reasons.append(
                f"client CPU {user + system:.2f} s in {wall:.2f} s = {cores:.2f} of the {usable} core(s) it could use"
            )
    return reasons


def _busiest(client: Client) -> Tuple[Optional[float], float]:
    """The busy share of the client's busiest engine thread, and its share waiting for its CPU."""
    threads = client["threads"] or [client]
    return max(((t["busy_share"], t["waiting_share"] or 0.0) for t in threads), key=lambda bw: (bw[0] or 0.0) + bw[1])


def busiest_share(m: dict) -> Optional[float]:
    """How much of the time the client's busiest engine thread was busy or waiting for its CPU in
    one load (an engine report, or a cluster level's merged one: its client hosts' busiest)."""
    reports = [part["report"] for part in m["hosts"]] if "hosts" in m else [m]
    shares = [busy + waiting for r in reports for busy, waiting in [_busiest(r["client"])] if busy is not None]
    return max(shares, default=None)


def clients_at_ceiling(
    measurements: Sequence[Report], ceiling_rps: Optional[float], against: str = "reference"
) -> Optional[Flag]:
    """Several client hosts' merged figures: only their throughput against their ceiling says
    anything (each host's CPU is judged on its own, with `client_host_saturated`)."""
    return _saturated(_near_ceiling(measurements, ceiling_rps, against))


def _saturated(reasons: List[str]) -> Optional[Flag]:
    return Flag("client_saturated", "; ".join(reasons)) if reasons else None


def _near_ceiling(measurements: Sequence[Report], ceiling_rps: Optional[float], against: str) -> List[str]:
    values = [v for v in map(_rps, measurements) if v is not None]
    if ceiling_rps and values:
        mean = sum(values) / len(values)
        if mean >= ceiling_rps * (1 - CEILING_MARGIN):
            return [
                f"{mean:,.0f} req/s is within {CEILING_MARGIN:.0%} of the client ceiling "
                f"({ceiling_rps:,.0f} req/s against {against})"
            ]
    return []


def contended(server: str, window: dict, client: Optional[Client]) -> Optional[Flag]:
    """The machine was busy with other work: other processes used CPUs (`others_cpu_cores` of
    the monitor's `window`) while the server's threads or the client's busiest one waited for
    theirs. Both are slowed by what else runs, not by each other, and by different amounts, so
    a ranking measured so can flip (a quiet run's 1.03x for lighttpd became 1.11x for nginx)."""
    others = window["others_cpu_cores"]
    if others < OTHERS_CPU_LIMIT:
        return None
    reasons = []
    waiting = window["server_waiting_share"]  # None without the kernel's scheduler statistics
    if waiting is not None and waiting > SERVER_WAIT_LIMIT:
        reasons.append(f"{server} waited for a CPU {waiting:.0%} of the time it was ready to run")
    waiting = client["waiting_share"] if client else None
    if waiting is not None and waiting > CLIENT_WAIT_LIMIT:
        reasons.append(f"busiest client thread waited for its CPU {waiting:.0%} of the time")
    if not reasons:
        return None
    return Flag(
        "contended", "; ".join(reasons) + f"; other processes used {others:.1f} of {window['machine_cpus']} CPUs"
    )


def requests_in_flight(connections: int, pipeline: int, m: Report) -> int:
    """What a closed loop of `connections` keeps in flight in the round `m`: each connection's
    pipeline over HTTP/1.1; over HTTP/2 its streams, as many as asked but no more than the server
    granted (its SETTINGS_MAX_CONCURRENT_STREAMS held the engine to that)."""
    h2 = m["h2"]
    if not h2:
        return max(1, connections) * pipeline
    granted = h2["streams_granted"]
    streams = h2["streams_requested"] if granted is None else min(h2["streams_requested"], granted)
    return max(1, connections) * streams


def littles_law(measurements: Sequence[Report], connections: int) -> Optional[Flag]:
    """Closed loop only: requests in flight (`connections`, as `requests_in_flight` counts them)
    should equal throughput x mean cycle (latency, plus the engine's handling delay
    where it reports one), plus the requests still unanswered at the end for the time they had
    waited, where the client reports it. Flags the round furthest off when it is off by more
    than 10%.

    The law holds for any stable system, so a miss means the latency does not cover the whole
    time a connection holds a request slot: a client that cannot keep its connections busy (CPU
    bound, so the time between a response and the next request is nobody's latency), connections
    that are not all established (listen backlog overflow, SYN retries), or errors and reconnects.
    Each of those is the environment being measured, not the server. Time spent connecting and
    shaking hands is in no request's latency but holds a connection all the same (without
    keep-alive, every request's): it counts, as the engine's connect and handshake times say.
    """
    worst = None
    for index, m in enumerate(measurements, 1):
        if m["open_loop"]:
            return None  # open loop: the rate, not the connections, sets the load
        rps = _rps(m)
        mean_us = m["latency"]["total"]["mean_us"]
        if not rps or mean_us is None or connections <= 0:
            continue  # a client that does not report a mean latency cannot be checked
        # The engine times responses by their arrival in the kernel and reports, apart, how
        # long it took to handle them: both are part of a connection's cycle.
        mean_us += m["client"]["handling_delay_us"] or 0
        # A server that leaves some connections unanswered for most of a round shows only in
        # these: their requests are in no latency (survivors of a short round, not the client).
        requests = m["requests"]
        waited_s = (requests["in_flight"] or 0) * (requests["in_flight_age_mean_us"] or 0) / 1e6
        unanswered = waited_s / m["duration_s"] if m["duration_s"] else 0.0
        connecting = _setting_up(m)
        in_flight = rps * mean_us / 1e6 + unanswered + connecting
        off = abs(in_flight / connections - 1)
        if worst is None or off > worst[0]:
            worst = (off, index, rps, mean_us, unanswered, connecting, in_flight)
    if worst is None or worst[0] <= LITTLE_MARGIN:
        return None
    off, index, rps, mean_us, unanswered, connecting, in_flight = worst
    waiting = f" + {unanswered:,.1f} unanswered at the end" if unanswered >= 0.05 else ""
    waiting += f" + {connecting:,.1f} connecting" if connecting >= 0.05 else ""
    return Flag(
        "littles_law",
        f"round {index}: {connections} requests in flight, but throughput x mean cycle = "
        f"{rps:,.0f} req/s x {mean_us:,.0f} us{waiting} = {in_flight:,.1f} (off by {off:.1%})",
    )


def _setting_up(m: Report) -> float:
    """Connections busy connecting or in a TLS handshake, on average over the round."""
    latency, seconds = m["latency"], m["duration_s"]
    busy_us = sum((s["count"] or 0) * (s["mean_us"] or 0) for s in (latency["connect"], latency["tls_handshake"]) if s)
    return busy_us / 1e6 / seconds if seconds else 0.0


def not_resumed(m: Report, resumption: Optional[str]) -> Optional[Flag]:
    """A round of a cell whose handshakes are to be resumed (`resumption` "tickets" or "ids")
    that resumed under RESUMED_SHARE_LIMIT of them: its figures mix full handshakes into what is
    named resumed."""
    tls = m.get("tls")  # a client tool's report has none
    if resumption in (None, "none") or not tls:
        return None
    resumed = tls["handshakes_resumed"] or 0
    made = (tls["handshakes_full"] or 0) + resumed
    if not made or resumed >= RESUMED_SHARE_LIMIT * made:
        return None
    return Flag(
        "not_resumed",
        f"{resumed:,} of {made:,} handshakes resumed ({resumed / made:.0%}); "
        f"the rest were full: the server did not resume every {resumption} session offered",
    )


def encoding(m: Report, asked: Optional[str]) -> Optional[Flag]:
    """A round of a cell that asked content coding `asked` whose answers did not all come in it
    (the engine's `encodings`): `not_encoded` when none did; `encoding`, with the shares sent,
    when some did and verification did not learn each file's coding."""
    sent = {name: e["answers"] for name, e in (m.get("encodings") or {}).items() if e["answers"]}
    total = sum(sent.values())
    if asked is None or not total or set(sent) == {asked}:
        return None
    expected = (m.get("spec") or {}).get("expect_encodings")
    if asked in sent and expected and asked in expected:
        # Verification saw which files come in which coding (a site's fonts and images are not
        # compressed), and the engine failed every answer in another: a share not all in the
        # coding asked is then the site's, not the server's failing, and the level tables give it.
        return None
    others = sorted(((n, name) for name, n in sent.items() if name != asked), reverse=True)
    shares = ", ".join(f"{name} for {n / total:.0%}" for n, name in others)
    kind = "encoding" if asked in sent else "not_encoded"
    return Flag(kind, f"asked {asked}, sent {shares} of answers")


def crashed(m: dict) -> Optional[Flag]:
    """The server's main process (the one its adapter started) died during the round: whatever
    the rest of its processes served meanwhile is not the server's throughput."""
    window = m["server"]
    if not window["crashed"]:
        return None
    return Flag("crashed", "; ".join(window["events"]))


def ended_early(m: dict) -> Optional[Flag]:
    """The load ended before its budget (`aborted`): the engine gave up on a server that stopped
    answering, or ab/wrk/h2load hit their time limit. The figures cover only part of the level,
    and a server that stopped answering would be measured again at the next. A server whose main
    process died is flagged `crashed` instead: its death is why the load ended, said once."""
    if not m["aborted"] or m["server"]["crashed"]:
        return None
    return Flag("ended_early", m["aborted"])


def server_restarted(m: dict) -> Optional[Flag]:
    """A worker of the server exited during the round and another took its place: a worker
    crashed and was restarted (nginx's master starts a new one at once). A worker that leaves
    without a replacement is a server shrinking its pool (apache2's event MPM ends the children it
    has more of than it keeps spare) and is not flagged, even in a round with failed requests:
    those have other causes."""
    window = m["server"]
    if window["crashed"] or not (window["workers_exited"] and window["workers_started"]):
        return None
    errors = m["errors_total"] or 0
    failed = [f"{errors:,} request{'s' if errors != 1 else ''} failed in the round"] if errors else []
    return Flag("server_restarted", "; ".join(window["events"] + failed))


def errors(m: Report, max_errors: float, server: str, at: str) -> Optional[Flag]:
    """More of the round's requests were not served than the plan's `max_errors` allows: answers
    with another status than expected, and failed requests (the engine's error share). Named with
    the share and its main kinds, e.g. "apache2-prefork answered 7.0% of requests with 503 at
    1,000 connections". A client that cannot tell its served answers (wrk counts 2xx and 3xx
    together) is judged on what it does count, its 4xx and 5xx and its errors, as "at least"."""
    share = engine.goodput(m).error_share
    kinds = _error_kinds(m)
    attempts = (m["requests"]["completed"] or 0) + (m["errors_total"] or 0)
    least = ""
    if share is None:
        share, least = (sum(n for _, n in kinds) / attempts if attempts else 0.0), "at least "
    if share <= max_errors:
        return None
    if not attempts:
        return Flag("errors", f"{server} answered no request at {at}")
    said = [f"{n / attempts:.1%} {kind}" for kind, n in kinds[:3]]
    what = " and ".join([", ".join(said[:-1]), said[-1]] if len(said) > 1 else said)
    if len(kinds) == 1 and kinds[0][0].startswith("with "):
        # One status alone: the sentence a reader says, "answered 7.0% of requests with 503".
        return Flag("errors", f"{server} answered {least}{share:.1%} of requests {kinds[0][0]} at {at}")
    return Flag(
        "errors",
        f"{server} did not serve {least}{share:.1%} of requests at {at} (max_errors {max_errors:.1%}): {what}",
    )


# The status groups the client tools count in place of codes, as a sentence names them.
TOOL_GROUPS = {"non_2xx": "a status other than 2xx", "non_2xx_3xx": "a 4xx or 5xx status"}


def _error_kinds(m: Report) -> List[Tuple[str, int]]:
    """What the round's requests that were not served got, most first: "with 503" for each
    unexpected status (a client tool's status classes or groups other than 2xx and 3xx, where it
    counted no codes), "failed (timeout)" for each error class (a tool's errors as one: its own
    groups overlap)."""
    statuses = dict(m["requests"]["unexpected_statuses"] or {})
    if not statuses:
        statuses = {k: v for k, v in m["status"].items() if v and k not in ("1xx", "2xx", "3xx", "other")}
    if m["client"].get("tool"):
        errors = {"failed": m["errors_total"] or 0}
    else:
        errors = {k.replace("_", " "): n for k, n in m["errors"].items()}
    kinds = [(f"with {TOOL_GROUPS.get(k, k)}", n) for k, n in statuses.items()]
    kinds += [(f"failed ({k})" if k != "failed" else k, n) for k, n in errors.items() if n]
    return sorted(kinds, key=lambda kind: -kind[1])


def noisy(values: Sequence[float]) -> Optional[Flag]:
    """Rounds of one level disagree: coefficient of variation of their requests/s above 5%."""
    if len(values) < 2:
        return None
    s = LevelStats.of(values)
    if s.cv <= NOISY_CV:
        return None
    return Flag(
        "noisy",
        f"rounds vary by {s.cv:.1%} (coefficient of variation > {NOISY_CV:.0%}): {s.min:,.0f} to {s.max:,.0f} req/s",
    )


def needs_more_rounds(values: Sequence[float], max_rounds: int) -> bool:
    """For rounds = "auto": as the Phoronix Test Suite's dynamic run count, keep adding rounds
    until the cv drops below 2.5%, judged on at least 3 values, and never beyond max_rounds.

    `values` are the throughputs of the level's rounds so far, those a resumed level had stored
    included; while fewer than 3, the cv cannot be judged yet, so the answer is yes until the cap.
    """
    if len(values) >= max_rounds:
        return False
    if len(values) < AUTO_MIN_ROUNDS:
        return True
    return LevelStats.of(values).cv >= AUTO_CV


def merged(flags: Sequence[Optional[Flag]]) -> List[Flag]:
    """One flag per kind, reasons joined: a level is saturated once, for every reason it is."""
    by_kind: dict = {}
    for flag in flags:
        if flag is not None:
            by_kind.setdefault(flag.kind, []).append(flag.reason)
    return [Flag(kind, "; ".join(reasons)) for kind, reasons in by_kind.items()]


def cluster_level(measurement: dict, ceiling: Optional[float], against: str = "reference") -> List[Optional[Flag]]:
    """A cluster level's flags: the merged figures against the cluster's client `ceiling` (its
    throughput against the server `against`), each
    client host's saturation on its own (one saturated host distorts the whole level), and the
    hosts the level lacked."""
    flags = [clients_at_ceiling([measurement], ceiling, against)]
    flags += [client_host_saturated(part["host"], part["report"]) for part in measurement["hosts"]]
    if measurement["lost_hosts"]:
        flags.append(
            Flag(
                "partial",
                f"client host(s) {', '.join(measurement['lost_hosts'])} lost during "
                "the level: the figures are the other hosts' only",
            )
        )
    if measurement["absent_hosts"]:
        ran_on = ", ".join(h["host"] for h in measurement["hosts"])
        flags.append(
            Flag(
                "fewer_hosts",
                f"client host(s) {', '.join(measurement['absent_hosts'])} lost "
                f"earlier in the run: this level ran on {ran_on} only",
            )
        )
    return flags
