"""Discovery of memory files on a real file system: MEMORY.md, memory.md and memory/**/*.md,
each file once by its real path, hidden folders and symlinks out of the root left out."""

from __future__ import annotations

import os
from pathlib import Path

from mnemonist.ingest.memory_files import discover, is_memory_file, memory_folders


def make_tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "proj"
    outside = tmp_path / "elsewhere"
    (root / "memory" / "a" / "b").mkdir(parents=True)
    (root / "memory" / ".obsidian").mkdir()
    (root / "docs").mkdir()
    outside.mkdir()
    for rel in ("MEMORY.md", "memory.md", "README.md", "memory/top.md", "memory/a/b/deep.md",
                "memory/notes.txt", "memory/.draft.md", "memory/.obsidian/cache.md",
                "docs/guide.md"):
        (root / rel).write_text(f"# {rel}\n")
    (outside / "secret.md").write_text("# not ours\n")
    (root / "memory" / "again.md").symlink_to(root / "MEMORY.md")  # inside: same file
    (root / "memory" / "out.md").symlink_to(outside / "secret.md")  # outside: skipped
    (root / "memory" / "guides").symlink_to(root / "docs")  # a folder inside: followed
    (root / "memory" / "far").symlink_to(outside)  # a folder outside: skipped
    (root / "memory" / "loop").symlink_to(root / "memory")  # a cycle: each folder once
    return root, outside


def test_discovery_finds_each_memory_file_once(tmp_path):
    root, _ = make_tree(tmp_path)
    real = os.path.realpath(root)
    found = discover(real)
    assert found == sorted(os.path.join(real, rel) for rel in (
        "MEMORY.md", "memory.md", "memory/top.md", "memory/a/b/deep.md", "docs/guide.md"))
    assert discover(str(tmp_path / "missing")) == []


def test_a_root_reached_through_a_symlink_gives_the_same_real_paths(tmp_path):
    root, _ = make_tree(tmp_path)
    link = tmp_path / "link-to-proj"
    link.symlink_to(root)
    assert discover(os.path.realpath(link)) == discover(os.path.realpath(root))


def test_memory_folders_and_names(tmp_path):
    root, _ = make_tree(tmp_path)
    real = os.path.realpath(root)
    folders = set(memory_folders(real))
    assert folders == {os.path.join(real, p) for p in
                       ("memory", "memory/a", "memory/a/b", "docs")}
    assert is_memory_file(os.path.join(real, "MEMORY.md"), real)
    assert is_memory_file(os.path.join(real, "memory", "x", "y.md"), real)
    assert not is_memory_file(os.path.join(real, "README.md"), real)
    assert not is_memory_file(os.path.join(real, "memory", ".hidden", "y.md"), real)
    assert not is_memory_file(os.path.join(real, "memory", "y.txt"), real)
    assert not is_memory_file(str(tmp_path / "elsewhere" / "MEMORY.md"), real)
