"""What a sentence comparing two cells that asked a content coding adds: what each really sent,
so that a ratio between a server that served br and one that answered identity is never read as
like for like ("both sent br for 69% of answers, as verification found each file")."""

from __future__ import annotations

from httpbench.results.model import CellResult


def clause(a: CellResult, b: CellResult, a_name: str, b_name: str) -> str:
    """ "; both sent br for 69% of answers ..." for two cells that asked a coding, else ""."""
    shares = (a.coded_share, b.coded_share)
    if a.encoding != b.encoding or None in shares:
        return ""
    # A share is of answers, and a site's media come uncompressed by design: shown to the
    # percent, two shares that round alike are alike.
    if f"{shares[0]:.0%}" == f"{shares[1]:.0%}":
        every = "every answer" if shares[0] == 1 else f"{shares[0]:.0%} of answers"
        return f"; both sent {a.encoding} for {every}"
    return f"; {a_name} sent {a.encoding} for {shares[0]:.0%} of answers, {b_name} for {shares[1]:.0%}"
