"""Migration 28: the index the hub stage of recall reads now that the graph holds noun-phrase
entities. Hubs are judged among names and technologies only (`search/dampening.py`): the
percentile of their mention counts is read off this partial index, as it was off the full one
before, instead of a scan of every entity."""

from __future__ import annotations

import sqlite3
from typing import Any

from mnemonist.store.migrations import migration

_INDEX = ("CREATE INDEX entities_named_mentions ON entities(mentions)"
          " WHERE entity_type != 'phrase'")


def _postgres(conn: Any) -> None:
    conn.raw.execute(_INDEX)


@migration(28, "prose graph: the mentions of names, apart from noun-phrase entities",
           postgres=_postgres)
def _named_mentions(conn: sqlite3.Connection) -> None:
    conn.execute(_INDEX)
