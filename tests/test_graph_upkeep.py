"""Graph upkeep (the maintenance worker's pass): transitive dependencies are inferred, bounded
and capped, never over a stronger edge, and removed when a premise goes; what feedback taught
decays by days since last confirmed, on a clock the test controls, never below its floor,
decision-backed entities exempt. Real daemon, real SQLite file, keyword-only."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemonist.graph import upkeep as graph_upkeep
from mnemonist.model.config import GraphConfig
from mnemonist.model.graph import FeedbackRequest, ImpactRequest, RelateRequest, RetractRequest
from mnemonist.model.memory import format_ts
from mnemonist.model.requests import RecallFilters
from pipeline_helpers import manual_daemon, remember

pytestmark = pytest.mark.both_stores

KEYWORD_ONLY: dict[str, Any] = {"embedding": {"provider": "none"}}


def _edges(d, reason: str | None = None,
           project: str = "") -> dict[tuple[str, str], dict[str, Any]]:
    rows = d.db.reader().execute(
        "SELECT a.name AS a, b.name AS b, r.* FROM relations r"
        " JOIN entities a ON a.id = r.source_entity_id JOIN entities b"
        " ON b.id = r.target_entity_id WHERE (CAST(? AS TEXT) IS NULL OR r.reason = ?)"
        " AND a.project = ?",
        (reason, reason, project))
    return {(r["a"], r["b"]): dict(r) for r in rows}


def test_transitive_dependencies_are_inferred_capped_and_removed_with_a_premise(tmp_path):
    cfg = GraphConfig()
    with manual_daemon(tmp_path, KEYWORD_ONLY) as d:
        remember(d, "Our ShopApi depends on ShopDb.", project="shop")
        remember(d, "Our ShopDb runs on postgres.", project="shop")
        remember(d, "Our ShopApi depends on ShopDb.", project="other")  # no chain
        out = graph_upkeep.run(d.db, cfg)
        assert out["inference"] == {"written": 1, "removed": 0, "chains": 1}
        inferred = _edges(d, "inferred", "shop")
        assert list(inferred) == [("ShopApi", "PostgreSQL")]
        edge = inferred[("ShopApi", "PostgreSQL")]
        assert edge["relation_type"] == "depends_on"
        assert edge["confidence"] == 0.32  # 0.8 x 0.8 x discount 0.5, under the 0.4 cap
        premises = _edges(d, "pattern-matched", "shop")
        assert sorted(json.loads(edge["derived_from"])) == sorted(
            premises[p]["id"] for p in [("ShopApi", "ShopDb"), ("ShopDb", "PostgreSQL")])
        # a second run changes nothing
        assert graph_upkeep.run(d.db, cfg)["inference"]["written"] == 0
        # shown on the entity (any confidence), not walked by impact (below minConfidence)
        detail = d.service.graph.get_entity("ShopApi", RecallFilters(project="shop"))
        reasons = {r["entity"]["name"]: r["reason"] for r in detail["relations"]}
        assert reasons == {"ShopDb": "pattern-matched", "PostgreSQL": "inferred"}
        impact = d.service.graph.graph_impact(ImpactRequest(entity="postgres", project="shop"))
        likely = impact["tiers"]["likely_affected"]
        assert [(i["entity"]["name"], i["path"]) for i in likely] == [
            ("ShopApi", ["PostgreSQL", "ShopDb", "ShopApi"])]
        # a premise below the minimum: the inference goes on the next run
        strict = GraphConfig(inference={"minPremiseConfidence": 0.85})
        assert graph_upkeep.run(d.db, strict)["inference"]["removed"] == 1
        assert _edges(d, "inferred", "shop") == {}
        graph_upkeep.run(d.db, cfg)
        # text stating the edge takes the inferred row over; nothing is inferred over it
        remember(d, "Our ShopApi uses postgres directly.", project="shop")
        assert _edges(d, "inferred", "shop") == {}
        taken = _edges(d, None, "shop")[("ShopApi", "PostgreSQL")]
        assert (taken["reason"], taken["confidence"], taken["derived_from"]) == (
            "pattern-matched", 0.8, None)
        assert graph_upkeep.run(d.db, cfg)["inference"]["written"] == 0
        assert _edges(d, "inferred", "shop") == {}


def test_a_retracted_statement_takes_its_inferences_along(tmp_path):
    cfg = GraphConfig()
    with manual_daemon(tmp_path, KEYWORD_ONLY) as d:
        remember(d, "Our ShopApi depends on ShopDb.")
        stated = d.service.graph.relate(RelateRequest(
            source="Storefront", target="ShopApi", relation_type="calls",
            reason="every page view"))
        graph_upkeep.run(d.db, cfg)
        edge = _edges(d, "inferred")[("Storefront", "ShopDb")]
        assert edge["confidence"] == 0.4  # 1.0 x 0.8 x 0.5 = 0.4: the cap
        out = d.service.graph.retract_relation(stated["relation"]["id"], RetractRequest())
        assert out["inferred_removed"] == 1 and _edges(d, "inferred") == {}


def _at(days: float, start: datetime) -> str:
    return format_ts(start + timedelta(days=days))


def test_feedback_fades_by_days_since_last_confirmed(tmp_path):
    cfg = GraphConfig()  # 0.005 a day, aspects not below 0.3
    with manual_daemon(tmp_path, KEYWORD_ONLY) as d:
        chart = remember(d, "We chart ShopDb latency in Grafana.")
        decision = remember(d, "We decided to go with SQLite for the cache.")
        conn = d.db.reader()
        ids = dict(conn.execute("SELECT canonical_name, id FROM entities").fetchall())
        start = datetime.now(UTC)
        with d.db.write_tx() as w:  # aspects as structural classification files them
            for aspect, entity, memory, weight in [
                    ("a-graf", ids["grafana"], chart, 0.5),
                    ("a-sql", ids["sqlite"], decision, 0.9)]:
                w.execute("INSERT INTO entity_aspects (id, entity_id, name, canonical_name,"
                          " weight, created_at, updated_at, confirmed_at) VALUES (?, ?,"
                          " 'operations', 'operations', ?, ?, ?, ?)",
                          (aspect, entity, weight, *([_at(-1, start)] * 3)))
                w.execute("UPDATE entity_attributes SET aspect_id = ? WHERE memory_id = ?"
                          " AND entity_id = ?", (aspect, memory, entity))
        d.service.feedback.memory_feedback(chart, FeedbackRequest(helpful=True))

        def state() -> tuple[float, float, float, float]:
            row = conn.execute("SELECT confidence, boost FROM relations"
                               " WHERE relation_type = 'co_occurrence'").fetchone()
            weights = dict(conn.execute("SELECT id, weight FROM entity_aspects").fetchall())
            return (round(weights["a-graf"], 4), round(row[0], 4), round(row[1], 4),
                    weights["a-sql"])

        assert state() == (0.55, 0.52, 0.02, 0.9)  # confirmed now: +0.05, +0.02
        graph_upkeep.run(d.db, cfg, now=_at(2, start))
        assert state() == (0.54, 0.51, 0.01, 0.9)  # two days: 0.01 each
        graph_upkeep.run(d.db, cfg, now=_at(2, start))
        assert state() == (0.54, 0.51, 0.01, 0.9)  # the same time again: nothing
        graph_upkeep.run(d.db, cfg, now=_at(10, start))
        assert state() == (0.5, 0.5, 0.0, 0.9)  # the edge is back to what its count earns
        graph_upkeep.run(d.db, cfg, now=_at(200, start))
        assert state() == (0.3, 0.5, 0.0, 0.9)  # the floor; the decision's entity exempt
        # confirmed again: it counts from the later of that and the last run
        d.service.feedback.memory_feedback(chart, FeedbackRequest(helpful=True))
        assert state()[0] == 0.35
        graph_upkeep.run(d.db, cfg, now=_at(204, start))
        assert state()[0] == 0.33
