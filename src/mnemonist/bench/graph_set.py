"""The hand-labelled set `mnemonist bench graph` scores the graph's reading of prose on: 395
memories of four kinds, their entities, relations and aliases. The labelling policy and the
item type are in `bench/graph_labels.py`; the items in `graph_set_coding.py`, `graph_set_ops.py` and
`graph_set_life.py` (personal facts and chat turns)."""

from __future__ import annotations

from mnemonist.bench.graph_labels import KINDS, RELATION_TYPES, Labelled
from mnemonist.bench.graph_set_coding import CODING
from mnemonist.bench.graph_set_life import CHAT, PERSONAL
from mnemonist.bench.graph_set_ops import OPS

SET: tuple[Labelled, ...] = CODING + OPS + PERSONAL + CHAT

__all__ = ["KINDS", "RELATION_TYPES", "SET", "Labelled"]
