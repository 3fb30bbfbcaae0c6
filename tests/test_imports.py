"""The import contract (pyproject.toml's [tool.importlinter]): the suite's rooms import only
downward, and `lint-imports`, which `make lint` runs, fails when one imports upward."""

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

from conftest import ROOT

# Where pip put the package's scripts: `lint-imports` came with the test extras.
LINT_IMPORTS = Path(sysconfig.get_path("scripts")) / "lint-imports"


def lint_imports(source):
    """`lint-imports` over the package under `source` (a folder holding `httpbench/`)."""
    return subprocess.run(
        [
            str(LINT_IMPORTS),
            "--config",
            str(ROOT / "pyproject.toml"),
            "--no-cache",
        ],
        cwd=source,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(source)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_suite_keeps_its_import_contract():
    done = lint_imports(ROOT / "python")
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_import_running_back_up_breaks_the_contract(tmp_path):
    shutil.copytree(ROOT / "python" / "httpbench", tmp_path / "httpbench", ignore=shutil.ignore_patterns("*.so"))
    # What the server monitor must never do: reach up to the command line.
    (tmp_path / "httpbench" / "observe" / "upward.py").write_text("from httpbench.cli import console\n")
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "rooms import only downward BROKEN" in done.stdout
    assert "httpbench.observe.upward -> httpbench.cli.console" in done.stdout
