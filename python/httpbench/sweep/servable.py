"""Which of a plan's cells their servers can serve as the plan asks: over its protocol (TLS as its
[tls] says, HTTP/2), PHP for a PHP workload, and the content coding a cell asks in its profile.
A server the plan or --servers names is refused in one line, and so is a plan none of whose
cells can be served; one that is there because it is installed only loses those cells, and a
note says so."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from httpbench import servers
from httpbench.plan.model import Cell, Plan, events_label
from httpbench.plan.protocol import uses_tls
from httpbench.servers import ServerProfile, Site, SiteTLS
from httpbench.servers.operate import OperationUnsupported, lacks


def refusal(plan: Plan, server: str, protocol: str) -> Optional[str]:
    """Why `server` cannot serve `protocol` as `plan` asks; None when it can."""
    adapter = plan.adapter(server)
    tls = SiteTLS(Path(), Path(), Path(), plan.tls.key, plan.tls.version)
    return (adapter.tls_refusal(tls) if uses_tls(protocol) else None) or adapter.protocol_refusal(protocol)


def coding_refusal(plan: Plan, cell: Cell) -> Optional[str]:
    """Why `cell`'s server, in its profile, cannot serve the coding the cell asks; None when it
    can."""
    if cell.encoding in (None, "identity"):
        return None
    site = Site(Path(), Path(), 0, encoding=cell.encoding, precompressed=cell.workload.precompressed(cell.encoding))
    return plan.adapter(cell.server).encoding_refusal(site, ServerProfile(cell.profile))


def operation_refusal(plan: Plan, cell: Cell) -> Optional[str]:
    """Why `cell`'s server cannot perform every action of the cell's events
    (docs/servers-operations.md); None when it can. A server is never restarted under another
    action's name."""
    adapter = plan.adapter(cell.server)
    lacking = next((e.action for e in cell.events if e.action not in adapter.operations), None)
    return lacks(adapter, lacking) + ": drop that [[event]] or the server" if lacking else None


def cells(
    plan: Plan, cells: Sequence[Cell], named: bool, php: Mapping[str, Optional[str]]
) -> Tuple[List[Cell], List[str]]:
    """The `cells` their servers can serve, and why a server lost cells, one line each (said when
    the run starts). `named`: the plan or --servers named the servers; `php`: why each server
    cannot run PHP where it runs (None: it can)."""
    refused: Dict[Cell, Tuple[str, str]] = {}  # cell -> (what it needs, why the server cannot)
    for c in cells:
        why = refusal(plan, c.server, c.protocol)
        if why:
            refused[c] = (f"{c.protocol} cells", why)
        elif c.workload.php and php[c.server]:
            refused[c] = ("PHP cells", f"workload {c.workload.label} runs PHP scripts: {php[c.server]}")
        elif coding := coding_refusal(plan, c):
            refused[c] = (f"{c.encoding} cells", coding)
        elif operation := operation_refusal(plan, c):
            refused[c] = (f"{events_label(c.events)} cells", operation)
    if refused and (named or len(refused) == len(cells)):
        cell, (what, why) = next(iter(refused.items()))
        if what == "PHP cells":
            raise servers.PHPUnsupported(why)
        if what == f"{cell.encoding} cells":
            raise servers.EncodingUnsupported(why)
        if what == f"{events_label(cell.events)} cells":
            raise OperationUnsupported(why)
        raise (servers.TLSUnsupported if cell.protocol == "https" else servers.ProtocolUnsupported)(why)
    notes: Dict[Tuple[str, str], Tuple[str, List[str]]] = {}
    for c, (what, why) in refused.items():
        notes.setdefault((c.server, what), (why, []))[1].append(c.workload.label)
    left_out = []
    for (server, what), (why, labels) in notes.items():
        if what == "PHP cells":
            # One note for all of a server's PHP workloads: the reason is its PHP's, not theirs.
            what, why = f"PHP cells ({', '.join(dict.fromkeys(labels))})", php[server]
        left_out.append(f"{server}: no {what}: {why}")
    return [c for c in cells if c not in refused], left_out
