"""The layer contracts of pyproject.toml ([tool.importlinter], docs/architecture.md) hold for
the code as it is, and `lint-imports` fails when a module breaks one: each case copies the
package into a temporary folder, adds one module that breaks one contract, and runs the real
contracts over the copy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(root: Path, src: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with the contracts of `root`/pyproject.toml over the package in `src`."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT), "--no-cache", "--no-logo",
                           "--config", str(root / "pyproject.toml")],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package and of pyproject.toml (the contracts), to break."""
    root = tmp_path_factory.mktemp("layers")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(ROOT / "src" / "mnemonist", root / "src" / "mnemonist",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return root


def test_the_project_keeps_every_contract() -> None:
    out = lint(ROOT, ROOT / "src")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_the_untouched_copy_keeps_every_contract(copy: Path) -> None:
    """The copy is read, not the installed package: the cases below fail for their module."""
    out = lint(copy, copy / "src")
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize(("module", "code", "contract", "shown"), [
    # the store may not reach up into search (store/postgres/fts.py once did)
    ("store/probe_up.py", "from mnemonist.search import hybrid\n",
     "Each layer imports only from the layers below it",
     "mnemonist.store.probe_up -> mnemonist.search.hybrid"),
    # the API may not import the faces built on it (it once mounted the dashboard itself)
    ("api/probe_up.py", "import mnemonist.dashboard\n",
     "Each layer imports only from the layers below it",
     "mnemonist.api.probe_up -> mnemonist.dashboard"),
    # siblings: the providers know nothing of the store (the write-lock flag is in guards/)
    ("providers/probe_side.py", "from mnemonist.store import db\n",
     "Each layer imports only from the layers below it",
     "mnemonist.providers.probe_side -> mnemonist.store.db"),
    # a face reaches the store only through the service, even where the layers allow it
    ("cli/probe_store.py", "def f():\n    from mnemonist.store.db import Database\n",
     "The faces reach storage, search and the pipeline only through the service",
     "mnemonist.cli.probe_store -> mnemonist.store.db"),
    # the hook runner stays light: no web stack
    ("hooks/probe_heavy.py", "import fastapi\n",
     "The hook runner and the HTTP client stay light: no service, web stack or model",
     "mnemonist.hooks.probe_heavy -> fastapi"),
    # a new package must be given its place in the layers (exhaustive)
    ("unplaced/__init__.py", "",
     "Each layer imports only from the layers below it",
     "not listed as layers: - mnemonist.unplaced"),
])
def test_a_module_that_breaks_a_contract_fails_the_check(
        copy: Path, module: str, code: str, contract: str, shown: str) -> None:
    path = copy / "src" / "mnemonist" / module
    path.parent.mkdir(exist_ok=True)
    path.write_text(code)
    try:
        out = lint(copy, copy / "src")
    finally:
        shutil.rmtree(path.parent) if module.endswith("__init__.py") else path.unlink()
    assert out.returncode != 0, out.stdout
    text = " ".join((out.stdout + out.stderr).split())
    assert f"{contract} BROKEN" in text, text
    assert shown in text, text
