"""Line chunks of memory files: properties over arbitrary texts (every chunk is whole lines,
exactly what `sed -n START,ENDp` prints; every line is covered; sizes and overlap hold), and
the locality that keeps re-embedding small after an edit, measured on generated files."""

from __future__ import annotations

import random
import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonist.text.line_chunks import CHARS_PER_TOKEN, chunk_lines, split_lines

LINE_CHARS = st.sampled_from([*"ab #-*\t\r.,:é漢", "word ", "## ", "- item "])
LINE = st.lists(LINE_CHARS, max_size=40).map("".join)
LONG_LINE = st.text(alphabet="xyz ", min_size=60, max_size=300)


@st.composite
def files(draw) -> str:
    lines = draw(st.lists(st.one_of(LINE, LINE, LINE, st.just(""), LONG_LINE), max_size=80))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


@st.composite
def sizes(draw) -> tuple[int, int]:
    tokens = draw(st.integers(2, 40))
    return tokens, draw(st.integers(0, tokens - 1))


@settings(max_examples=300, deadline=None)
@given(files(), sizes())
def test_chunks_are_whole_lines_cover_the_file_and_respect_the_sizes(text, size):
    tokens, overlap = size
    limit, overlap_chars = tokens * CHARS_PER_TOKEN, overlap * CHARS_PER_TOKEN
    lines = split_lines(text)
    chunks = chunk_lines(text, tokens, overlap)
    covered: set[int] = set()
    pieces: dict[int, list[str]] = {}
    previous = None
    for i, c in enumerate(chunks):
        assert c.index == i
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        assert len(c.text) <= limit
        if len(lines[c.start_line - 1]) > limit:  # a long line, cut into pieces
            assert c.start_line == c.end_line
            pieces.setdefault(c.start_line, []).append(c.text)
        else:
            assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
        if previous is not None:
            assert c.end_line > previous.end_line or c.start_line == c.end_line == (
                previous.end_line)
            assert c.start_line > previous.start_line or c.start_line == previous.start_line == (
                c.end_line)
            shared = lines[c.start_line - 1 : previous.end_line]
            if shared and c.start_line != c.end_line:
                assert len("\n".join(shared)) <= overlap_chars
        covered.update(range(c.start_line, c.end_line + 1))
        previous = c
    assert covered == set(range(1, len(lines) + 1))
    for number, parts in pieces.items():
        assert "".join(parts) == lines[number - 1]


@settings(max_examples=25, deadline=None)
@given(files())
def test_line_ranges_are_what_sed_prints(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("sed") / "MEMORY.md"
    path.write_bytes(text.encode("utf-8"))
    for c in chunk_lines(text, 12, 3):
        if c.start_line == c.end_line and len(c.text) < len(split_lines(text)[c.start_line - 1]):
            continue  # a piece of a long line
        printed = subprocess.run(["sed", "-n", f"{c.start_line},{c.end_line}p", str(path)],
                                 capture_output=True, check=True).stdout.decode("utf-8")
        assert printed.removesuffix("\n") == c.text


def test_a_file_is_split_at_headings_before_anything_else():
    sections = [f"# Section {i}\n\n" + "\n".join(f"- fact {i}.{k} " + "x" * 60
                                                  for k in range(8)) for i in range(6)]
    chunks = chunk_lines("\n\n".join(sections) + "\n", tokens=200, overlap=0)
    assert len(chunks) > 1
    assert all(c.text.startswith("# Section") for c in chunks)


def test_sizes_limits_and_degenerate_inputs():
    assert chunk_lines("") == []
    assert [c.text for c in chunk_lines("\n\n")] == ["\n"]
    one = chunk_lines("only line")
    assert [(c.start_line, c.end_line, c.text) for c in one] == [(1, 1, "only line")]
    long = chunk_lines("a" * 25 + "\nb\n", tokens=5, overlap=1)  # limit 20 characters
    assert [(c.start_line, c.end_line, c.text) for c in long] == [
        (1, 1, "a" * 20), (1, 1, "a" * 5), (2, 2, "b")]
    capped = chunk_lines("\n".join(f"line {i}" for i in range(200)), 400, 80, max_chars=100)
    assert max(len(c.text) for c in capped) <= 100
    for bad in ((10, 10), (10, 11), (0, 0), (10, -1)):
        try:
            chunk_lines("x", *bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad} accepted")


def _sectioned_notes(seed: int) -> list[str]:
    """Markdown as people keep notes: headings, blank lines, bullet lists of varied length."""
    rng = random.Random(seed)
    words = ["deploy", "staging", "postgres", "redis", "cache", "the", "on", "we", "use",
             "port", "tuesday", "backup", "release", "owner", "review", "token", "queue"]
    lines: list[str] = []
    for s in range(20):
        lines += [f"## Topic {s}", ""]
        lines += ["- " + " ".join(rng.choice(words) for _ in range(rng.randint(4, 24)))
                  for _ in range(rng.randint(2, 9))]
        lines.append("")
    return lines


def test_an_edit_changes_the_chunks_around_it_only():
    """Every one-line edit of a notes file (longer, shorter, changed in place): at least 95 %
    change at most two chunks, none more than four; filling each chunk to the limit instead
    cascades through the rest of the file."""
    for seed in (1, 2):
        lines = _sectioned_notes(seed)
        before = {c.text for c in chunk_lines("\n".join(lines) + "\n")}
        assert len(before) >= 8
        changed: list[int] = []
        for k, line in enumerate(lines):
            for edit in (line + " and one more clause", line[: max(0, len(line) - 9)],
                         line.replace("e", "E")):
                if edit == line:
                    continue
                after = chunk_lines("\n".join([*lines[:k], edit, *lines[k + 1 :]]) + "\n")
                changed.append(len({c.text for c in after} - before))
        assert max(changed) <= 4, max(changed)
        assert sum(n <= 2 for n in changed) / len(changed) >= 0.95
