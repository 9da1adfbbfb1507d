"""Ablations for `mnemonist bench locomo --ablate`: each variant changes settings on the running
service, is scored on the memories already ingested (mnemonist only, same metrics), and is undone
before the next — so a row differs from the default in exactly the settings it names.

Only settings that recall reads at query time can vary this way: `search.*`,
`memory.pipelineV2.dampening.*`, `graph.boostWeight` / `graph.hopWeight` / `graph.enabled`,
`reranker.*` and the ranking signals `memory.decay_*` / `memory.access_boost_*`. Settings that
change what is written (`graph.inlineLinker`, `hints.*`, the embedding model) need their own
run with a configuration file.

One key is the bench's own: `bench.age` says when the questions are asked, for the signals
that read time (decay). `bench.age=90`: 90 days after the memories were written (every memory
equally old); `bench.age=spoken`: each memory dated when its turn was said and the questions
asked the day after the last session, so early sessions are months older than late ones. A
recall still moves `last_accessed` to the real now, so a memory used during the run is fresh.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from mnemonist.model.memory import parse_ts

#: prefixes of the keys a variant may set (dotted, as in agent.yaml)
RUNTIME_PREFIXES = (
    "search.",
    "memory.pipelineV2.dampening.",
    "memory.pipelineV2.graph.boostWeight",
    "memory.pipelineV2.graph.hopWeight",
    "memory.pipelineV2.graph.boostPhrases",
    "memory.pipelineV2.graph.enabled",
    "memory.pipelineV2.graph.traversal",  # traversalChannel, traversalChannelWeight, traversal.*
    "memory.pipelineV2.reranker.",
    "predictor.",
    "sessions.recall_weight",
    "memory.decay_",
    "memory.access_boost_",
    "bench.age",
)


@dataclass(frozen=True)
class Variant:
    name: str
    settings: tuple[tuple[str, Any], ...]


#: `--ablate` with no list: every recall signal of docs/benchmarks.md off in turn, and the
#: nearby values of the tuned weights.
STANDARD = (
    "no-ranker: predictor.enabled=false",
    "no-who-strip: search.who_strip=false",
    "no-phrase: search.phrase_weight=0",
    "no-time-candidates: search.time_candidates=0",
    "no-who-lift: search.who_weight=0",
    "no-graph-boost: memory.pipelineV2.graph.boostWeight=0",
    "no-hub: memory.pipelineV2.dampening.hubEnabled=false",
    "gravity: memory.pipelineV2.dampening.gravityEnabled=true",
    "resolution: memory.pipelineV2.dampening.resolutionEnabled=true",
    "no-context-index: search.context_window=0",
    "alpha-0.6: search.alpha=0.6",
    "alpha-0.8: search.alpha=0.8",
    "who-0.2: search.who_weight=0.2",
    "who-0.6: search.who_weight=0.6",
    "embedding-reranker: memory.pipelineV2.reranker.enabled=true",
    "traversal-channel: memory.pipelineV2.graph.traversalChannel=true",
    "aged-spoken: bench.age=spoken",
    "aged-spoken-facts-decay: bench.age=spoken, memory.decay_types=[fact, status]",
    "aged-spoken-all-decay: bench.age=spoken, memory.decay_by_type=false",
    "aged-spoken-no-decay: bench.age=spoken, memory.decay_rate=1.0",
    "aged-90: bench.age=90",
    "aged-90-facts-decay: bench.age=90, memory.decay_types=[fact, status]",
    "aged-90-all-decay: bench.age=90, memory.decay_by_type=false",
    "access-boost-0.3-cap-2: memory.access_boost_weight=0.3, memory.access_boost_cap=2.0",
    "access-boost-0.3-cap-1.2: memory.access_boost_weight=0.3",
    "access-boost-0.1-cap-1.2: memory.access_boost_weight=0.1",
    "access-boost-0.3-cap-1.05: memory.access_boost_weight=0.3, memory.access_boost_cap=1.05",
)


def parse_variant(text: str) -> Variant:
    """"name: key=value, key=value" (values read as YAML: true, 0.6, minmax)."""
    name, sep, rest = text.partition(":")
    if not sep or not name.strip() or not rest.strip():
        raise ValueError(f"variant {text!r}: expected 'name: key=value[, key=value]'")
    settings: list[tuple[str, Any]] = []
    for part in re.split(r",(?![^\[]*\])", rest):  # a [a, b] list value stays whole
        key, eq, raw = part.strip().partition("=")
        if not eq or not key:
            raise ValueError(f"variant {name.strip()!r}: {part.strip()!r} is not key=value")
        if key.startswith("bench.") and key != "bench.age":
            raise ValueError(f"variant {name.strip()!r}: unknown bench key {key}")
        if not key.startswith(RUNTIME_PREFIXES):
            raise ValueError(
                f"variant {name.strip()!r}: {key} cannot change between runs on the same "
                "memories; use a configuration file for it"
            )
        value = yaml.safe_load(raw)
        if key == "bench.age":
            try:
                _check_age(value)
            except ValueError as exc:
                raise ValueError(f"variant {name.strip()!r}: {exc}") from None
        settings.append((key, value))
    return Variant(name.strip(), tuple(settings))


def _field_name(model: BaseModel, key: str) -> str:
    for name, info in type(model).model_fields.items():
        if key in (name, info.alias):
            return name
    camel = {n.replace("_", ""): n for n in type(model).model_fields}
    found = camel.get(key.lower().replace("_", ""))
    if found is None:
        raise ValueError(f"unknown setting {key!r}")
    return found


def _locate(config: BaseModel, dotted: str) -> tuple[BaseModel, str]:
    *path, last = dotted.split(".")
    node = config
    for part in path:
        node = getattr(node, _field_name(node, part))
    return node, _field_name(node, last)


def _check_age(value: Any) -> Any:
    if value == "spoken" or (isinstance(value, int | float) and 0 <= value <= 36500):
        return value
    raise ValueError(f"bench.age = {value!r}: expected 'spoken' or a number of days (0–36500)")


@contextmanager
def aged(service: Any, age: Any) -> Iterator[None]:
    """Recall as if asked later (see `bench.age` above); undone on exit."""
    searcher = service.core.searcher
    clock = searcher.clock
    saved: list[tuple[str, int]] = []
    if age == "spoken":
        with service.core.db.write_tx() as conn:
            saved = [(r[1], r[0]) for r in conn.execute("SELECT seq, created_at FROM memories")]
            conn.execute("UPDATE memories SET created_at = occurred_at")
            last = conn.execute("SELECT MAX(occurred_at) FROM memories").fetchone()[0]
        then = parse_ts(last) + timedelta(days=1) if last else clock()
        searcher.clock = lambda: then
    else:
        searcher.clock = lambda: clock() + timedelta(days=float(age))
    try:
        yield
    finally:
        searcher.clock = clock
        if saved:
            with service.core.db.write_tx() as conn:
                conn.executemany("UPDATE memories SET created_at = ? WHERE seq = ?", saved)


@contextmanager
def applied(service: Any, variant: Variant) -> Iterator[None]:
    """The variant's settings on the service's live configuration, restored on exit. A bad
    value raises ValueError naming the key, with whatever was set already restored."""
    config = service.core.config
    age = dict(variant.settings).get("bench.age")
    if age is not None:
        with aged(service, _check_age(age)), applied(service, Variant(variant.name, tuple(
                (k, v) for k, v in variant.settings if k != "bench.age"))):
            yield
        return
    targets = [(_locate(config, key), key, value) for key, value in variant.settings]
    previous: list[tuple[BaseModel, str, Any]] = []
    window = config.search.context_window
    rebuilt = False
    try:
        for (node, name), key, value in targets:
            old = getattr(node, name)
            try:
                setattr(node, name, value)
            except ValidationError as exc:
                raise ValueError(f"{key} = {value!r}: {exc.errors()[0]['msg']}") from None
            previous.append((node, name, old))
        if config.search.context_window != window:  # the index follows the window
            rebuilt = True
            service.core.db.use_context_window(config.search.context_window)
        yield
    finally:
        for node, name, old in reversed(previous):
            setattr(node, name, old)
        if rebuilt:
            service.core.db.use_context_window(window)
