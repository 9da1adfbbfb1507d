"""Reading harness transcripts from disk: which files the daemon may read, the new lines of
a growing transcript, and its tail.

A hook request names the transcript file, and anyone who can reach the daemon can send one,
so a path is read only when it resolves — after symlinks — to a `.jsonl` / `.json` file
inside a harness's transcript folder (Claude Code's `~/.claude/projects`, Codex's
`~/.codex/sessions`, ...) or a folder the user configured (`hooks.transcriptRoots`). The path
must be absolute; `~` is not expanded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: where harnesses keep their session transcripts, under the user's home
HARNESS_FOLDERS = (
    ".claude/projects",
    ".config/claude/projects",
    ".codex/sessions",
    ".local/share/opencode",
)
SUFFIXES = (".jsonl", ".json")
TAIL_BYTES = 1 << 20


class TranscriptRefused(ValueError):
    """The path may not be read (outside the allowed folders, not a transcript file)."""


def allowed_roots(configured: list[str], home: str | None = None) -> list[Path]:
    """The real paths of the folders transcripts may be read from."""
    base = Path(home or os.path.expanduser("~"))
    roots = [base / f for f in HARNESS_FOLDERS] + [Path(r) for r in configured if r]
    out: list[Path] = []
    for r in roots:
        real = Path(os.path.realpath(r))
        if real not in out:
            out.append(real)
    return out


def resolve(path: str, roots: list[Path]) -> Path:
    """The real path of a transcript the daemon may read; raises TranscriptRefused."""
    if not path or not os.path.isabs(path):
        raise TranscriptRefused(f"transcript_path must be an absolute path: {path!r}")
    real = Path(os.path.realpath(path))
    if real.suffix.lower() not in SUFFIXES:
        raise TranscriptRefused(f"transcript_path is not a .jsonl transcript: {path}")
    if not any(real.is_relative_to(root) for root in roots):
        raise TranscriptRefused(
            f"transcript_path {path} is outside the harness transcript folders; add its folder"
            " to hooks.transcriptRoots to allow it")
    if not real.is_file():
        raise TranscriptRefused(f"no transcript file at {path}")
    return real


@dataclass
class Chunk:
    """Whole lines read from `start`: (line number, text) pairs and the offset after them."""

    lines: list[tuple[int, str]]
    end: int  # byte offset after the last line taken
    next_line: int  # number of the next line
    size: int  # the file's size when read


def take_lines(data: bytes, offset: int, first_line: int, *, final: bool,
               more: bool = False) -> Chunk:
    """The complete lines of `data` (read from byte `offset`, numbered from `first_line`). A
    last line with no newline is taken only when `final` (the session ended) and nothing
    more follows."""
    cut = data.rfind(b"\n") + 1
    if final and not more:
        cut = len(data)
    body = data[:cut]
    lines = [(first_line + i, raw.decode("utf-8", errors="replace"))
             for i, raw in enumerate(body.split(b"\n")) if raw.strip()]
    taken = body.count(b"\n") + (1 if body and not body.endswith(b"\n") else 0)
    return Chunk(lines, offset + len(body), first_line + taken, offset + len(data))


def read_new_lines(path: Path, offset: int, first_line: int, *, final: bool,
                   max_bytes: int) -> Chunk:
    """`take_lines` over a file from byte `offset`, at most `max_bytes` of it."""
    with path.open("rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        fh.seek(offset)
        data = fh.read(max_bytes)
    chunk = take_lines(data, offset, first_line, final=final,
                       more=offset + len(data) < size)
    chunk.size = size
    return chunk


def read_tail(path: Path, max_bytes: int = TAIL_BYTES) -> str:
    """The last whole lines of a transcript, at most `max_bytes` (the working state at the
    end of a session is there; reading it costs the same whatever the file's size)."""
    with path.open("rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        fh.seek(max(0, size - max_bytes))
        data = fh.read(max_bytes)
    if size > max_bytes:
        data = data[data.find(b"\n") + 1:]
    return data.decode("utf-8", errors="replace")
