"""`./dev run CMD` runs CMD inside the project's virtual environment, as the README promises
(`./dev run mnemonist ...`), even when the venv's bin folder is not on PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mnemonist

ROOT = Path(__file__).resolve().parent.parent


def test_dev_run_finds_the_projects_own_commands_without_them_on_path():
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and Path(p).resolve() != Path(venv_bin).resolve())
    env = {**os.environ, "PATH": path or "/usr/bin:/bin"}
    env.pop("VIRTUAL_ENV", None)
    out = subprocess.run([str(ROOT / "dev"), "run", "mnemonist", "--version"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"mnemonist {mnemonist.__version__}"
