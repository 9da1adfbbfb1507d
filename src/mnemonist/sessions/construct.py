"""Constructed context: the memories chosen for a prompt laid out as blocks that read as what
they are, rather than one flat line per memory. Pure: the caller passes the memories (in rank
order) and small lookups it read from the store; no I/O.

- Several memories about one entity (the knowledge graph's mentions) become one block headed
  by the entity's name: what is known about it, decisions and constraints first, each line
  ending with its memory id. A fact split over three memories reads as one.
- A memory-file chunk (MEMORY.md, memory/*.md) keeps its line breaks, cut to `FILE_LINES`
  lines, under its `path:start-end` label: a list or a table squashed onto one line loses its
  shape, and the label says where to read the rest.
- Session turns are grouped by session, one sub-heading per session (short key and date),
  in conversation order within it: turns out of order and out of context read as noise.
- A tool-call line ("edited src/app.py", "ran `pytest -q`: failed") is left out unless the
  prompt is about commands, files or errors (`asks_about_commands`): a prompt about the
  database schema gains nothing from a list of shell commands that happened to match.
- Everything else stays one line per memory, as before.

Every stored text (memory content, entity names, paths, session keys) goes through
`quote_text`, so nothing stored can close the block, open a heading or claim a role.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from mnemonist.model.memory import Memory
from mnemonist.sessions.context import Section, memory_line, render
from mnemonist.sessions.digest import clip
from mnemonist.text.framing import quote_text

#: lines of a memory-file chunk shown at most (the label says where the rest is)
FILE_LINES = 12
#: memories that must share an entity for it to get a block of its own
MIN_ENTITY_MEMORIES = 2
#: memory types listed first in an entity's block: what to obey before what to know
DECISION_TYPES = ("decision", "constraint", "rule")

#: (entity id, entity name, what entity_attributes says the memory states: 'constraint',
#: 'attribute' or None)
Mention = tuple[str, str, str | None]

# -- tool lines and prompts about commands -------------------------------------------------

#: a tool call's one-line turn (sessions/turns.py `_tool_line`), for memories read without
#: their idempotency key
_TOOL_TEXT = re.compile(r"^(?:edited \S|ran `|[a-z_]+ \(no path\))")


def is_tool_line(m: Memory) -> bool:
    """A session turn that is a tool call's one line ("edited src/app.py", "ran `git
    status`: ok"), not something said. Its idempotency key says so exactly (`<session>/tool:`);
    without one, its text does."""
    if m.source_type != "session":
        return False
    if m.idempotency_key:
        return m.idempotency_key.startswith(f"{m.source_id}/tool:")
    return m.who in (None, "assistant") and _TOOL_TEXT.match(m.content) is not None


#: words that make a prompt about commands, their runs and their outcome, or about edits
_COMMAND_WORDS = """
command commands cmd cli shell terminal console bash zsh script scripts
run runs ran running rerun reran execute executed exec invoke invoked
grep rg sed awk curl
git commit commits committed push pushed pull merge merged rebase branch diff checkout stash
test tests tested testing pytest unittest jest
build builds built compile compiled cmake npm npx yarn pnpm pip uv cargo docker kubectl
install installed deploy deployed lint ruff mypy
error errors failed failing fails failure traceback exception crash crashed stderr
log logs
edit edited edits modified changed touched
"""
COMMAND_WORDS = frozenset(_COMMAND_WORDS.split())
_WORD = re.compile(r"[a-z0-9_+-]+")
#: a path or a file name ("src/app.py", "login.py") or a backtick: the prompt names a file or
#: quotes a command
_PATHLIKE = re.compile(r"`|[\w.-]+/[\w.-]+|\b[\w-]+\.[a-z]{1,5}\b")


def asks_about_commands(prompt: str) -> bool:
    """Whether a prompt is about what was run or edited: one of `COMMAND_WORDS`, a file path or
    name, or a backtick."""
    lowered = prompt.lower()
    if _PATHLIKE.search(lowered):
        return True
    return any(w in COMMAND_WORDS for w in _WORD.findall(lowered))


# -- the blocks ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Lookups:
    """What the layout reads from the store, gathered by the caller."""

    #: file-chunk memory id -> (path, first line, last line)
    where: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    #: memory id -> the entities it names
    mentions: dict[str, list[Mention]] = field(default_factory=dict)
    #: canonical entity names that never head a block (the project's own name: every memory
    #: of the project is about it)
    skip_entities: frozenset[str] = frozenset()
    #: memory id -> the older statement it contradicts and replaces (search/current.py):
    #: the stale one is never injected, the newer says what it replaced
    replaced: dict[str, Memory] = field(default_factory=dict)


#: how much of a replaced statement is shown after the one that replaced it
REPLACED_CHARS = 120


def with_replaced(line: str, m: Memory, lookups: Lookups) -> str:
    """The memory's line, and what it replaced when it replaced an older statement."""
    old = lookups.replaced.get(m.id)
    if old is None:
        return line
    when = (old.occurred_at or "")[:10]
    return (f"{line} (replaces, from {when}: {_quoted(old.content, REPLACED_CHARS)};"
            f" id {old.id})")


def _quoted(text: str, limit: int) -> str:
    return quote_text(clip(text, limit))


def _tags(m: Memory) -> str:
    tags = [m.type]
    if m.pinned:
        tags.append("pinned")
    if m.occurred_at:
        tags.append(m.occurred_at[:10])
    return ", ".join(tags)


def entity_line(m: Memory, limit: int) -> str:
    """A memory in its entity's block: type and date, the text, then its id."""
    return f"- [{_tags(m)}] {_quoted(m.content, limit)} (id {m.id})"


def file_text(content: str, limit: int, max_lines: int = FILE_LINES) -> str:
    """A file chunk with its line breaks: at most `max_lines` lines and about `limit`
    characters, cut at a line end (a line longer than the rest of the room is cut itself),
    with "…" when something was left out. Blank lines at either end go."""
    lines = content.strip("\n").splitlines()
    out: list[str] = []
    used = 0
    for line in lines[:max_lines]:
        line = line.rstrip()
        room = limit - used
        if room <= 0:
            break
        if len(line) > room:
            if not out or room >= 20:
                out.append(line[: max(1, room - 1)].rstrip() + "…")
            break
        out.append(line)
        used += len(line) + 1
    text = "\n".join(out)
    if len(out) < len(lines) and not text.endswith("…"):
        text += "\n…"
    return text


def file_section(m: Memory, where: tuple[str, int, int], limit: int) -> Section:
    path, start, end = where
    body = quote_text(file_text(m.content, limit))
    return Section(quote_text(f"{path}:{start}-{end}"), [(m.id, body)])


def _session_date(turns: list[Memory]) -> str:
    days = sorted({t.occurred_at[:10] for t in turns if t.occurred_at})
    if not days:
        return "undated"
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


def turn_line(m: Memory, limit: int) -> str:
    """A turn in its session's group: `[time, who]` and what was said (a tool line: `[time]`
    and what was done)."""
    when = m.occurred_at[11:16] if m.occurred_at and len(m.occurred_at) >= 16 else ""
    tags = [when] if when else []
    if not is_tool_line(m):
        tags.append(quote_text(clip(m.who or "someone", 40)))
    head = f"[{', '.join(tags)}] " if tags else ""
    return f"- {head}{_quoted(m.content, limit)}"


def session_section(turns: list[Memory], limit: int) -> Section:
    key = turns[0].source_id or ""
    ordered = sorted(turns, key=lambda t: (t.occurred_at or "", t.seq))
    title = f"From session {quote_text(key[:8])} ({_session_date(ordered)})"
    return Section(title, [(t.id, turn_line(t, limit)) for t in ordered])


def entity_groups(memories: list[Memory], lookups: Lookups) -> list[tuple[str, list[int]]]:
    """(entity name, ranks of its memories) for the entities that gather at least
    `MIN_ENTITY_MEMORIES` of `memories` (curated ones only: turns and file chunks have their
    own layout). Each memory joins one block: the entity naming the most of those still free
    goes first (ties: the better-ranked memory, then the name)."""
    names: dict[str, str] = {}
    members: dict[str, list[int]] = {}
    for rank, m in enumerate(memories):
        if m.source_type in ("session", "file"):
            continue
        for entity_id, name, _kind in lookups.mentions.get(m.id, []):
            if " ".join(name.split()).lower() in lookups.skip_entities:
                continue
            names[entity_id] = name
            if rank not in members.setdefault(entity_id, []):
                members[entity_id].append(rank)
    taken: set[int] = set()
    out: list[tuple[str, list[int]]] = []
    while True:
        best: tuple[int, int, str, str] | None = None
        for entity_id, ranks in members.items():
            free = [r for r in ranks if r not in taken]
            if len(free) < MIN_ENTITY_MEMORIES:
                continue
            key = (-len(free), min(free), names[entity_id].lower(), entity_id)
            if best is None or key < best:
                best = key
        if best is None:
            return out
        entity_id = best[3]
        free = [r for r in members[entity_id] if r not in taken]
        taken.update(free)
        out.append((names[entity_id], free))


def build(memories: list[Memory], lookups: Lookups, limit: int) -> list[Section]:
    """The sections for `memories` (rank order): entity blocks, file chunks, session groups
    and the remaining memories one line each. A section comes where its best-ranked memory
    ranks. The one-line memories need no heading when they come first (they read as the
    block's own list); further down they are headed "Other memories"."""
    placed: list[tuple[int, Section | None]] = []
    grouped: set[int] = set()
    for name, ranks in entity_groups(memories, lookups):
        grouped.update(ranks)
        order = sorted(ranks, key=lambda r: (memories[r].type not in DECISION_TYPES, r))
        items = [(memories[r].id,
                  with_replaced(entity_line(memories[r], limit), memories[r], lookups))
                 for r in order]
        placed.append((min(ranks), Section(quote_text(name), items)))
    sessions: dict[str, list[int]] = {}
    loose: list[int] = []
    for rank, m in enumerate(memories):
        if rank in grouped:
            continue
        if m.source_type == "file" and m.id in lookups.where:
            placed.append((rank, file_section(m, lookups.where[m.id], limit)))
        elif m.source_type == "session" and m.source_id:
            sessions.setdefault(m.source_id, []).append(rank)
        else:
            loose.append(rank)
    for ranks in sessions.values():
        placed.append((min(ranks), session_section([memories[r] for r in ranks], limit)))
    if loose:
        placed.append((min(loose), None))
    placed.sort(key=lambda p: p[0])
    out: list[Section] = []
    for _, sec in placed:
        if sec is None:
            title = "Other memories" if out else ""
            sec = Section(title, [(memories[r].id, with_replaced(
                memory_line(memories[r], limit), memories[r], lookups)) for r in loose])
        out.append(sec)
    return out


def fit(header: str, memories: list[Memory], sections: Callable[[list[Memory]], list[Section]],
        budget: int, max_items: int) -> tuple[str, list[str]]:
    """`render` of the best-ranked memories that fit: each memory in rank order joins when the
    whole layout still fits `budget` and `max_items` with it, else it is left out (a lower
    one may still fit). Rank, not layout order, decides what a tight budget keeps."""
    kept: list[Memory] = []
    best: tuple[str, list[str]] = ("", [])
    for m in memories:
        if len(kept) >= max_items:
            break
        trial = [*kept, m]
        text, ids = render(header, sections(trial), budget, max_items)
        if len(ids) == len(trial):
            kept, best = trial, (text, ids)
    return best


def prompt_block(header: str, prompt: str, memories: list[Memory], lookups: Lookups, *,
                 limit: int, budget: int, max_items: int) -> tuple[str, list[str]]:
    """The prompt hook's block for the memories chosen for `prompt` (rank order): tool lines
    left out unless the prompt is about commands, then the constructed layout, the
    best-ranked that fit. (markdown, ids of the memories it holds); empty when none fits."""
    if not asks_about_commands(prompt):
        memories = [m for m in memories if not is_tool_line(m)]
    return fit(header, memories, lambda ms: build(ms, lookups, limit), budget, max_items)
