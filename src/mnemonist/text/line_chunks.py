"""Line-ranged chunks of a memory file (MEMORY.md, memory/**/*.md). Pure, no I/O.

A chunk is a run of whole lines, 1-based and inclusive, whose text is exactly those lines
joined by "\\n": what `sed -n START,ENDp FILE` prints without its last newline. Sizes are in
estimated tokens at 4 characters per token; a chunk holds at most `tokens * 4` characters.

How the lines are grouped: every boundary between two lines has a strength that depends only
on those two lines — strongest before a heading, then after a blank line, then the rest, ties
broken by the CRC-32 of the two lines. The file is split at its strongest boundary, and each
part again at its own strongest, until every part fits in `(tokens - overlap) * 4`
characters. Each part becomes a chunk, preceded by up to `overlap * 4` characters of the
whole lines before it (its overlap with the previous chunk). A line longer than the limit is
cut into pieces of the limit, each its own chunk with `start_line == end_line`, without
overlap.

Why not fill each chunk up to the limit and start the next one there: then every boundary
depends on the length of everything before it, so one edit that changes a line's length can
move every later boundary, and the rest of the file is embedded again. Here a part that does
not contain the edited line keeps its boundaries (they are chosen by content, not by
position), so an edit changes the chunk that holds the line, the next one when the line is in
their overlap, and rarely a few around them. Measured over every one-line edit (a line made
longer, shorter, or changed in place) of generated files, the share of edits that change at
most two chunks: sectioned markdown 96–100 % (worst case 4 chunks; filling to the limit:
83–96 %, worst 15), prose paragraphs 97 % (worst 4; filling 80–89 %, worst 9), one long list
without blank lines 86–92 % (worst 5; filling 88–95 %, worst 21). The price: chunks hold
55–65 % of the limit on average, against nearly all of it when filled.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class LineChunk:
    index: int
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str


def split_lines(text: str) -> list[str]:
    """The lines as `sed` numbers them: split on "\\n" only (a "\\r" stays in its line); a
    final newline ends the last line rather than starting an empty one."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _strength(before: str, after: str) -> tuple[int, int]:
    """How good a place to split between these two lines is (higher is better)."""
    level = 2 if after.startswith("#") else 1 if not before.strip() else 0
    pair = f"{before}\n{after}".encode("utf-8", "surrogatepass")
    return level, zlib.crc32(pair)


def chunk_lines(
    text: str, tokens: int = 400, overlap: int = 80, max_chars: int | None = None
) -> list[LineChunk]:
    """Chunks of `text` (see the module docstring). `max_chars`, when given, caps the chunk
    size below `tokens * 4` (a memory cannot be longer than memory.max_content_chars)."""
    if tokens < 1 or overlap < 0 or overlap >= tokens:
        raise ValueError("need 0 <= overlap < tokens")
    limit = tokens * CHARS_PER_TOKEN
    if max_chars is not None:
        limit = max(1, min(limit, max_chars))
    overlap_chars = min(overlap * CHARS_PER_TOKEN, limit - 1)
    part_limit = max(1, limit - overlap_chars - 1)
    lines = split_lines(text)
    out: list[LineChunk] = []
    floor = 0  # a chunk starts after the start of the one before (never contains it whole)
    for lo, hi in _parts(lines, part_limit):
        if hi - lo == 1 and len(lines[lo]) > limit:  # a long line: pieces, no overlap
            line = lines[lo]
            for k in range(0, len(line), limit):
                out.append(LineChunk(len(out), lo + 1, lo + 1, line[k : k + limit]))
            floor = hi
            continue
        start = _overlap_start(lines, lo, hi, overlap_chars, limit, floor)
        out.append(LineChunk(len(out), start + 1, hi, "\n".join(lines[start:hi])))
        floor = start + 1
    return out


def _parts(lines: list[str], part_limit: int) -> list[tuple[int, int]]:
    """[lo, hi) line ranges, in order, each of at most `part_limit` characters (or one line),
    made by splitting at the strongest boundary until every range fits."""
    n = len(lines)
    if n == 0:
        return []
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    strength = [(0, 0)] + [_strength(lines[j - 1], lines[j]) for j in range(1, n)]
    out: list[tuple[int, int]] = []
    stack = [(0, n)]
    while stack:
        lo, hi = stack.pop()
        if hi - lo == 1 or offsets[hi] - offsets[lo] - 1 <= part_limit:
            out.append((lo, hi))
            continue
        cut = max(range(lo + 1, hi), key=strength.__getitem__)
        stack.append((cut, hi))
        stack.append((lo, cut))
    return out


def _overlap_start(lines: list[str], lo: int, hi: int, overlap_chars: int, limit: int,
                   floor: int) -> int:
    """The first line of the chunk whose own part is [lo, hi): whole lines before `lo` (not
    before `floor`), at most `overlap_chars` of them, and no more than keeps the chunk within
    `limit`."""
    own = sum(len(line) + 1 for line in lines[lo:hi]) - 1
    budget = min(overlap_chars, limit - own)  # each line adds itself and a newline
    start, used = lo, 0
    while start > floor:
        cost = used + len(lines[start - 1]) + 1
        if cost > budget or len(lines[start - 1]) > limit:
            break
        used = cost
        start -= 1
    return start
