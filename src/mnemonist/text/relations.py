"""Relations stated in prose between the entities of one sentence: "the checkout API writes
orders to PostgreSQL", "the nightly backup job dumps PostgreSQL to S3", "the Q3 roadmap is owned
by the platform team", "Maria works at Acme".

Pure and deterministic. Two entity mentions next to each other in a sentence are related when
the words between them are one of the verb phrases below (after dropping adverbs, auxiliaries,
"which"/"that" and a trailing article); a verb that takes an object may have up to three words
of it before its preposition ("writes *orders* to"). Direction and type come from the phrase:

- `depends_on`: depends on, relies on, uses, calls, needs, requires, runs on, talks to,
  connects to, imports, is built on; "T is used / called / required by S".
- `writes_to`: writes … to, sends … to, pushes … to, publishes … to, stores … in, saves … to,
  logs … to, uploads … to.
- `reads_from`: reads … from, pulls … from, consumes, queries, fetches … from, loads … from,
  subscribes to; "S dumps / backs up / copies / exports T (to U)" (and S writes_to U).
- `owned_by`: is owned / maintained / run / managed by; "T owns / maintains S".
- `part_of`: is part of, belongs to, is a module of; "T contains / includes S".
- `moved_to`: moved / migrated / ported to; "(we) moved S to T".
- `replaced`: replaced, replaces, supersedes; "T was replaced by S"; "switched from T to S".
- `works_at`: a person works at / for, is employed at, joined or leads a team or company.
- `lives_in`: a person lives in, moved to, is based in.
- `member_of`: a person joined, attends, is a member of a group or class.

Lists distribute ("A and B depend on C", "A depends on B and C"). Nothing is read from a
question, from a negated phrase ("no longer depends on", "doesn't write to", "never") or a
hypothetical one ("might move to", "should use", "if …"): a wrong edge would put a wrong WILL
BREAK in an impact report, a missing one only leaves the pair associated by co-occurrence.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from mnemonist.text.phrase_words import ROLE_HEADS, WORKPLACE_HEADS
from mnemonist.text.phrase_words import words as _words
from mnemonist.text.phrases import Sentence

DEPENDS_ON, WRITES_TO, READS_FROM = "depends_on", "writes_to", "reads_from"
OWNED_BY, PART_OF, MOVED_TO, REPLACED = "owned_by", "part_of", "moved_to", "replaced"
WORKS_AT, LIVES_IN, MEMBER_OF = "works_at", "lives_in", "member_of"
TYPES = (DEPENDS_ON, WRITES_TO, READS_FROM, OWNED_BY, PART_OF, MOVED_TO, REPLACED, WORKS_AT,
         LIVES_IN, MEMBER_OF)
MAX_RELATIONS = 16


class Mention(NamedTuple):
    first: int  # token indexes in the sentence
    last: int
    key: str  # the entity's canonical name
    person: bool  # a lone capitalised name that is not a technology: maybe a person
    head: str  # the last word, lowercase ("team" in "payments team")


class Relation(NamedTuple):
    source: str  # canonical names
    relation_type: str
    target: str
    sentence: str  # the sentence that states it: the relation's reason


_OBJ = r"(?:[\w'.-]+ ){0,3}?"
_SKIP = _words("also directly only still now heavily mostly always currently actually just "
                  "already usually then which that who will has have had since recently both all "
                  "each "
                  "eventually finally officially")
_NEGATION = _words("not n't never no without neither nor cannot")
_HYPOTHETICAL = _words("might may could should would if whether plan plans planning want "
                          "wants wanted consider considering thinking maybe perhaps "
                          "probably try trying hope hoping")
_TRAILING = _words("the a an its their our his her my your this that these those")

# (pattern over the gap's words, relation type, reversed: the second mention is the source)
_PATTERNS: tuple[tuple[re.Pattern[str], str, bool], ...] = tuple(
    (re.compile(rf"^(?:{p})$"), t, rev) for p, t, rev in (
        (r"(?:is|are|was|were) (?:used|called|required|needed|imported) by", DEPENDS_ON, True),
        (r"(?:is|are|was|were) (?:read|queried|consumed|polled) by", READS_FROM, True),
        (r"(?:is|are|was|were) written to by", WRITES_TO, True),
        (r"(?:is|are|was|were) (?:owned|maintained|run|managed|operated) by", OWNED_BY, False),
        (r"(?:is|are|was|were|has been|have been) (?:replaced|superseded) by", REPLACED, True),
        (r"(?:is|are|was|were|has been) (?:moved|migrated|ported) (?:over )?to", MOVED_TO,
         False),
        (r"(?:depends?|depended|depending|relies|rely|relied|relying) (?:heavily )?on"
         r"|(?:uses|use|used|using)|(?:calls|call|called|calling)"
         r"|(?:needs|need|needed|requires|require|required)"
         r"|(?:runs|run|ran|running) (?:on|in|inside|atop)"
         r"|(?:is|are|was|were) (?:built|based|running|hosted|deployed) (?:on|with|in)"
         r"|(?:is|are) powered by|(?:talks|talk|talked|talking) to"
         r"|(?:connects|connect|connected|connecting) to|(?:imports|import|imported)"
         r"|(?:is|are) (?:using|calling|hitting)|(?:is|are) (?:talking|connected) to"
         r"|(?:hits|hit)|(?:integrates|integrated) with", DEPENDS_ON, False),
        (rf"(?:writes|write|wrote|writing|is writing) {_OBJ}(?:to|into)"
         rf"|(?:sends|send|sent|sending) {_OBJ}(?:to|into)"
         rf"|(?:pushes|push|pushed|pushing) {_OBJ}(?:to|into)"
         rf"|(?:publishes|publish|published|publishing) {_OBJ}(?:to|on)"
         rf"|(?:stores|store|stored|storing|keeps|kept) {_OBJ}in"
         rf"|(?:saves|save|saved|saving) {_OBJ}(?:to|in|into)"
         rf"|(?:logs|log|logged|logging) {_OBJ}to"
         rf"|(?:uploads|upload|uploaded|uploading) {_OBJ}to"
         rf"|(?:emits|emit|emitted|streams|stream|streamed|feeds|feed|fed) {_OBJ}(?:to|into)"
         rf"|(?:ships|ship|shipped) {_OBJ}to", WRITES_TO, False),
        (rf"(?:reads|read|reading|is reading) {_OBJ}from"
         rf"|(?:pulls|pull|pulled|pulling) {_OBJ}from"
         rf"|(?:fetches|fetch|fetched|fetching) {_OBJ}from"
         rf"|(?:loads|load|loaded|loading) {_OBJ}from|(?:gets|get|got) {_OBJ}from"
         rf"|(?:consumes|consume|consumed|consuming)(?: {_OBJ}from)?"
         r"|(?:queries|query|queried|querying)|(?:polls|poll|polled)"
         r"|(?:subscribes|subscribe|subscribed) to|(?:listens|listen|listened) to"
         r"|(?:reads|read)", READS_FROM, False),
        (r"(?:dumps|dump|dumped|dumping|copies|copy|copied|exports|export|exported"
         r"|snapshots|snapshot|snapshotted|replicates|replicate|replicated|mirrors|mirror"
         r"|mirrored|syncs|sync|synced|backs up|back up|backed up|backing up)", READS_FROM,
         False),
        (r"(?:owns|own|owned|maintains|maintain|maintained|operates|operate|operated)",
         OWNED_BY, True),
        (r"(?:is|are|was|were) (?:a |an )?(?:part|module|component|submodule|package) of"
         r"|(?:belongs|belong|belonged) to", PART_OF, False),
        (r"(?:contains|contain|contained|includes|include|included|has|have)", PART_OF, True),
        (r"(?:replaced|replaces|replace|replacing|is replacing|supersedes|superseded)",
         REPLACED, False),
        (r"(?:works|work|worked|working|teaches|taught|volunteers) (?:at|for)"
         r"|(?:is|was) employed (?:at|by)"
         r"|(?:is|was|are|were) (?:a|an|the) (?:[\w-]+ ){0,2}?[\w-]+ (?:at|for)"
         r"|(?:got|get|gets|has|have|took|take|started|starts|landed|for|with) (?:a |an |her |his"
         r" |their |my )?(?:new )?(?:job|role|position|internship) (?:at|with)", WORKS_AT,
         False),
        (r"(?:leads|lead|led|heads|head|headed|runs|run|ran|manages|manage|managed)",
         WORKS_AT, False),
        (r"(?:joined|joins|join|(?:is|was|are|were) (?:a )?members? of|attends|attend|attended"
         r"|goes to|went to|signed up for|volunteers (?:at|with)|volunteered (?:at|with))",
         MEMBER_OF, False),
        (r"(?:lives|live|lived|living) in|(?:is|was) based in|(?:moved|moves|moving|relocated)"
         r" to", LIVES_IN, False),
        (r"(?:moved|moves|migrated|migrates|ported|switched|switches) (?:over )?to", MOVED_TO,
         False),
    ))
#: verbs before the first mention that make "… S to T" a move, a copy or a swap
_MOVE_BEFORE = _words("moved move moving migrated migrate migrating ported relocated "
                         "moves migrates")
_SWITCH = _words("switched switch switching moved migrated migrating")
_RUNS = _words("runs run ran hosts host hosted deploys deploy deployed")
_COPY = re.compile(r"^(?:dumps|dump|dumped|dumping|copies|copy|copied|exports|export|exported"
                   r"|snapshots|replicates|replicate|replicated|mirrors|syncs|sync|synced"
                   r"|backs up|back up|backed up|backing up)$")
_PREPOSITION = _words("at in of for from with about on by into under")
_TO = re.compile(r"^(?:(?:over |out )?to|into|onto)$")
_AND = re.compile(r"^(?:,|and|or|, and|, or|&|as well as|plus)$")


_APPOSITION = re.compile(r"^, (?:my|our|his|her|their|the|a|an) (?:[\w-]+ ){0,2}?[\w-]+ , ")


def _gap(words: Sequence[str]) -> tuple[str, bool]:
    """(the gap's words as one string without adverbs and a trailing article, blocked): a
    negated or hypothetical gap is blocked. An apposition goes: "Dmitri, my cofounder, lives
    in …"."""
    low = [w.lower() for w in words if w not in (")", "(")]
    joined = _APPOSITION.sub("", " ".join(low) + " ")
    low = joined.split()
    if any(w in _NEGATION or w in _HYPOTHETICAL for w in low) or "longer" in low:
        return "", True
    if low == [","]:
        return ",", False
    kept = [w for w in low if w not in _SKIP and w != ","]
    if kept[:1] and kept[0] in ROLE_HEADS:  # "ShopApi service depends on"
        kept = kept[1:]
    while kept and kept[-1] in _TRAILING:
        kept.pop()
    return " ".join(kept), False


def _type_of(gap: str, a: Mention, b: Mention) -> tuple[str, bool] | None:
    kind = _typed(gap, a, b)
    words = gap.split()
    if kind is None and words and words[0] in _PREPOSITION:
        # a phrase on the subject before its verb: "the checkout flow *on the website* uses"
        for k in range(2, min(len(words), 6)):
            kind = _typed(" ".join(words[k:]), a, b)
            if kind is not None:
                return kind
    return kind


def _typed(gap: str, a: Mention, b: Mention) -> tuple[str, bool] | None:
    for pattern, rtype, rev in _PATTERNS:
        if not pattern.match(gap):
            continue
        if rtype == WORKS_AT and gap.split()[0] in {"leads", "lead", "led", "heads", "head",
                                                    "headed", "runs", "run", "ran", "manages",
                                                    "manage", "managed"}:
            if not a.person:
                continue
            if b.head not in WORKPLACE_HEADS:
                return OWNED_BY, True  # "Maria runs the build farm": it is hers
        if rtype == MEMBER_OF:
            if not a.person:
                continue
            if b.head in WORKPLACE_HEADS or (b.person and gap.startswith(("joined", "join"))):
                return WORKS_AT, False
        if rtype == LIVES_IN and not a.person:
            if gap.split()[0] in {"moved", "moves", "moving", "relocated"}:
                return MOVED_TO, False
            continue
        if rtype == OWNED_BY and rev and not (a.person or b.person or a.head in WORKPLACE_HEADS):
            # "T owns S" names an owner: a person or a team
            continue
        return rtype, rev
    return None


def _edge(rtype: str, rev: bool, a: str, b: str) -> tuple[str, str, str]:
    return (b, rtype, a) if rev else (a, rtype, b)


def sentence_relations(s: Sentence, mentions: list[Mention], text: str) -> list[Relation]:
    """The relations `s` states between its `mentions` (ordered, not overlapping)."""
    if s.question or len(mentions) < 2:
        return []
    words = [t.text for t in s.tokens]
    if words and words[0].lower() in ("if", "whether", "unless"):
        return []
    reason = text[s.tokens[0].start:s.tokens[-1].end]
    found: dict[tuple[str, str, str], None] = {}

    def add(edge: tuple[str, str, str]) -> None:
        if edge[0] != edge[2] and len(found) < MAX_RELATIONS:
            found[edge] = None

    subject: Mention | None = None
    lowered = [w.lower() for w in words]
    person = next((m for m in mentions if m.person), None)  # the sentence's person, if any
    gaps = [_gap(words[a.last + 1:b.first]) for a, b in itertools.pairwise(mentions)]
    for k, (a, b) in enumerate(itertools.pairwise(mentions)):
        gap, blocked = gaps[k]
        if blocked or not gap or _AND.match(gap):
            continue
        if _TO.match(gap):  # "… S to T": a move, a copy or a swap named before S
            before = [w.lower() for w in words[max(0, a.first - 3):a.first]]
            earlier = [x.lower() for x in words[:a.first]]
            if any(w in _NEGATION or w in _HYPOTHETICAL for w in earlier):
                continue
            if k and _COPY.match(gaps[k - 1][0]) and not gaps[k - 1][1]:
                add((mentions[k - 1].key, WRITES_TO, b.key))
            elif before[-1:] == ["from"] and any(w in _SWITCH for w in earlier):
                if person is not None and person.first < a.first:
                    add((person.key, LIVES_IN, b.key))  # "Chloe moved from Austin to Denver"
                else:
                    add((b.key, REPLACED, a.key))  # "switched from Jenkins to GitHub Actions"
            elif any(w in _MOVE_BEFORE for w in before):
                add((a.key, MOVED_TO, b.key))  # "we moved the billing service to Fly.io"
            continue
        if gap in ("on", "in", "inside") and k and gaps[k - 1][0] in _RUNS:
            add((a.key, DEPENDS_ON, b.key))  # "Acme runs PostgreSQL on Kubernetes"
            continue
        if any(w in _NEGATION for w in lowered[:b.first]):
            continue  # "Neither Atlas nor Relay writes to S3", "I didn't know Kevin worked …"
        if a.first and lowered[a.first - 1] in _PREPOSITION and not gap.startswith(
                ("and ", "but ")):
            continue  # "my team at Brightline uses Linear": Brightline is not the subject
        kind = _type_of(gap, a, b)
        if kind is None and subject is not None and gap.startswith(("and ", "but ")):
            # "Maria works at Acme and lives in Lisbon": the verb's subject is Maria
            kind = _type_of(gap.split(" ", 1)[1], subject, b)
            if kind is not None:
                add(_edge(kind[0], kind[1], subject.key, b.key))
            continue
        if kind is None and person is not None and person is not a:
            # "Chloe moved from Austin to Denver for a job at Tidewater Labs"
            kind = _type_of(gap, person, b)
            if kind is not None and kind[0] in (WORKS_AT, LIVES_IN, MEMBER_OF):
                add(_edge(kind[0], kind[1], person.key, b.key))
            continue
        if kind is None:
            continue
        rtype, rev = kind
        subject = a if not rev else None
        subjects, objects = [a], [b]
        j = k  # subjects listed before a: "A and B depend on C"
        while j > 0 and gaps[j - 1][0] and _AND.match(gaps[j - 1][0]):
            subjects.append(mentions[j - 1])
            j -= 1
        j = k + 1  # objects listed after b: "A depends on B and C"
        while j < len(gaps) and gaps[j][0] and _AND.match(gaps[j][0]):
            objects.append(mentions[j + 1])
            j += 1
        for x in subjects:
            for y in objects:
                add(_edge(rtype, rev, x.key, y.key))
    return [Relation(src, t, dst, reason) for src, t, dst in found]


def mentions_in(s: Sentence, spans: list[tuple[int, int, str, bool]],
                head_of: Callable[[str], str]) -> list[Mention]:
    """Token-level mentions of character spans (start, end, key, person) within `s`: the
    longest first where two overlap, in sentence order."""
    out: list[Mention] = []
    starts = [t.start for t in s.tokens]
    ends = [t.end for t in s.tokens]
    taken: set[int] = set()
    for start, end, key, person in sorted(spans, key=lambda x: (-(x[1] - x[0]), x[0])):
        first = next((i for i, e in enumerate(ends) if e > start), None)
        last = next((i for i in range(len(starts) - 1, -1, -1) if starts[i] < end), None)
        if first is None or last is None or first > last:
            continue
        if any(i in taken for i in range(first, last + 1)):
            continue
        taken.update(range(first, last + 1))
        out.append(Mention(first, last, key, person, head_of(key)))
    return sorted(out)
