"""The wheel holds everything mnemonist reads at run time, not only its Python files.

A wheel is built from a copy of the project (`pip wheel --no-deps`: what a release does) and
installed with `--no-deps` into a fresh virtual environment; the dependencies come from this
test's own environment through a `.pth` file (its site-packages appended to the path: its
editable mnemonist is not, so the wheel's is the one imported). Then the installed
`mnemonist` runs, and the data files shipped beside the modules are read from the install.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import mnemonist

ROOT = Path(__file__).resolve().parent.parent


def _run(*cmd: str | Path, **kw) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600,
                          **kw)
    assert done.returncode == 0, f"{cmd}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    wheels = base / "wheels"
    _run(sys.executable, "-m", "pip", "wheel", source, "--no-deps", "-w", wheels)
    [wheel] = wheels.glob("mnemonist-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "mnemonist/search/relevance_model.json" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    venv = base / "venv"
    _run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
                .stdout.strip())
    _run(python, "-m", "pip", "install", "--no-deps", "--no-index", wheel)
    (site / "project-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv


def test_the_installed_command_runs(installed: Path) -> None:
    out = _run(installed / "bin" / "mnemonist", "--version", cwd=installed)
    assert out.stdout.strip() == f"mnemonist {mnemonist.__version__}"
    help_text = _run(installed / "bin" / "mnemonist", "--help", cwd=installed).stdout
    assert "remember" in help_text and "recall" in help_text


def test_the_packaged_relevance_model_is_read_from_the_install(installed: Path) -> None:
    probe = (
        "import json, mnemonist\n"
        "from mnemonist.search import relevance\n"
        "model = relevance.load_model()\n"
        "print(json.dumps({'module': mnemonist.__file__, 'path': str(relevance.MODEL_PATH),"
        " 'query_features': len(relevance.QUERY_FEATURES),"
        " 'loaded': type(model).__name__}))\n"
    )
    out = json.loads(_run(installed / "bin" / "python", "-c", probe, cwd=installed).stdout)
    assert out["module"].startswith(str(installed)), out  # the wheel's, not the source tree's
    assert out["path"].startswith(str(installed)) and Path(out["path"]).is_file()
    assert out["loaded"] == "RelevanceModel"
