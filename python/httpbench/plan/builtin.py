"""The plans a user names: the built-in ones (`plans/*.toml`, beside this module) by name, or a
plan file by its path, each parsed by plan.toml into a `Plan`."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional

from httpbench.plan.model import Plan, PlanError
from httpbench.plan.toml import read

PLANS_DIR = Path(__file__).resolve().parent / "plans"


@lru_cache(maxsize=None)
def _builtin() -> Dict[str, Plan]:
    plans = {}
    for path in sorted(PLANS_DIR.glob("*.toml")):
        plans[path.stem] = parse(path.read_text(encoding="utf-8"), path.name, base_dir=path.parent)
    # quick first: it is the default
    return dict(sorted(plans.items(), key=lambda item: (item[0] != "quick", item[0])))


def builtin() -> Dict[str, Plan]:
    """name -> plan, for every plan shipped in httpbench/plans/."""
    return dict(_builtin())


def load(name_or_path: str) -> Plan:
    """A built-in plan by name, or a plan file; PlanError on anything wrong."""
    plans = _builtin()
    if name_or_path in plans:
        return plans[name_or_path]
    path = Path(name_or_path)
    if not path.is_file():
        raise PlanError(f"no plan {name_or_path!r}: it is neither a built-in plan ({', '.join(plans)}) nor a file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError(f"{name_or_path}: cannot read it: {e}") from None
    return parse(text, name_or_path, base_dir=path.parent)


def listing() -> List[str]:
    """One line per built-in plan: name and description."""
    plans = _builtin()
    width = max(map(len, plans))
    return [f"{name:<{width}}  {plan.description}" for name, plan in plans.items()]


def print_builtin() -> int:
    """`httpbench plans`."""
    print("\n".join(listing()))
    return 0


def parse(text: str, source: str, base_dir: Optional[Path] = None) -> Plan:
    """A plan from its TOML `text`; `source` names it in messages; relative paths in it (files,
    docroots, config files) are relative to `base_dir` (default: the current directory)."""
    return read(text, source, base_dir)
