"""``httpbench doctor``: is this host fit to benchmark a web server?

Each check reads the host facts the engine records with every run and says ``ok`` or ``warn``;
a warning says what to change and why. The doctor reports, it does not fail: the exit code is 0
even with warnings, since a run on an untuned host is still a valid (if bounded) measurement.
"""

import json
import re
from dataclasses import asdict, dataclass
from typing import Callable, List, Optional

from httpbench.load.engine import host_facts

# Below these, a high-concurrency or keep-alive-off run hits the limit before the server does.
MIN_SOMAXCONN = 4096
MIN_SYN_BACKLOG = 4096
MIN_LOCAL_PORTS = 28000
MIN_NOFILE = 65536


@dataclass
class Check:
    name: str
    status: str  # "ok" or "warn"
    message: str


def _ok(name: str, message: str) -> Check:
    return Check(name, "ok", message)


def _warn(name: str, message: str) -> Check:
    return Check(name, "warn", message)


def _int_sysctl(facts: dict, name: str) -> Optional[int]:
    value = facts["sysctls"].get(name)
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


def _unreadable(name: str) -> Check:
    return _warn(name, f"cannot read /proc/sys/{name.replace('.', '/')}; check it by hand")


def _at_least(facts: dict, name: str, minimum: int, suggest: int, why: str) -> Check:
    value = _int_sysctl(facts, name)
    if value is None:
        return _unreadable(name)
    if value < minimum:
        return _warn(name, f"{value}: run `sysctl -w {name}={suggest}`; {why}")
    return _ok(name, f"{value}")


def check_somaxconn(facts: dict) -> Check:
    return _at_least(
        facts,
        "net.core.somaxconn",
        MIN_SOMAXCONN,
        MIN_SOMAXCONN,
        "the kernel silently truncates every listen() backlog to this, so at high "
        "concurrency the accept queue overflows and connections are dropped",
    )


def check_port_range(facts: dict) -> Check:
    name = "net.ipv4.ip_local_port_range"
    value = facts["sysctls"].get(name)
    if value is None:
        return _unreadable(name)
    low, high = (int(v) for v in value.split())
    ports = high - low + 1
    if ports < MIN_LOCAL_PORTS:
        return _warn(
            name,
            f'{value} ({ports} ports): run `sysctl -w {name}="1024 65535"`; '
            "with keep-alive off every request takes a new source port that "
            "then waits 60 s in TIME_WAIT, so a fast run exhausts the range",
        )
    return _ok(name, f"{value} ({ports} ports)")


def check_tw_reuse(facts: dict) -> Check:
    name = "net.ipv4.tcp_tw_reuse"
    value = _int_sysctl(facts, name)
    if value is None:
        return _unreadable(name)
    if value == 2:
        return _ok(
            name,
            "2 (loopback only, the kernel default): fine with client and server on "
            f"this host; for a remote server run `sysctl -w {name}=1`",
        )
    if value == 1:
        return _ok(name, "1")
    return _warn(
        name,
        f"{value}: run `sysctl -w {name}=1`; it lets new outgoing connections "
        "reuse source ports still in TIME_WAIT, without which keep-alive-off runs "
        "run out of ports",
    )


def check_syn_backlog(facts: dict) -> Check:
    return _at_least(
        facts,
        "net.ipv4.tcp_max_syn_backlog",
        MIN_SYN_BACKLOG,
        2 * MIN_SYN_BACKLOG,
        "it caps half-open connections, and a connect burst beyond it is answered "
        "with SYN cookies or dropped, which skews connect latency",
    )


def _limit(value: Optional[int]) -> str:
    return "unlimited" if value is None else str(value)


def check_nofile(facts: dict) -> Check:
    name = "open files"
    soft, hard = facts["nofile_soft"], facts["nofile_hard"]
    if soft is None or soft >= MIN_NOFILE:
        return _ok(name, f"soft {_limit(soft)}, hard {_limit(hard)}")
    why = "each connection is a descriptor in the client and another in the server"
    if hard is None or hard >= MIN_NOFILE:
        return _warn(
            name,
            f"soft limit {soft}: run `ulimit -n {MIN_NOFILE}` in the shell that "
            f"starts the benchmark (the hard limit allows it); {why}",
        )
    return _warn(
        name,
        f"soft {soft}, hard {hard}: the hard limit can only be raised with "
        "CAP_SYS_RESOURCE (/etc/security/limits.conf, systemd LimitNOFILE=, "
        f"docker --ulimit nofile=); {why}, so with both on this host about "
        f"{hard // 2} connections fit",
    )


def check_io_uring(facts: dict) -> Check:
    name = "io_uring"
    if facts["io_uring_enabled"]:
        return _ok(name, "enabled")
    return _warn(
        name,
        "disabled for this process: the engine falls back to epoll, which costs "
        "more CPU per request; run `sysctl -w kernel.io_uring_disabled=0` to "
        "enable it",
    )


def check_cpus(facts: dict) -> Check:
    name = "cpus"
    allowed = len(facts["cpus_allowed"])
    if allowed < 2:
        return _warn(
            name,
            f"{allowed} usable of {facts['cpus']}: client and server cannot be "
            "pinned apart, so they compete for the CPU and the client's cost "
            "shows up in the server's numbers; use a host with 2 or more CPUs",
        )
    return _ok(name, f"{allowed} usable of {facts['cpus']}")


def check_tw_recycle(facts: dict) -> Check:
    name = "net.ipv4.tcp_tw_recycle"
    why = "never set it, whatever a tuning guide says: it broke clients behind NAT"
    match = re.match(r"(\d+)\.(\d+)", facts["kernel"])
    if match and (int(match[1]), int(match[2])) >= (4, 12):
        return _ok(name, f"removed in Linux 4.12, so absent here; {why}")
    return _warn(name, f"this kernel predates its removal in Linux 4.12: make sure it is 0; {why}")


CHECKS: List[Callable[[dict], Check]] = [
    check_somaxconn,
    check_port_range,
    check_tw_reuse,
    check_syn_backlog,
    check_nofile,
    check_io_uring,
    check_cpus,
    check_tw_recycle,
]


def host_line(facts: dict) -> str:
    """The host's hardware and system in one line, from `host_facts()` (bench/vs_peers' reports
    give it too)."""
    gib = facts["memory_bytes"] / 2**30
    return (
        f"{facts['cpu_model'] or 'unknown CPU'}, {facts['cpus']} CPUs, {gib:.1f} GiB, "
        f"{facts['distro'] or 'unknown distribution'}, Linux {facts['kernel']}"
    )


def main(as_json: bool = False) -> int:
    facts = host_facts()
    checks = [check(facts) for check in CHECKS]
    if as_json:
        print(json.dumps({"facts": facts, "checks": [asdict(c) for c in checks]}, indent=2))
    else:
        print(f"host  {facts['hostname']}: {host_line(facts)}")
        for c in checks:
            print(f"{c.status:<5} {c.name}: {c.message}")
    return 0
