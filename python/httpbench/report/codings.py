"""What cells that asked a content coding really sent: the clause a sentence comparing two of them
adds, so that a ratio between a server that served br and one that answered identity is never
read as like for like ("; both sent br for 69% of answers"), and the chart of their codings."""

from __future__ import annotations

from typing import Dict

import altair as alt

from httpbench.report.marks import WIDE, Chart, Measured
from httpbench.results.model import CellResult


def clause(a: CellResult, b: CellResult, a_name: str, b_name: str) -> str:
    """ "; both sent br for 69% of answers ..." for two cells that asked a coding, else ""."""
    shares = (a.coded_share, b.coded_share)
    if a.encoding != b.encoding or None in shares:
        return ""
    # A share is of answers, and a site's media come uncompressed by design: shown to the
    # percent, two shares that round alike are alike.
    if f"{shares[0]:.0%}" == f"{shares[1]:.0%}":
        # 999 of 1,000 also rounds to 100%: "every answer" only when neither cell sent one otherwise.
        every = "every answer" if min(shares) == 1 else f"{shares[0]:.0%} of answers"
        every = "over 99% of answers" if every == "100% of answers" else every
        return f"; both sent {a.encoding} for {every}"
    return f"; {a_name} sent {a.encoding} for {shares[0]:.0%} of answers, {b_name} for {shares[1]:.0%}"


def chart(m: Measured) -> Chart:
    """Per cell that asked a coding, its answers' shares by the coding they came in (all its
    levels or probes), with their bytes on the wire against decoded."""
    rows = []
    for cell in (c for r in m.runs for c in r.measured if c.encoding is not None):
        sent: Dict[str, Dict[str, int]] = {}
        for lv in cell.levels:
            for name, e in lv.encodings.items():
                mine = sent.setdefault(name, {"answers": 0, "bytes": 0, "decoded": 0})
                mine["answers"] += e["answers"]
                mine["bytes"] += e.get("bytes") or 0
                mine["decoded"] += e.get("decoded_bytes") or 0
        total = sum(s["answers"] for s in sent.values())
        for name, s in sent.items():
            if s["answers"]:
                rows.append(
                    {
                        "series": m.label.get(id(cell), cell.series),
                        "group": cell.group,
                        "sent": name,
                        "share": s["answers"] / total,
                        "answers": s["answers"],
                        "wire_mb": s["bytes"] / 1e6,
                        "decoded_mb": s["decoded"] / 1e6,
                    }
                )
    spec = (
        alt.Chart(alt.Data(values=rows))
        .mark_bar()
        .encode(
            x=alt.X(
                "sum(share):Q", title="share of answers", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])
            ),
            y=alt.Y("series:N", title=None),
            color=alt.Color("sent:N", title="coding sent"),
            tooltip=[
                alt.Tooltip("series:N"),
                alt.Tooltip("sent:N", title="coding sent"),
                alt.Tooltip("share:Q", format=".1%"),
                alt.Tooltip("answers:Q", format=","),
                alt.Tooltip("wire_mb:Q", title="bodies on the wire (MB)", format=",.1f"),
                alt.Tooltip("decoded_mb:Q", title="decoded (MB)", format=",.1f"),
            ],
        )
        .properties(width=WIDE)
        .facet(
            row=alt.Row("group:N", title=None, header=alt.Header(labelAngle=0, labelOrient="top", labelAnchor="start"))
        )
        .resolve_scale(y="independent")
    )
    return Chart(
        "encodings",
        "Codings sent, cells that asked one",
        spec,
        "Each cell's answers by the content coding they came in, over all its levels or probes. A cell that asked br "
        "and got identity for everything ignored it (flagged not_encoded, not ranked); a site's fonts and images come "
        "uncompressed by design. The tooltip gives the bodies' bytes on the wire against decoded.",
    )
