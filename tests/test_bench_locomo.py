"""The LoCoMo benchmark harness on a tiny invented conversation set (no LoCoMo data here:
the real file is CC BY-NC and is only ever read from its own path at run time)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mnemonist.bench.locomo import (
    hit_at,
    ndcg_at,
    question_metrics,
    recall_at,
    reciprocal_rank,
    render_markdown,
    session_recall_at,
)
from mnemonist.bench.locomo_data import (
    load_locomo,
    parse_session_datetime,
    split_evidence,
    turn_content,
)
from mnemonist.cli.bench_locomo import locomo
from mnemonist.model.requests import RememberRequest

SYSTEMS = ("mnemonist", "bm25", "dense")


def turn(dia_id: str, speaker: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


SAMPLES: list[dict[str, Any]] = [
    {
        "sample_id": "syn-a",
        "conversation": {
            "speaker_a": "Ava",
            "speaker_b": "Ben",
            # session 2 comes first on purpose: sessions are ordered by number
            "session_2_date_time": "10:15 am on 3 June, 2023",
            "session_2": [
                turn("D2:1", "Ava", "I finally finished painting the lighthouse mural downtown."),
                turn("D2:2", "Ben", "My cello recital is scheduled at the old observatory."),
            ],
            "session_1_date_time": "4:12 pm on 9 March, 2023",
            "session_1": [
                turn("D1:1", "Ava", "I adopted a greyhound named Pickles from the shelter."),
                turn("D1:2", "Ben", "I started learning the cello at the community school."),
                turn(
                    "D1:3",
                    "Ava",
                    "Pickles loves chasing tennis balls.",
                    blip_caption="a photo of a dog running on grass",
                ),
                turn("D1:4", "Ben", "Sounds lovely."),
                turn("D1:5", "Ben", "Sounds lovely."),  # same words, same session: one memory
            ],
            "session_3_date_time": "7:05 pm on 21 July, 2023",
            "session_3": [
                turn("D3:1", "Ava", "We hiked the volcano trail in Iceland together."),
                turn("D3:2", "Ben", "See you next week!"),
            ],
            "session_4_date_time": "8:00 pm on 1 August, 2023",  # a date with no session
        },
        "qa": [
            {
                "question": "What is the name of the greyhound Ava adopted?",
                "answer": "Pickles",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "Where is Ben's cello recital and where did he learn the cello?",
                "answer": "observatory; community school",
                "evidence": ["D1:2; D2:2"],
                "category": 1,
            },
            {
                "question": "When did Ava finish the lighthouse mural?",
                "answer": "June 2023",
                "evidence": ["D2:1", "D9:99"],
                "category": 2,
            },
            {
                "question": "What instrument did Ava learn?",
                "adversarial_answer": "cello",
                "evidence": ["D1:2"],
                "category": 5,
            },
            {
                "question": "Would Ava enjoy Iceland?",
                "answer": "yes",
                "evidence": [],
                "category": 3,
            },
            {
                "question": "How did Ben answer twice?",
                "answer": "Sounds lovely",
                "evidence": ["D1:4", "D1:5"],
                "category": 4,
            },
        ],
    },
    {
        "sample_id": "syn-b",
        "conversation": {
            "speaker_a": "Cleo",
            "speaker_b": "Dev",
            "session_1_date_time": "9:30 am on 2 January, 2024",
            "session_1": [
                turn("D1:1", "Cleo", "I planted tomatoes and basil in the rooftop garden."),
                turn("D1:2", "Dev", "I am building a wooden kayak in my garage."),
                turn("D1:3", "Cleo", "The basil smells amazing."),
            ],
            "session_2_date_time": "4:45 pm on 14 February, 2024",
            "session_2": [
                turn("D2:1", "Dev", "The kayak launched on the lake yesterday."),
                turn("D2:2", "Cleo", "My rooftop garden survived the storm."),
                # the same content as syn-a D3:2, but another conversation: its own memory
                turn("D2:3", "Ben", "See you next week!"),
            ],
        },
        "qa": [
            {
                "question": "What is Dev building in the garage?",
                "answer": "a kayak",
                "evidence": ["D1:2"],
                "category": 4,
            },
            {
                "question": "When did the kayak launch on the lake?",
                "answer": "February 2024",
                "evidence": ["D2:1"],
                "category": 2,
            },
            {
                "question": "greyhound Pickles lighthouse mural",
                "answer": "nothing",
                "evidence": ["D2:2"],
                "category": 3,
            },
            {
                "question": "What did the storm do?",
                "answer": "nothing",
                "evidence": ["D7"],
                "category": 4,
            },
        ],
    },
]


def write_data(folder: Path) -> Path:
    path = folder / "synthetic-locomo.json"
    path.write_text(json.dumps(SAMPLES), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("locomo")
    data = write_data(folder)
    out = folder / "results"
    result = CliRunner().invoke(
        locomo, ["--data", str(data), "--out", str(out), "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return {"result": json.loads(result.stdout), "stderr": result.stderr, "out": out}


def question(res: dict[str, Any], sample_id: str, qa_index: int) -> dict[str, Any]:
    return next(
        q for q in res["questions"] if q["sample_id"] == sample_id and q["qa_index"] == qa_index
    )


# -- the command end to end ----------------------------------------------------------------


def test_every_system_reports_every_metric_in_range(bench):
    res = bench["result"]
    assert set(res["systems"]) == set(SYSTEMS)
    for system in SYSTEMS:
        overall = res["systems"][system]["overall"]
        for key in ("recall@5", "recall@10", "recall@20", "hit@10", "mrr", "ndcg@10",
                    "session_any@5", "session_all@5"):  # fmt: skip
            assert 0.0 <= overall[key] <= 1.0, (system, key)
        for cat in res["systems"][system]["by_category"].values():
            assert all(0.0 <= v <= 1.0 for k, v in cat.items() if "@" in k or k == "mrr")
    assert res["latency_ms"]["mnemonist"]["n"] == res["data"]["questions_evaluated"]
    assert res["latency_ms"]["mnemonist"]["p95"] >= res["latency_ms"]["mnemonist"]["p50"] > 0
    assert res["ingest"]["memories_per_s"] > 0
    assert res["ingest"]["embedding_complete"] is True
    assert res["recall_degraded_to_keyword"] == 0
    assert "live" in res["config"]["access_tracking"]
    assert res["access"]["memories_with_recorded_access"] > 0
    assert "[locomo]" in bench["stderr"]


def test_counts_dedup_and_dropped_evidence(bench):
    data = bench["result"]["data"]
    assert data["conversations"] == 2
    assert data["sessions"] == 5  # session_4 has a date but no turns
    assert data["turns"] == 15
    # "Ben: Sounds lovely." twice in one syn-a session is one memory (both dia_ids map to it);
    # "Ben: See you next week!" in both conversations stays two memories
    assert data["deduplicated_turns"] == 1
    assert data["memories"] == 14
    assert bench["result"]["ingest"]["vectors"] == 14
    assert data["questions_total"] == 10
    # no evidence at all, and evidence naming no turn ("D7") only
    assert data["questions_skipped_no_evidence"] == 2
    assert data["questions_evaluated"] == 8
    assert data["questions_evaluated_by_category"] == {"1": 1, "2": 2, "3": 1, "4": 3, "5": 1}
    assert sorted(data["evidence_ids_dropped_list"]) == ["syn-a:D9:99", "syn-b:D7"]
    assert data["evidence_ids_dropped"] == 2
    # the malformed "D1:2; D2:2" became two evidence turns
    assert question(bench["result"], "syn-a", 1)["evidence_turns"] == 2
    assert question(bench["result"], "syn-a", 2)["evidence_turns"] == 1
    # two evidence turns, one memory: recall counts the memory once
    deduped = question(bench["result"], "syn-a", 5)
    assert (deduped["evidence_turns"], deduped["evidence_memories"]) == (2, 1)


def test_category_5_is_reported_but_not_in_overall(bench):
    res = bench["result"]
    assert res["data"]["questions_overall"] == 7
    for system in SYSTEMS:
        summary = res["systems"][system]
        assert summary["overall"]["n"] == 7
        cats = summary["by_category"]
        assert cats["5"] == {**cats["5"], "n": 1, "in_overall": False, "name": "adversarial"}
        assert all(cats[c]["in_overall"] for c in ("1", "2", "3", "4"))
        weighted = sum(cats[c]["n"] * cats[c]["recall@10"] for c in ("1", "2", "3", "4")) / 7
        assert summary["overall"]["recall@10"] == pytest.approx(weighted, abs=1e-3)


def test_a_question_sharing_distinctive_words_is_found_first(bench):
    q = question(bench["result"], "syn-a", 0)  # greyhound adopted -> D1:1
    assert q["first_rank"]["bm25"] == 1
    assert q["first_rank"]["mnemonist"] == 1
    q = question(bench["result"], "syn-b", 0)  # building garage -> D1:2
    assert q["first_rank"]["bm25"] == 1
    assert q["first_rank"]["mnemonist"] == 1


def test_conversations_are_isolated(bench):
    res = bench["result"]
    # its words appear only in syn-a: the keyword leg, restricted to syn-b, finds nothing
    q = question(res, "syn-b", 2)
    assert q["retrieved"]["bm25"] == 0 and q["first_rank"]["bm25"] is None
    # every system only ever returned memories of the question's own conversation
    assert all(n == 0 for n in res["foreign_results"].values())
    for q in res["questions"]:
        size = 8 if q["sample_id"] == "syn-a" else 6  # memories per conversation
        assert q["retrieved"]["dense"] == size
        assert q["retrieved"]["mnemonist"] <= size


def test_report_files_are_written(bench):
    res = bench["result"]
    js, md = Path(res["files"]["json"]), Path(res["files"]["markdown"])
    assert js.parent == bench["out"] and md.parent == bench["out"]
    assert js.name.startswith("locomo-") and js.suffix == ".json" and md.suffix == ".md"
    assert json.loads(js.read_text())["systems"] == res["systems"]
    text = md.read_text()
    assert "| mnemonist (hybrid) |" in text and "| BM25 only |" in text
    assert "| dense only |" in text and "5 adversarial (not in overall)" in text
    # only ids and numbers leave the data file: no question or turn text in the results
    for blob in (js.read_text(), text):
        assert "greyhound" not in blob and "Pickles" not in blob


def test_markdown_is_printed_without_json(tmp_path):
    data = write_data(tmp_path)
    result = CliRunner().invoke(
        locomo, ["--data", str(data), "--out", str(tmp_path / "r"), "--limit", "1",
                 "--questions", "1", "--k", "3,10", "--quiet"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# LoCoMo recall")
    assert "| R@3 | R@10 |" in result.stdout
    assert result.stderr.count("[locomo]") == 0
    saved = json.loads(next((tmp_path / "r").glob("locomo-*.json")).read_text())
    assert saved["data"]["conversations"] == 1 and saved["data"]["questions_evaluated"] == 1
    assert saved["config"]["ks"] == [3, 10]


def test_data_path_options_and_errors(tmp_path, monkeypatch):
    runner = CliRunner()
    monkeypatch.setenv("MNEMONIST_LOCOMO", str(tmp_path / "missing.json"))
    out = runner.invoke(locomo, [])
    assert out.exit_code == 2 and "MNEMONIST_LOCOMO" in out.output
    out = runner.invoke(locomo, ["--data", str(tmp_path / "nope.json")])
    assert out.exit_code == 2 and "not a file" in out.output
    out = runner.invoke(locomo, ["--data", str(write_data(tmp_path)), "--k", "five"])
    assert out.exit_code == 2 and "comma-separated" in out.output
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            [
                {
                    "sample_id": "x",
                    "conversation": {
                        "session_1_date_time": "sometime",
                        "session_1": [turn("D1:1", "A", "hi")],
                    },
                }
            ]
        )
    )
    out = runner.invoke(locomo, ["--data", str(bad), "--out", str(tmp_path / "r")])
    assert out.exit_code == 1 and "x session 1" in out.output


# -- data loading --------------------------------------------------------------------------


def test_session_date_times_parse():
    assert parse_session_datetime("4:12 pm on 9 March, 2023") == datetime(
        2023, 3, 9, 16, 12, tzinfo=UTC
    )
    assert parse_session_datetime("12:05 am on 1 January, 2024") == datetime(
        2024, 1, 1, 0, 5, tzinfo=UTC
    )
    assert parse_session_datetime("12:30 pm on 15 Aug, 2023") == datetime(
        2023, 8, 15, 12, 30, tzinfo=UTC
    )
    assert parse_session_datetime(" 10:15 AM on 3 June 2023 ") == datetime(
        2023, 6, 3, 10, 15, tzinfo=UTC
    )
    for bad in ("yesterday", "13:00 pm on 1 May, 2023", "1:00 pm on 31 June, 2023",
                "1:00 pm on 3 Smarch, 2023", ""):  # fmt: skip
        with pytest.raises(ValueError):
            parse_session_datetime(bad)


def test_evidence_split_and_turn_content():
    assert split_evidence(["D2:7; D5:3", " D1:2 ", "D1:2", "", "D3:1,D3:2"]) == [
        "D2:7", "D5:3", "D1:2", "D3:1", "D3:2",
    ]  # fmt: skip
    assert turn_content("Ava", " hi there ") == "Ava: hi there"
    assert turn_content("Ava", "look", "a photo of a dog") == "Ava: look [shares a photo of a dog]"
    assert turn_content("Ava", "", "a photo of a cat") == "Ava: [shares a photo of a cat]"


def test_loader_orders_sessions_and_validates_evidence(tmp_path):
    a, b = load_locomo(write_data(tmp_path))
    assert (a.sample_id, a.speakers) == ("syn-a", ("Ava", "Ben"))
    assert [s.number for s in a.sessions] == [1, 2, 3]
    assert a.sessions[0].date_time == datetime(2023, 3, 9, 16, 12, tzinfo=UTC)
    assert [t.dia_id for t in a.turns()][:4] == ["D1:1", "D1:2", "D1:3", "D1:4"]
    assert a.turns()[2].content.endswith("[shares a photo of a dog running on grass]")
    assert a.session_of()["D2:2"] == 2
    assert a.qa[1].evidence == ("D1:2", "D2:2")
    assert a.qa[2].evidence == ("D2:1",) and a.qa[2].dropped_evidence == ("D9:99",)
    assert a.qa[3].answer == "cello" and a.qa[3].category == 5
    assert b.qa[3].evidence == () and b.qa[3].dropped_evidence == ("D7",)


# -- metrics -------------------------------------------------------------------------------

RANKED = ["a", "b", "c", "d", "e"]
RELEVANT = {"b", "d", "z"}


def test_recall_hit_and_reciprocal_rank():
    assert recall_at(RANKED, RELEVANT, 1) == 0.0
    assert recall_at(RANKED, RELEVANT, 2) == pytest.approx(1 / 3)
    assert recall_at(RANKED, RELEVANT, 5) == pytest.approx(2 / 3)
    assert recall_at(RANKED, RELEVANT, 50) == pytest.approx(2 / 3)
    assert recall_at(RANKED, set(), 5) == 0.0
    assert hit_at(RANKED, RELEVANT, 1) == 0.0 and hit_at(RANKED, RELEVANT, 2) == 1.0
    assert reciprocal_rank(RANKED, RELEVANT) == 0.5
    assert reciprocal_rank(RANKED, {"e"}) == 0.2
    assert reciprocal_rank(RANKED, {"z"}) == 0.0
    assert reciprocal_rank([], RELEVANT) == 0.0


def test_ndcg():
    dcg = 1 / math.log2(3) + 1 / math.log2(5)  # hits at ranks 2 and 4
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)  # three relevant items
    assert ndcg_at(RANKED, RELEVANT, 10) == pytest.approx(dcg / ideal)
    assert ndcg_at(RANKED, RELEVANT, 10) == pytest.approx(0.498189, abs=1e-6)
    assert ndcg_at(["b", "d", "a"], {"b", "d"}, 10) == pytest.approx(1.0)
    assert ndcg_at(["a", "b"], {"b"}, 1) == 0.0
    # the ideal is capped at k relevant items
    many = [f"r{i}" for i in range(12)]
    assert ndcg_at(many, set(many), 10) == pytest.approx(1.0)
    assert ndcg_at([], {"a"}, 10) == 0.0


def test_session_any_and_all():
    ranked_sessions = [{1}, {2}, {1, 3}]
    assert session_recall_at(ranked_sessions, {2, 3}, 1) == (0.0, 0.0)
    assert session_recall_at(ranked_sessions, {2, 3}, 2) == (1.0, 0.0)
    assert session_recall_at(ranked_sessions, {2, 3}, 3) == (1.0, 1.0)
    assert session_recall_at([], {1}, 5) == (0.0, 0.0)


def test_question_metrics_maps_turns_to_sessions():
    sessions_of = {"a": {1}, "b": {2}, "c": {1}, "d": {3, 4}}
    m = question_metrics(["a", "b", "a", "c", "d"], {"d"}, sessions_of, {4}, (1, 3, 5, 10))
    # the repeated "a" is dropped: d is at rank 4
    assert m["recall@3"] == 0.0 and m["recall@5"] == 1.0 and m["hit@10"] == 1.0
    assert m["mrr"] == 0.25
    assert m["ndcg@10"] == pytest.approx(1 / math.log2(5))
    assert (m["session_any@3"], m["session_all@3"]) == (0.0, 0.0)
    assert (m["session_any@5"], m["session_all@5"]) == (1.0, 1.0)


def test_ablations_score_variants_on_the_same_memories_and_undo_them(tmp_path):
    data = write_data(tmp_path)
    result = CliRunner().invoke(
        locomo, ["--data", str(data), "--out", str(tmp_path / "r"), "--json", "--quiet",
                 "--variant", "same: search.alpha=0.7",
                 "--variant", "keyword-only: search.alpha=0, search.context_window=0",
                 "--variant", "no-hub: memory.pipelineV2.dampening.hubEnabled=false"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    res = json.loads(result.stdout)
    rows = {a["name"]: a for a in res["ablations"]}
    assert list(rows) == ["same", "keyword-only", "no-hub"]
    assert rows["keyword-only"]["settings"] == {"search.alpha": 0, "search.context_window": 0}
    default = res["systems"]["mnemonist"]["overall"]
    # the default's own settings score exactly what the main run scored
    assert rows["same"]["overall"]["recall@10"] == pytest.approx(default["recall@10"])
    assert rows["same"]["overall"]["mrr"] == pytest.approx(default["mrr"])
    assert 0.0 <= rows["keyword-only"]["overall"]["recall@5"] <= 1.0
    assert "| keyword-only | `search.alpha=0`, `search.context_window=0` |" in render_markdown(res)


def test_a_variant_applies_to_the_live_service_and_is_undone(tmp_path):
    from mnemonist.bench.ablation import applied, parse_variant
    from mnemonist.daemon import open_memory

    daemon = open_memory(tmp_path, {"embedding": {"provider": "none"}})
    try:
        svc = daemon.service
        svc.memories.remember(RememberRequest(
            content="Ana: which bike", source_id="s", project="p"))
        svc.memories.remember(RememberRequest(
            content="Ben: the blue one", source_id="s", project="p"))

        def context_rows() -> int:
            return daemon.db.reader().execute("SELECT count(*) FROM memory_context").fetchone()[0]

        assert context_rows() == 2
        variant = parse_variant("v: search.alpha=0.2, search.context_window=0,"
                                " memory.pipelineV2.dampening.hubEnabled=false")
        with applied(svc, variant):
            assert svc.core.config.search.alpha == 0.2
            assert svc.core.config.memory.pipeline_v2.dampening.hub_enabled is False
            assert context_rows() == 0  # the index follows the window
        assert svc.core.config.search.alpha == 0.7
        assert svc.core.config.memory.pipeline_v2.dampening.hub_enabled is True
        assert context_rows() == 2
        with pytest.raises(ValueError, match=r"search\.top_k"), applied(
            svc, parse_variant("w: search.alpha=0.5, search.top_k=0")
        ):
            pass
        assert svc.core.config.search.alpha == 0.7  # a bad value leaves nothing changed
    finally:
        daemon.stop()


def test_a_variant_that_cannot_change_at_query_time_is_refused(tmp_path):
    data = write_data(tmp_path)
    runner = CliRunner()
    out = runner.invoke(locomo, ["--data", str(data), "--variant", "x: graph.inlineLinker=true"])
    assert out.exit_code == 2 and "cannot change between runs" in out.output
    out = runner.invoke(locomo, ["--data", str(data), "--variant", "no equals sign"])
    assert out.exit_code == 2 and "expected 'name: key=value" in out.output
    out = runner.invoke(locomo, ["--data", str(data), "--out", str(tmp_path / "r"), "--quiet",
                                 "--limit", "1", "--questions", "1",
                                 "--variant", "bad: search.alpha=7"])
    assert out.exit_code == 1 and "search.alpha = 7" in out.output


def test_an_aged_variant_moves_the_decay_clock_and_dates_and_undoes_both(tmp_path):
    from mnemonist.bench.ablation import applied, parse_variant
    from mnemonist.bench.locomo import reset_access
    from mnemonist.daemon import open_memory
    from mnemonist.model.requests import RecallRequest

    daemon = open_memory(tmp_path, {"embedding": {"provider": "none"}})
    try:
        svc = daemon.service
        made = svc.memories.remember(RememberRequest(content="the build is red", type="status",
                                                     occurred_at="2023-05-01T10:00:00Z"))["id"]

        def created() -> str:
            return daemon.db.reader().execute(
                "SELECT created_at FROM memories WHERE id = ?", (made,)).fetchone()[0]

        before, clock = created(), svc.core.searcher.clock
        variant = parse_variant("s: bench.age=spoken, memory.decay_types=[fact, status]")
        assert dict(variant.settings)["memory.decay_types"] == ["fact", "status"]
        with applied(svc, variant):
            assert created() == "2023-05-01T10:00:00.000Z"
            assert svc.core.searcher.clock().year == 2023  # the day after the last turn
            assert svc.core.config.memory.decay_types == ["fact", "status"]
        assert created() == before and svc.core.searcher.clock is clock
        assert svc.core.config.memory.decay_types == ["status"]
        with applied(svc, parse_variant("d: bench.age=90")):
            ahead = svc.core.searcher.clock() - clock()
            assert 89.9 < ahead.total_seconds() / 86400 < 90.1
        with pytest.raises(ValueError, match=r"bench\.age"):
            parse_variant("x: bench.age=soon")
        with pytest.raises(ValueError, match="unknown bench key"):
            parse_variant("x: bench.speed=2")

        svc.reads.recall(RecallRequest(query="build", min_score=0.0))
        svc.core.access.flush()
        reset_access(svc)  # every variant starts from nothing recalled
        row = daemon.db.reader().execute(
            "SELECT access_count, recall_count, last_accessed FROM memories WHERE id = ?",
            (made,)).fetchone()
        assert tuple(row) == (0, 0, None)
    finally:
        daemon.stop()


def test_set_turns_on_the_sparse_leg_and_variants_report_each_conversation(tmp_path):
    data = write_data(tmp_path)
    result = CliRunner().invoke(
        locomo, ["--data", str(data), "--out", str(tmp_path / "r"), "--json", "--quiet",
                 "--set", "sparse.enabled=true", "--set", "sparse.fields=content",
                 "--variant", "off: search.sparse_weight=0",
                 "--variant", "splade-only: search.alpha=0, search.sparse_weight=1,"
                 " search.sparse_fields=content"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    res = json.loads(result.stdout)
    assert res["config"]["sparse"]["enabled"] is True
    rows = {a["name"]: a for a in res["ablations"]}
    default = res["systems"]["mnemonist"]["overall"]
    assert rows["off"]["overall"]["mrr"] == pytest.approx(default["mrr"])
    sids = {c["sample_id"] for c in json.loads(data.read_text())}
    for row in rows.values():
        assert set(row["by_conversation"]) == sids
        n = sum(c["n"] for c in row["by_conversation"].values())
        assert n == row["overall"]["n"]
    # the sparse leg alone finds what shares the question's words (expanded)
    assert rows["splade-only"]["overall"]["recall@10"] > 0.0


def test_a_bad_set_is_refused_by_name(tmp_path):
    data = write_data(tmp_path)
    out = CliRunner().invoke(locomo, ["--data", str(data), "--out", str(tmp_path / "r"),
                                      "--quiet", "--set", "search.sparse_weight=3"])
    assert out.exit_code == 2
    assert "sparse_weight" in out.output
    out = CliRunner().invoke(locomo, ["--data", str(data), "--set", "no-equals"])
    assert out.exit_code == 2 and "is not KEY=VALUE" in out.output
