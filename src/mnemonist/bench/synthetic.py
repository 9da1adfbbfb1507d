"""A deterministic corpus of synthetic memories, and queries about them.

What an agent would store over months of work: preferences, decisions, project facts, bugs,
procedures, people, dates and events, rules and lessons learned, spread over a few hundred
projects (a skewed distribution: some projects are far more common than others), with tool
names, versions, tickets, ports, paths and dates, 8 to 60 words long. No external data.

Memory `i` is a pure function of `(seed, i)` (its own `random.Random`), so a corpus of 100,000
memories is never held in memory: queries about memory `i` regenerate it. `generate(n)` makes
every memory unique (what the daemon would otherwise deduplicate) by moving to the next
variant of an index on the rare collision, and remembers those variants.

Queries come in two kinds: `lexical` ones reuse words of their target memory (what BM25
finds) and `paraphrase` ones name the same thing in other words (a synonym of the component,
the kind of tool instead of its name, ...), which only the vector leg can match.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from mnemonist.bench.synthetic_vocab import (
    BEHAVIOURS,
    CAUSES,
    CITIES,
    COMPONENTS,
    CONDITIONS,
    ENVIRONMENTS,
    ERRORS,
    EXTRAS,
    FIRST_NAMES,
    FORBIDDEN,
    GOOD_HABITS,
    LAST_NAMES,
    MONTHS,
    N_PROJECTS,
    PREFERENCES,
    PROJECT_FIRST,
    PROJECT_SECOND,
    REASONS,
    ROLES,
    RUNTIMES,
    STEPS,
    STYLES,
    SYMPTOMS,
    TAG_POOL,
    TASKS,
    TEAMS,
    TOOLS,
    WHO,
    WORKAROUNDS,
)
from mnemonist.text.tokens import STOP_WORDS

# --- records ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SyntheticMemory:
    index: int
    kind: str  # preference decision fact bug procedure person event rule learning
    content: str
    project: str | None
    tags: list[str]
    who: str
    importance: float | None
    slots: dict[str, str] = field(default_factory=dict, compare=False)

    def request_body(self) -> dict[str, Any]:
        """The body of POST /api/memory/remember (and of `RememberRequest`)."""
        body: dict[str, Any] = {"content": self.content, "who": self.who}
        if self.project is not None:
            body["project"] = self.project
        if self.tags:
            body["tags"] = self.tags
        if self.importance is not None:
            body["importance"] = self.importance
        return body


@dataclass(frozen=True)
class SyntheticQuery:
    text: str
    target: int  # index of the memory it is about
    kind: str  # lexical | paraphrase


# --- the corpus ---------------------------------------------------------------------------


def _digest(*parts: str) -> int:
    h = hashlib.blake2b(digest_size=8)
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\x00")
    return int.from_bytes(h.digest(), "big")


class SyntheticCorpus:
    """`memory(i)` is deterministic for a seed; `generate(n)` yields n unique memories."""

    KINDS = (
        ("fact", 22), ("decision", 14), ("bug", 14), ("preference", 10), ("procedure", 9),
        ("person", 10), ("event", 9), ("rule", 6), ("learning", 6),
    )  # fmt: skip

    def __init__(self, seed: int = 7) -> None:
        self.seed = seed
        rng = random.Random(f"mnemonist-bench/{seed}/projects")
        combos = [f"{a}-{b}" for a in PROJECT_FIRST for b in PROJECT_SECOND]
        self.projects = rng.sample(combos, N_PROJECTS)
        # Zipf-like: the first projects are far more common than the last ones.
        self._project_weights = [1.0 / (rank + 1) ** 0.9 for rank in range(N_PROJECTS)]
        self._kinds = [k for k, _ in self.KINDS]
        self._kind_weights = [w for _, w in self.KINDS]
        self._variants: dict[int, int] = {}
        self._seen: set[int] = set()

    # -- memories ------------------------------------------------------------------------
    def generate(self, n: int) -> Iterator[SyntheticMemory]:
        """Memories 0..n-1, each with distinct content (so that none is deduplicated and
        each has its own embedding, which is keyed by content alone)."""
        self._seen = set()
        for index in range(n):
            variant = self._variants.get(index, 0)
            while True:
                mem = self._make(index, variant)
                key = _digest(mem.content.lower().rstrip(".,!?;:"))
                if key not in self._seen:
                    break
                variant += 1
            self._seen.add(key)
            if variant:
                self._variants[index] = variant
            yield mem
        self._seen = set()

    def memory(self, index: int) -> SyntheticMemory:
        return self._make(index, self._variants.get(index, 0))

    def _make(self, index: int, variant: int) -> SyntheticMemory:
        rng = random.Random(f"mnemonist-bench/{self.seed}/{index}/{variant}")
        kind = rng.choices(self._kinds, self._kind_weights)[0]
        project = rng.choices(self.projects, self._project_weights)[0]
        slots = self._slots(rng, project)
        main, slots = getattr(self, f"_{kind}")(rng, slots)
        slots["main"] = main
        content = self._sized(rng, main, slots)
        global_pref = kind == "preference" and rng.random() < 0.4
        tags = rng.sample(TAG_POOL, rng.choice((0, 0, 1, 1, 2, 3)))
        if rng.random() < 0.3:
            tags.append(kind)
        importance = round(rng.uniform(0.3, 1.0), 2) if rng.random() < 0.1 else None
        return SyntheticMemory(
            index=index,
            kind=kind,
            content=content,
            project=None if global_pref or rng.random() < 0.08 else project,
            tags=tags,
            who=rng.choice(WHO),
            importance=importance,
            slots=slots,
        )

    def _slots(self, rng: random.Random, project: str) -> dict[str, str]:
        comp, comp_para = rng.choice(COMPONENTS)
        tool, tool_desc = rng.choice(TOOLS)
        tool2, _ = rng.choice([t for t in TOOLS if t[0] != tool])
        day = self._date(rng)
        return {
            "project": project,
            "component": comp,
            "component_para": comp_para,
            "tool": tool,
            "tool_desc": tool_desc,
            "tool2": tool2,
            "person": f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
            "person2": f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
            "team": rng.choice(TEAMS),
            "env": rng.choice(ENVIRONMENTS),
            "date": day.isoformat(),
            "date2": (day + timedelta(days=rng.randint(2, 60))).isoformat(),
            "month": rng.choice(MONTHS),
            "version": f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}",
            "ticket": f"{project.split('-')[1][:4].upper()}-{rng.randint(100, 9999)}",
            "count": str(rng.choice((3, 12, 40, 75, 120, 300, 800, 2500))),
            "slug": comp.lower().replace(" ", "-"),
            "runtime": f"{rng.choice(RUNTIMES)} {rng.randint(1, 22)}",
            "port": str(rng.randint(3000, 9900)),
        }

    def _context(self, rng: random.Random, project: str) -> dict[str, str]:
        """Fresh values for a padding sentence (another person, date, ticket, ...)."""
        comp, _ = rng.choice(COMPONENTS)
        return {
            "person": f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
            "date": self._date(rng).isoformat(),
            "ticket": f"{project.split('-')[1][:4].upper()}-{rng.randint(100, 9999)}",
            "team": rng.choice(TEAMS),
            "count": str(rng.choice((3, 12, 40, 75, 120, 300, 800, 2500))),
            "month": rng.choice(MONTHS),
            "component": comp,
            "slug": comp.lower().replace(" ", "-"),
            "version": f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}",
        }

    @staticmethod
    def _date(rng: random.Random) -> date:
        return date(rng.randint(2023, 2026), rng.randint(1, 12), rng.randint(1, 28))

    def _sized(self, rng: random.Random, main: str, slots: dict[str, str]) -> str:
        """Pad with context sentences (other people, dates, tickets) to a target of 8-60
        words (mode about 16; the main sentence alone is often longer)."""
        target = int(rng.triangular(8, 60, 16))
        words = main.split()
        extras = list(EXTRAS)
        rng.shuffle(extras)
        while len(words) < target and extras:
            context = {**slots, **self._context(rng, slots["project"])}
            words += extras.pop().format(**context).split()
        if len(words) > 60:
            words = words[:60]
            words[-1] = words[-1].rstrip(".,;:") + "."
        return " ".join(words)

    # -- one builder per kind: (main sentence, slots the queries may use) ------------------
    def _preference(self, rng, s):
        topic, a, b, topic_para = rng.choice(PREFERENCES)
        s = {**s, "topic": topic, "a": a, "b": b, "topic_para": topic_para}
        first = s["person"].split()[0]
        main = rng.choice((
            f"{s['person']} prefers {a} over {b} when working on {s['project']}.",
            f"The user likes {a} rather than {b} for {topic_para}; ask before switching to {b}.",
            f"{first} wants answers that {rng.choice(STYLES)}, and prefers {a} to {b}.",
            f"In {s['project']} {first} prefers {s['tool']} to {s['tool2']} and {a} over {b}.",
        ))  # fmt: skip
        return main, s

    def _decision(self, rng, s):
        reason = rng.choice(REASONS)
        s = {**s, "reason": reason}
        main = rng.choice((
            f"Decided on {s['date']} to use {s['tool']} for the {s['component']} of "
            f"{s['project']} because {reason}.",
            f"We agreed to move the {s['component']} in {s['project']} from {s['tool2']} to "
            f"{s['tool']} by {s['date']}; {reason}.",
            f"The {s['team']} team chose {s['tool']} over {s['tool2']} for {s['project']} "
            f"after {s['person']} showed that {reason}.",
        ))  # fmt: skip
        return main, s

    def _fact(self, rng, s):
        main = rng.choice((
            f"The {s['component']} of {s['project']} runs on {s['runtime']} and is deployed to "
            f"{s['env']} with {s['tool']}.",
            f"In {s['project']} the {s['component']} listens on port {s['port']} and keeps its "
            f"data in {s['tool']}.",
            f"{s['project']} uses {s['tool']} for the {s['component']}; its config lives in "
            f"services/{s['slug']}/config.yaml.",
            f"The {s['component']} of {s['project']} is owned by the {s['team']} team and pinned "
            f"to {s['tool']} {s['version']}.",
        ))  # fmt: skip
        return main, s

    def _bug(self, rng, s):
        symptom, symptom_para = rng.choice(SYMPTOMS)
        s = {**s, "symptom": symptom, "symptom_para": symptom_para}
        main = rng.choice((
            f"Bug in the {s['project']} {s['component']}: {symptom} when "
            f"{rng.choice(CONDITIONS)}. Root cause was {rng.choice(CAUSES)}; fixed in "
            f"{s['ticket']}.",
            f"{s['ticket']}: the {s['component']} of {s['project']} fails with "
            f"{rng.choice(ERRORS)} and {symptom}; workaround is to {rng.choice(WORKAROUNDS)}.",
            f"Known problem in {s['project']}: {symptom} in the {s['component']} since "
            f"{s['tool']} {s['version']}.",
        ))  # fmt: skip
        return main, s

    def _procedure(self, rng, s):
        task, task_para = rng.choice(TASKS)
        s = {
            **s,
            "task": task,
            "task_para": task_para,
            "tracker": rng.choice(("Jira", "Linear")),
            "migrator": rng.choice(("Alembic", "Flyway")),
            "ci": rng.choice(("GitHub Actions", "GitLab CI", "Buildkite")),
        }
        steps = [st.format(**s) for st in rng.sample(STEPS, rng.randint(2, 4))]
        main = f"To {task} in {s['project']}: " + ", then ".join(steps) + "."
        return main, s

    def _person(self, rng, s):
        role = rng.choice(ROLES)
        s = {**s, "role": role}
        main = rng.choice((
            f"{s['person']} is the {role} for {s['project']}; ask them about the "
            f"{s['component']}. Based in {rng.choice(CITIES)}.",
            f"{s['person']} joined the {s['team']} team in {s['month']} and now owns the "
            f"{s['component']} of {s['project']}.",
            f"{s['person']} is out of office from {s['date']} to {s['date2']}; "
            f"{s['person2']} covers the {s['component']} meanwhile.",
        ))  # fmt: skip
        return main, s

    def _event(self, rng, s):
        main = rng.choice((
            f"The {s['project']} {s['version']} release is scheduled for {s['date']}; code "
            f"freeze starts {s['date2']}.",
            f"Incident on {s['date']}: the {s['component']} of {s['project']} was down for "
            f"{rng.randint(4, 180)} minutes because of {rng.choice(CAUSES)}.",
            f"The {s['tool']} contract for {s['project']} renews on {s['date']} and costs "
            f"{s['count']}00 dollars per month.",
            f"Quarterly planning of the {s['team']} team is on {s['date']} in "
            f"{rng.choice(CITIES)}.",
        ))  # fmt: skip
        return main, s

    def _rule(self, rng, s):
        bad, bad_para = rng.choice(FORBIDDEN)
        s = {**s, "bad": bad, "bad_para": bad_para}
        main = rng.choice((
            f"Never {bad} in {s['project']} without approval from {s['person']}.",
            f"Always {rng.choice(GOOD_HABITS)} before touching the {s['component']} of "
            f"{s['project']}, and never {bad}.",
        ))  # fmt: skip
        return main, s

    def _learning(self, rng, s):
        behaviour, behaviour_para = rng.choice(BEHAVIOURS)
        s = {**s, "behaviour": behaviour, "behaviour_para": behaviour_para}
        main = rng.choice((
            f"Learned that {s['tool']} {behaviour}; the {s['component']} of {s['project']} "
            f"needed a fix for it.",
            f"Turns out the {s['component']} in {s['project']} {behaviour} since the move to "
            f"{s['tool']}.",
        ))  # fmt: skip
        return main, s

    # -- queries -------------------------------------------------------------------------
    def queries(
        self, count: int, among: int, *, seed: int | None = None, lexical_share: float = 0.5
    ) -> list[SyntheticQuery]:
        """`count` distinct queries about memories 0..among-1 (distinct strings, so that a
        query-embedding cache never answers one of them)."""
        if among <= 0:
            raise ValueError("among must be positive")
        rng = random.Random(f"mnemonist-bench/{self.seed if seed is None else seed}/queries")
        out: list[SyntheticQuery] = []
        seen: set[str] = set()
        attempts = 0
        while len(out) < count:
            attempts += 1
            if attempts > count * 50:
                raise RuntimeError(f"could not make {count} distinct queries")
            mem = self.memory(rng.randrange(among))
            lexical = rng.random() < lexical_share
            text = self._lexical(rng, mem) if lexical else self._paraphrase(rng, mem)
            if text.lower() in seen:
                continue
            seen.add(text.lower())
            out.append(SyntheticQuery(text, mem.index, "lexical" if lexical else "paraphrase"))
        return out

    @staticmethod
    def _lexical(rng: random.Random, mem: SyntheticMemory) -> str:
        """3-6 words of the memory's main sentence (in order), sometimes with a lead-in."""
        words = [w.strip(".,;:()") for w in mem.slots.get("main", mem.content).split()]
        words = [w for w in words if len(w) > 2 and w.lower() not in STOP_WORDS]
        if len(words) < 3:
            words = mem.content.split()
        picks = sorted(rng.sample(range(len(words)), min(len(words), rng.randint(3, 6))))
        phrase = " ".join(words[i] for i in picks)
        lead = rng.choice(("", "", "what about ", "remind me: ", "notes on "))
        return lead + phrase

    @staticmethod
    def _paraphrase(rng: random.Random, mem: SyntheticMemory) -> str:
        """The same subject in other words: synonyms, the kind of tool instead of its name."""
        s = mem.slots
        first = s["person"].split()[0]
        by_kind = {
            "preference": (
                f"what does {first} like better for {s.get('topic_para', '')}",
                f"which {s.get('topic_para', '')} is favoured by the user",
            ),
            "decision": (
                f"which {s['tool_desc']} did we pick for the {s['component_para']}",
                f"why was a new {s['tool_desc']} selected for {s['project']}",
            ),
            "fact": (
                f"where is the {s['component_para']} of {s['project']} hosted",
                f"what {s['tool_desc']} sits behind the {s['component_para']}",
            ),
            "bug": (
                f"{s.get('symptom_para', '')} in the {s['component_para']}",
                f"why did {s['project']} have {s.get('symptom_para', '')}",
            ),
            "procedure": (
                f"steps to {s.get('task_para', '')} for {s['project']}",
                f"how do I {s.get('task_para', '')}",
            ),
            "person": (
                f"who is responsible for the {s['component_para']} in {s['project']}",
                f"contact person for the {s['component_para']}",
            ),
            "event": (
                f"upcoming dates for {s['project']}",
                f"outage or schedule of the {s['component_para']} at {s['project']}",
            ),
            "rule": (
                f"is it allowed to {s.get('bad_para', '')} in {s['project']}",
                f"policy about how we {s.get('bad_para', '')}",
            ),
            "learning": (
                f"surprising behaviour: {s.get('behaviour_para', '')}",
                f"gotcha with the {s['tool_desc']} that {s.get('behaviour_para', '')}",
            ),
        }
        return " ".join(rng.choice(by_kind[mem.kind]).split())
