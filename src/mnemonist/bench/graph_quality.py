"""`mnemonist bench graph`: precision and recall of the graph's reading of prose (entities,
relations, aliases: `text/prose_graph.py`) against the hand-labelled set of
`bench/graph_set.py`, per kind of text, and what the reading costs per memory.

Matching: an entity is its name without a leading article or possessive pronoun, lowercased,
the plural of its last word folded and a known technology alias mapped to its canonical name
("postgres" = "PostgreSQL", "worker queues" = "worker queue"). A name the set labels as an
alias of another counts as a wrong entity when the reader keeps it apart (resolution failed);
a relation's ends are compared after aliases are resolved. A relation matches on (source,
type, target); "any type" matches on (source, target) in that direction.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

from mnemonist.bench.graph_set import SET, Labelled
from mnemonist.text.entity_words import TECH_ALIASES
from mnemonist.text.phrases import singular
from mnemonist.text.prose_graph import key_of, read
from mnemonist.text.tagger import available

_LEADING = frozenset(
    "the a an this that these those my our your his her their its".split())  # noqa: SIM905


def norm(name: str) -> str:
    """The matching key of an entity name (see the module docstring)."""
    words = name.replace("’", "'").split()
    while len(words) > 1 and words[0].lower() in _LEADING:
        words = words[1:]
    key = " ".join(words).lower()
    if key in TECH_ALIASES:
        return TECH_ALIASES[key].lower()
    if words:
        words[-1] = singular(words[-1])
    key = " ".join(words).lower()
    return TECH_ALIASES.get(key, key).lower()


class _Counts:
    def __init__(self) -> None:
        self.tp = Counter[str]()
        self.fp = Counter[str]()
        self.fn = Counter[str]()

    def add(self, kind: str, gold: set[Any], got: set[Any]) -> None:
        for k in (kind, "all"):
            self.tp[k] += len(gold & got)
            self.fp[k] += len(got - gold)
            self.fn[k] += len(gold - got)

    def scores(self, kind: str) -> dict[str, float]:
        tp, fp, fn = self.tp[kind], self.fp[kind], self.fn[kind]
        p = tp / (tp + fp) if tp + fp else 1.0
        r = tp / (tp + fn) if tp + fn else 1.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(f, 3),
                "gold": tp + fn, "found": tp + fp}


def _gold(item: Labelled) -> tuple[set[str], set[tuple[str, str, str]], dict[str, str]]:
    alias = {norm(a): norm(p) for a, p in item.aliases}
    entities = {norm(e) for e in item.entities}
    relations = {(alias.get(norm(s), norm(s)), t, alias.get(norm(o), norm(o)))
                 for s, t, o in item.relations}
    return entities, relations, alias


def _got(text: str, alias: dict[str, str]) -> tuple[set[str], set[tuple[str, str, str]]]:
    reading = read(text)
    keyed = {key_of(e): norm(e.name) for e in [*reading.entities, *reading.tentative]}
    for a in reading.aliases:
        keyed[a.key] = keyed.get(a.primary, norm(a.primary))

    def end(key: str) -> str:
        n = keyed.get(key, norm(key))
        return alias.get(n, n)

    entities = {norm(e.name) for e in reading.entities}
    relations = {(end(r.source), r.relation_type, end(r.target)) for r in reading.relations}
    return entities, relations


def score(items: Iterable[Labelled] = SET, errors: int = 0) -> dict[str, Any]:
    """Precision and recall over `items`; `errors` > 0 lists that many misses of each sort."""
    items = list(items)
    ents, rels, loose = _Counts(), _Counts(), _Counts()
    wrong: dict[str, list[dict[str, Any]]] = {"entities": [], "relations": []}
    read.cache_clear()
    started = time.perf_counter()
    for item in items:
        gold_e, gold_r, alias = _gold(item)
        got_e, got_r = _got(item.text, alias)
        ents.add(item.kind, gold_e, got_e)
        rels.add(item.kind, gold_r, got_r)
        loose.add(item.kind, {(s, o) for s, _, o in gold_r}, {(s, o) for s, _, o in got_r})
        if errors and (gold_e != got_e) and len(wrong["entities"]) < errors:
            wrong["entities"].append({"text": item.text, "missed": sorted(gold_e - got_e),
                                      "wrong": sorted(got_e - gold_e)})
        if errors and (gold_r != got_r) and len(wrong["relations"]) < errors:
            wrong["relations"].append({"text": item.text, "missed": sorted(gold_r - got_r),
                                       "wrong": sorted(got_r - gold_r)})
    elapsed = time.perf_counter() - started
    read.cache_clear()
    started = time.perf_counter()
    for item in items:  # the cost per memory, tagger data already loaded
        read(item.text)
    per_item = (time.perf_counter() - started) / max(1, len(items))
    kinds = [*sorted({i.kind for i in items}), "all"]
    report: dict[str, Any] = {
        "items": len(items), "tagger": available(),
        "kinds": {k: {"items": sum(i.kind == k for i in items) if k != "all" else len(items),
                      "entities": ents.scores(k), "relations": rels.scores(k),
                      "relations_any_type": loose.scores(k)} for k in kinds},
        "ms_per_memory": round(per_item * 1000, 3),
        "first_pass_s": round(elapsed, 2),
    }
    if errors:
        report["errors"] = wrong
    return report


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# bench graph: {report['items']} hand-labelled memories"
             f" (tagger {'on' if report['tagger'] else 'MISSING'})", "",
             "| kind | items | entity P | entity R | relation P | relation R |"
             " relation P (any type) | relation R (any type) |",
             "|---|---|---|---|---|---|---|---|"]
    for kind, row in report["kinds"].items():
        e, r, a = row["entities"], row["relations"], row["relations_any_type"]
        lines.append(f"| {kind} | {row['items']} | {e['precision']:.3f} | {e['recall']:.3f} |"
                     f" {r['precision']:.3f} | {r['recall']:.3f} | {a['precision']:.3f} |"
                     f" {a['recall']:.3f} |")
    lines += ["", f"Reading costs {report['ms_per_memory']:.3f} ms per memory (one core,"
                  " after the tagger's data is loaded)."]
    for sort, rows in report.get("errors", {}).items():
        lines += ["", f"## {sort}: misses", ""]
        lines += [f"- {r['text']!r}\n  missed {r['missed']} wrong {r['wrong']}" for r in rows]
    return "\n".join(lines)
