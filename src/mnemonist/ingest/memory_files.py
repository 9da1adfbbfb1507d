"""Finding memory files under a project root, and reading one (file-system I/O, no database).

A root's memory files are `MEMORY.md` and `memory.md` in the root itself and every `*.md`
under `root/memory/`, at any depth. Each file is known by its real path (symlinks resolved),
so a file reachable twice (a symlink, or `MEMORY.md` and `memory.md` on a case-insensitive
disk) is indexed once. A symlink whose target lies outside the root is skipped, and so are
hidden files and folders (`.git`, `.obsidian`, editor swap files).
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass

ROOT_FILES = ("MEMORY.md", "memory.md")
MEMORY_DIR = "memory"
SUFFIX = ".md"


@dataclass(frozen=True)
class FileRoot:
    """A project root: its real path, the project its chunks belong to, and where it came
    from (`config`: files.roots; `session`: a hook's working folder)."""

    path: str
    project: str
    origin: str


def session_root_refusal(root: str) -> str | None:
    """Why the folder a session started in may not become a project root that file sync
    indexes (None: it may). A session's `cwd` is whatever a hook sent: only a folder that
    looks like a project, in the user's own part of the disk, is indexed. It must

    - hold a `.git`, a `MEMORY.md` / `memory.md` or a `memory/` folder;
    - lie under the user's home folder (`~`), and not be the home itself;
    - not be `/`, the system's temporary folder or anything in it (unless the home itself
      lies there), nor writable by every user.

    Folders listed in `files.roots` are the user's own choice and are not checked."""
    real = os.path.realpath(root)
    home = os.path.realpath(os.path.expanduser("~"))
    temp = os.path.realpath(tempfile.gettempdir())
    if os.path.dirname(real) == real:
        return "it is the root of the file system"
    if real == home:
        return "it is the home folder itself"
    if real == temp or (within(real, temp) and not within(home, temp)):
        return "it is in the system's temporary folder"
    if not within(real, home):
        return f"it is not under the home folder {home}"
    try:
        if os.stat(real).st_mode & stat.S_IWOTH:
            return "every user may write into it"
    except OSError as exc:
        return f"it cannot be read: {exc.strerror or exc}"
    marks = (".git", *ROOT_FILES, MEMORY_DIR)
    if not any(os.path.lexists(os.path.join(real, m)) for m in marks):
        return "it holds no .git, MEMORY.md or memory/ folder"
    return None


def within(path: str, root: str) -> bool:
    """Is the real path `path` the folder `root` or inside it?"""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def is_memory_file(path: str, root: str) -> bool:
    """Would discovery pick this path (not resolved) under this root, by its name alone?"""
    rel = os.path.relpath(path, root)
    if rel.startswith(os.pardir) or os.path.isabs(rel):
        return False
    parts = rel.split(os.sep)
    if len(parts) == 1:
        return parts[0] in ROOT_FILES
    return (parts[0] == MEMORY_DIR and parts[-1].endswith(SUFFIX)
            and not any(p.startswith(".") for p in parts[1:]))


def discover(root: str) -> list[str]:
    """The real paths of the memory files under `root` (a real path), sorted, each once."""
    if not os.path.isdir(root):
        return []
    found: dict[str, None] = {}
    seen_ids: set[tuple[int, int]] = set()

    def add(candidate: str) -> None:
        try:
            real = os.path.realpath(candidate)
            if not within(real, root) or not os.path.isfile(real):
                return
            st = os.stat(real)
        except OSError:
            return
        ident = (st.st_dev, st.st_ino)
        if ident in seen_ids:
            return
        seen_ids.add(ident)
        found[real] = None

    for name in ROOT_FILES:
        add(os.path.join(root, name))
    top = os.path.join(root, MEMORY_DIR)
    real_top = os.path.realpath(top)
    if os.path.isdir(top) and within(real_top, root):
        visited: set[str] = set()
        for folder in _folders(real_top, root, visited):
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") or not entry.name.endswith(SUFFIX):
                    continue
                add(entry.path)
    return sorted(found)


def memory_folders(root: str) -> list[str]:
    """`root/memory` and every folder under it that discovery reads (what the watcher
    watches besides the root itself)."""
    top = os.path.realpath(os.path.join(root, MEMORY_DIR))
    if not os.path.isdir(top) or not within(top, root):
        return []
    return list(_folders(top, root, set()))


def _folders(top: str, root: str, visited: set[str]):
    """`top` and its non-hidden sub-folders, depth first; symlinked folders are followed
    when they stay inside the root, each real folder once."""
    stack = [top]
    while stack:
        folder = stack.pop()
        if folder in visited:
            continue
        visited.add(folder)
        yield folder
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if not entry.is_dir(follow_symlinks=True):
                    continue
            except OSError:
                continue
            real = os.path.realpath(entry.path)
            if within(real, root) and real not in visited:
                stack.append(real)


@dataclass(frozen=True)
class FileBytes:
    data: bytes
    content_hash: str
    mtime_ns: int
    size: int


def stat_of(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def read_file(path: str, max_bytes: int) -> FileBytes | None:
    """The file's bytes and their sha256, or None when it is gone (other errors, such as a
    permission denied, raise OSError). Reads at most `max_bytes + 1` bytes: the caller
    refuses a larger file by its size."""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            data = fh.read(max_bytes + 1)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    size = len(data) if len(data) <= max_bytes else max(st.st_size, len(data))
    return FileBytes(data, hashlib.sha256(data).hexdigest(), st.st_mtime_ns, size)
