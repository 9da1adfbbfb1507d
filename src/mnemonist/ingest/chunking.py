"""Overlapping chunks of a long text (document ingest). Pure, no I/O.

A text no longer than `size` is one chunk. Otherwise each window is at most `size` characters
and ends, by preference, at a paragraph break, then a line break, then the end of a sentence,
then any whitespace, found in the second half of the window; with none there it is cut at
`size`. The next window starts `overlap` characters before the previous end, moved forward to
the next word start when one lies inside the overlap, so that the windows share at most
`overlap` characters and together cover the whole text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: boundary patterns in order of preference; a match ends the chunk at match.end()
_BOUNDARIES = (
    re.compile(r"\n[ \t]*\n\s*"),  # paragraph
    re.compile(r"\n\s*"),  # line
    re.compile(r"[.!?;:…。！？][\"')\]»”’]*\s+"),  # sentence
    re.compile(r"\s+"),  # word
)


@dataclass(frozen=True)
class Chunk:
    index: int
    start: int
    end: int
    text: str


def _break_at(text: str, start: int, hard_end: int, earliest: int) -> int:
    """The preferred end of the window [start, hard_end): a boundary at or after `earliest`."""
    window = text[earliest:hard_end]
    for pattern in _BOUNDARIES:
        last = None
        for last in pattern.finditer(window):  # noqa: B007 - we want the last match
            pass
        if last is not None and earliest + last.end() > start:
            return earliest + last.end()
    return hard_end


def _next_start(text: str, end: int, overlap: int) -> int:
    """`overlap` characters back from `end`, moved forward to a word start inside the overlap."""
    start = end - overlap
    if overlap == 0 or start <= 0 or text[start - 1].isspace():
        return max(start, 0)
    for i in range(start, end):
        if text[i].isspace():
            j = i
            while j < end and text[j].isspace():
                j += 1
            return j
    return start  # one long word: cut inside it


def chunk_text(text: str, size: int, overlap: int) -> list[Chunk]:
    """Split `text` into windows of at most `size` characters sharing at most `overlap`."""
    if size < 1:
        raise ValueError("size must be at least 1")
    if not 0 <= overlap < size:
        raise ValueError("overlap must be at least 0 and smaller than size")
    n = len(text)
    if n <= size:
        return [Chunk(0, 0, n, text)] if n else []
    chunks: list[Chunk] = []
    start = 0
    while True:
        hard_end = start + size
        if hard_end >= n:
            chunks.append(Chunk(len(chunks), start, n, text[start:n]))
            return chunks
        # the window must outrun the overlap, or the next one would not move forward
        earliest = start + max(size // 2, overlap + 1)
        end = _break_at(text, start, hard_end, min(earliest, hard_end))
        if end - start <= overlap:
            end = hard_end
        chunks.append(Chunk(len(chunks), start, end, text[start:end]))
        start = _next_start(text, end, overlap)
