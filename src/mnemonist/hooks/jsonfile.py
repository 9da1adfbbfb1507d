"""JSON settings files edited in place: read with key order kept, written back in the file's
own style (indent, ASCII escaping, final newline) so that an edit undone gives the original
bytes; written atomically (temporary file + rename, through a symlink to its target) with
the previous version kept as `<name>.bak`."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class SettingsError(Exception):
    """The file is not JSON or not shaped as expected; nothing was written."""


@dataclass(frozen=True)
class Style:
    indent: int | str = 2
    ensure_ascii: bool = False
    newline: bool = True

    def dumps(self, data: Any) -> str:
        text = json.dumps(data, indent=self.indent, ensure_ascii=self.ensure_ascii)
        return text + ("\n" if self.newline else "")


def _indent_of(text: str) -> int | str:
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def detect_style(text: str, data: Any) -> Style:
    """The style that reproduces `text` exactly, else the closest one."""
    newline = text.endswith("\n")
    indent = _indent_of(text)
    for ensure_ascii in (False, True):
        style = Style(indent, ensure_ascii, newline)
        if style.dumps(data) == text:
            return style
    return Style(indent, False, newline)


def load(path: Path) -> tuple[dict[str, Any], Style, bool]:
    """(data, style, existed); a missing or empty file is an empty object."""
    if not path.exists():
        return {}, Style(), False
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}, Style(), True
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SettingsError(f"{path} is not valid JSON ({exc}); fix it first") from exc
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: the top level must be a JSON object")
    return data, detect_style(text, data), True


def write_atomic(path: Path, text: str) -> Path:
    """Replace the file's content atomically; returns the path of the backup (or of the file
    when there was nothing to back up)."""
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    backup = target.with_name(target.name + ".bak")
    mode = 0o600
    if target.exists():
        shutil.copy2(target, backup)
        mode = target.stat().st_mode & 0o777
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return backup if backup.exists() else target


def save(path: Path, data: dict[str, Any], style: Style) -> None:
    write_atomic(path, style.dumps(data))
