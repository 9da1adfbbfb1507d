"""The graph's reading of prose: the tagger's pinned data, noun-phrase entities, typed relations,
aliases, and what the inline linker writes of them (docs/graph.md, "Reading prose")."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import run_daemon
from mcp_flow import call
from mnemonist.bench.graph_quality import score
from mnemonist.cli.main import cli
from mnemonist.text import tagger
from mnemonist.text.phrases import noun_phrases, singular
from mnemonist.text.prose_graph import read
from test_mcp_http import http_session

KEYWORD_ONLY: dict[str, Any] = {"embedding": {"provider": "none"}}

SHOP = [
    "The checkout API writes orders to PostgreSQL.",
    "The nightly backup job dumps PostgreSQL to S3.",
    "The reporting dashboard reads from the checkout API.",
    "The checkout API depends on Redis for sessions.",
]


def relations(text: str) -> list[tuple[str, str, str]]:
    return [(r.source, r.relation_type, r.target) for r in read(text).relations]


def names(text: str) -> list[str]:
    return [e.name for e in read(text).entities]


# --- the tagger's data ----------------------------------------------------------------------


def test_tagger_reads_the_pinned_data_and_tags_verbs_apart_from_nouns() -> None:
    assert tagger.available()
    words = ["The", "checkout", "API", "writes", "orders", "to", "PostgreSQL", "."]
    tags = tagger.tag(words)
    assert tags[3] == "VBZ" and tags[4] == "NNS" and tags[0] == "DT"


def test_changed_tagger_data_is_refused_and_the_reader_adds_no_phrase(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.find_spec("textblob")
    assert spec is not None and spec.submodule_search_locations
    copy = tmp_path / "textblob"
    shutil.copytree(Path(next(iter(spec.submodule_search_locations))) / "en", copy / "en")
    with (copy / "en" / "en-context.txt").open("a") as f:
        f.write("NN VB PREVTAG TO\n")  # one more rule: not the pinned file
    fake = importlib.util.spec_from_loader("textblob", loader=None, is_package=True)
    assert fake is not None
    fake.submodule_search_locations = [str(copy)]
    monkeypatch.setattr(tagger.importlib.util, "find_spec", lambda name: fake)
    tagger._rules.cache_clear()
    read.cache_clear()
    try:
        assert not tagger.available()
        assert names("The checkout API writes orders to PostgreSQL.") == ["PostgreSQL"]
    finally:
        monkeypatch.undo()
        tagger._rules.cache_clear()
        read.cache_clear()
    assert tagger.available()


# --- entities from prose --------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("The checkout API writes orders to PostgreSQL.", ["checkout API", "PostgreSQL"]),
    ("The nightly backup job dumps PostgreSQL to S3.",
     ["nightly backup job", "PostgreSQL", "S3"]),
    ("Caroline's adoption agency opened in May.", ["Caroline's adoption agency", "Caroline"]),
    ("We shipped the Q3 roadmap.", ["Q3 roadmap"]),
    ("We moved the new billing service last week.", ["billing service"]),  # "new" describes
    ("The database was slow and the server restarted.", []),  # bare nouns name nothing
    ("My friend Tasha loves it.", ["Tasha"]),  # "friend" says who she is, not another thing
    ("I had a great time at the lake.", []),
])
def test_noun_phrases_that_name_things(text: str, expected: list[str]) -> None:
    assert sorted(names(text)) == sorted(expected)


def test_phrase_canonical_form_folds_the_plural_and_keeps_the_display() -> None:
    [queues] = noun_phrases("The worker queues are full.")
    assert (queues.name, queues.key) == ("worker queues", "worker queue")
    assert [singular(w) for w in ("policies", "boxes", "status", "news", "APIs")] == [
        "policy", "box", "status", "news", "API"]


# --- relations ------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    (SHOP[0], [("checkout api", "writes_to", "postgresql")]),
    (SHOP[1], [("nightly backup job", "reads_from", "postgresql"),
               ("nightly backup job", "writes_to", "s3")]),
    (SHOP[2], [("reporting dashboard", "reads_from", "checkout api")]),
    (SHOP[3], [("checkout api", "depends_on", "redis")]),
    ("The Q3 roadmap is owned by the platform team.",
     [("q3 roadmap", "owned_by", "platform team")]),
    ("Kafka was replaced by the Redpanda cluster.", [("redpanda cluster", "replaced", "kafka")]),
    ("We moved the billing service to Fly.io.", [("billing service", "moved_to", "fly.io")]),
    ("We switched from Jenkins to GitHub Actions.",
     [("github actions", "replaced", "jenkins")]),
    ("Maria works at Acme and lives in Lisbon.",
     [("maria", "works_at", "acme"), ("maria", "lives_in", "lisbon")]),
    ("Melanie joined the pottery class.", [("melanie", "member_of", "pottery class")]),
    ("The auth service and the billing service depend on postgres.",
     [("billing service", "depends_on", "postgresql"),
      ("auth service", "depends_on", "postgresql")]),
])
def test_relations_stated_in_one_sentence(text: str, expected: list[tuple[str, str, str]]
                                          ) -> None:
    assert relations(text) == expected


@pytest.mark.parametrize("text", [
    "The checkout API no longer depends on Redis.",
    "The checkout API doesn't write to PostgreSQL.",
    "Does the billing service use Stripe?",
    "We might move the billing service to Fly.io.",
    "Neither Atlas nor Relay writes to S3.",
    "The checkout API and Redis were slow today.",
])
def test_negations_questions_and_mere_co_mentions_state_no_relation(text: str) -> None:
    assert relations(text) == []


def test_an_alias_in_parentheses_is_the_same_entity_and_a_relation_makes_a_name() -> None:
    got = read("The checkout API (CheckoutApi) reads prices from the catalog service.")
    assert [e.name for e in got.entities] == ["checkout API", "catalog service"]
    assert [(a.name, a.primary) for a in got.aliases] == [("CheckoutApi", "checkout api")]
    assert relations("CheckoutApi depends on PostgreSQL.") == [
        ("checkoutapi", "depends_on", "postgresql")]
    assert names("CheckoutApi depends on PostgreSQL.") == ["CheckoutApi", "PostgreSQL"]
    # without a relation a lone word at a sentence start stays tentative
    assert [e.name for e in read("Quokka is slow today.").tentative] == ["Quokka"]


# --- the labelled set -----------------------------------------------------------------------


def test_the_labelled_set_meets_the_quality_bar() -> None:
    """The figures README, docs/graph.md and docs/benchmarks.md give (`mnemonist bench graph`:
    entities 0.92 / 0.86, relations 0.92 / 0.66), above the bar the graph issue set (0.85 /
    0.80, 0.75 / 0.60)."""
    report = score()
    overall = report["kinds"]["all"]
    assert report["items"] >= 300
    assert overall["entities"]["precision"] >= 0.915 and overall["entities"]["recall"] >= 0.855
    assert overall["relations"]["precision"] >= 0.915
    assert overall["relations"]["recall"] >= 0.655


def test_bench_graph_command_prints_the_table() -> None:
    out = CliRunner().invoke(cli, ["bench", "graph"])
    assert out.exit_code == 0, out.output
    assert "| all | " in out.output and "entity P" in out.output


# --- what the linker writes, and graph_impact over HTTP and MCP -------------------------------


def _tiers(impact: dict[str, Any]) -> dict[str, set[str]]:
    return {tier: {i["entity"]["name"] for i in items} for tier, items in impact["tiers"].items()}


def test_impact_of_postgresql_over_four_plain_sentences_on_http_and_mcp(tmp_path: Path) -> None:
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        for text in SHOP:
            live.remember(text, project="shop")
        impact = live.http.post("/api/graph/impact",
                                json={"entity": "PostgreSQL", "project": "shop"}).json()
        tiers = _tiers(impact)
        assert tiers["will_break"] == {"checkout API", "nightly backup job"}
        assert tiers["likely_affected"] == {"reporting dashboard"}
        edge = impact["tiers"]["will_break"][0]["edges"][0]
        assert edge["reason"] == "pattern-matched" and edge["confidence"] < 1.0
        assert edge["note"] in SHOP  # the sentence that stated it

        async def over_mcp() -> dict[str, Any]:
            async with http_session(live.url) as session:
                return await call(session, "graph_impact",
                                  {"entity": "postgres", "project": "shop"})

        assert _tiers(asyncio.run(over_mcp())) == tiers


def test_linker_writes_typed_relations_and_resolves_an_alias_later(tmp_path: Path) -> None:
    with run_daemon(tmp_path, KEYWORD_ONLY) as live:
        live.remember("The checkout API (CheckoutApi) reads prices from the catalog service.",
                      project="shop")
        live.remember("CheckoutApi writes orders to PostgreSQL.", project="shop")
        conn = live.daemon.db.reader()
        entities = dict(conn.execute(
            "SELECT canonical_name, entity_type FROM entities WHERE project = 'shop'"))
        assert entities == {"checkout api": "phrase", "catalog service": "phrase",
                            "postgresql": "technology"}
        rows = conn.execute(
            "SELECT s.canonical_name, r.relation_type, t.canonical_name FROM relations r"
            " JOIN entities s ON s.id = r.source_entity_id"
            " JOIN entities t ON t.id = r.target_entity_id"
            " WHERE r.relation_type != 'co_occurrence' ORDER BY 1, 2").fetchall()
        assert [tuple(r) for r in rows] == [
            ("checkout api", "reads_from", "catalog service"),
            ("checkout api", "writes_to", "postgresql")]
        alias = conn.execute("SELECT name FROM entity_aliases WHERE canonical_name ="
                             " 'checkoutapi'").fetchone()
        assert alias is not None and alias[0] == "CheckoutApi"


def test_a_bulk_import_reads_its_prose_in_the_background_and_skips_what_changed(
        tmp_path: Path) -> None:
    """Import links names in its transaction; the prose job adds the phrases and relations
    after, once each, and passes over a memory deleted or rewritten meanwhile."""
    from mnemonist.model.requests import (
        DeleteRequest,
        ImportRequest,
        MemoryPatch,
        RememberRequest,
    )
    from pipeline_helpers import manual_daemon, run_prose

    items = [RememberRequest(content=text, project="shop") for text in (
        "The checkout API writes orders to PostgreSQL.",
        "The reporting dashboard reads from the checkout API.",
        "The nightly backup job dumps PostgreSQL to S3.")]
    with manual_daemon(tmp_path, KEYWORD_ONLY) as d:
        ids = [r["id"] for r in d.service.carry.import_memories(ImportRequest(
            items=items))["items"]]
        conn = d.db.reader()

        def typed() -> list[tuple[str, str, str, int]]:
            return [tuple(r) for r in conn.execute(
                "SELECT s.canonical_name, r.relation_type, t.canonical_name, r.mentions"
                " FROM relations r JOIN entities s ON s.id = r.source_entity_id"
                " JOIN entities t ON t.id = r.target_entity_id"
                " WHERE r.relation_type != 'co_occurrence' ORDER BY 1, 2, 3")]

        assert typed() == []  # names only so far
        d.service.memories.patch(ids[1], MemoryPatch(
            content="The reporting dashboard reads from the checkout API every hour.",
            reason="more precise"))  # linked in full by the modify
        d.service.memories.delete(ids[2], DeleteRequest(reason="wrong"))
        assert run_prose(d) == 1
        assert typed() == [("checkout api", "writes_to", "postgresql", 1),
                           ("reporting dashboard", "reads_from", "checkout api", 1)]
        result = conn.execute("SELECT result FROM memory_jobs WHERE job_type = 'prose_link'"
                              ).fetchone()[0]
        assert '"linked": 1' in result and '"skipped": 2' in result
