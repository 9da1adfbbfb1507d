"""The markdown table of `mnemonist bench scale`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: what each measure of the report is, printed under it
NOTES = (
    "remember: RememberRequest validation + service.memories.remember (the call the HTTP "
    "route makes; HTTP and JSON excluded), one caller thread. The background embedder runs "
    "concurrently, as in production: it shares the writer lock and the CPUs.",
    "recall: RecallRequest validation + service.reads.recall, limit 10, no filters. Every "
    "query string is distinct, so the service's query-embedding LRU cache never answers: "
    "each recall pays one query embedding.",
    "legs alone (same queries, same run): query embedding = provider.embed([query]); "
    "keyword = search.keyword.keyword_search (FTS5 BM25, top_k) on the reader connection; "
    "vector = VectorIndex.search with the precomputed query vector (top_k).",
    "recall ÷ its three legs: recall p50 over the sum of the p50s of the query embedding, the "
    "keyword leg as recall runs it (context index and its phrase query; from the keyword "
    "mirror when recall reads it) and the vector leg; recall embeds the query on a thread of "
    "its own while it runs the keyword leg, so the two can overlap on two cores. The legs "
    "alone run in loops, each warm from the query before; one after another per query, as a "
    "recall runs them, each finds the CPU caches the other two left (the row below it).",
    "recall's stages: the wall time between the marks of HybridSearch._search "
    "(search/stages.py), per recall; the keyword leg inside recall runs beside the query "
    "embedding, and its p50 over the same leg alone says what running them together costs.",
    "RSS: the whole benchmark process (interpreter, daemon, embedding model and the "
    "benchmark's own few MB of bookkeeping); the peak is reset per size where Linux allows.",
    "embedding model loaded before the first remember (load time reported apart).",
    "on a CPU / waiting for a CPU: the calling thread's schedstat deltas per call (Linux); "
    "wall time well above time on a CPU, with the difference waiting for a CPU, means the "
    "machine was busy (other processes, or the embedder), not that the code was slow.",
    "consolidation: the background worker is off (memory.consolidation.enabled: false) until "
    "its phase, which runs one full pass from cursor 0, service.curation.consolidate() back "
    "to back "
    "(each run at most maxBatches batches; the worker's intervalMs pause left out) in one "
    "thread while the main thread remembers at a steady pace; batch write = "
    "pipeline.consolidation._apply (writer lock wait + the batch's transaction).",
)



def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _pcts(d: dict[str, Any], digits: int = 2) -> str:
    if not d.get("count"):
        return "–"
    return " / ".join(_fmt(d.get(k), digits) for k in ("p50", "p95", "p99"))


def _cpu_wait(phase: dict[str, Any]) -> str:
    if "on_cpu_ms" not in phase:
        return "–"
    return f"{_fmt(phase['on_cpu_ms']['p95'], 2)} / {_fmt(phase['waiting_for_cpu_ms']['p95'], 2)}"


def _mark(check: dict[str, Any]) -> str:
    return f"{'met' if check['met'] else 'MISSED'} (≤ {check['limit']:g})"


def _in_sequence(run: dict[str, Any]) -> str:
    legs = run["recall"].get("legs_in_sequence") or {}
    if legs.get("sum_p50_ms") is None:
        return "–"
    parts = " / ".join(_fmt(legs[k].get("p50"), 2)
                       for k in ("query_embedding_ms", "keyword_ms", "vector_ms"))
    return (f"{parts} = {_fmt(legs['sum_p50_ms'], 2)}, "
            f"{_fmt(run['recall']['ratios_p50'].get('recall_over_legs_in_sequence'), 2)}×")


def _stages(run: dict[str, Any]) -> str:
    """Where a recall's time goes (search/stages.py): the keyword leg inside recall and over
    the same leg alone, the stages after the legs, the three largest of those."""
    stages = run["recall"].get("stages")
    if not stages:
        return "–"
    after = {k: v["mean"] for k, v in stages.items()
             if isinstance(v, dict) and k not in AT_THE_LEGS and v.get("mean") is not None}
    largest = sorted(after, key=lambda k: -after[k])[:3]
    return (f"{_fmt(stages['keyword']['mean'], 2)}"
            f" ({_fmt(stages.get('keyword_inside_over_alone_p50'), 2)}×) /"
            f" {_fmt(sum(after.values()), 2)} / "
            + ", ".join(f"{k} {_fmt(after[k], 2)}" for k in largest))


#: the stages that are the legs or wait for them (the rest is the ranking's own work)
AT_THE_LEGS = frozenset({"start", "keyword", "vector_wait"})


def _legs_ratio(run: dict[str, Any]) -> str:
    """recall p50 ÷ the sum of its legs' p50 (issue 33: ≤ 1.5×), what lies outside them."""
    ratios = run["recall"]["ratios_p50"]
    if ratios.get("recall_over_legs") is None:
        return "–"
    check = run.get("targets", {}).get("recall_over_legs_p50")
    mark = f", {_mark(check)}" if check else ""
    return (f"{_fmt(ratios['recall_over_legs'], 2)}× ({_fmt(ratios['legs_sum_ms'], 2)};"
            f" outside them {_fmt(ratios['rest_as_recall_ms'], 2)}){mark}")


def markdown(report: dict[str, Any]) -> str:
    runs = report["runs"]
    m = report["machine"]
    head = "| metric | " + " | ".join(f"{r['memories']:,}" for r in runs) + " |"
    sep = "|---|" + "---:|" * len(runs)
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("remembered (created / deduplicated)",
         lambda r: f"{_fmt(r['remember']['created'])} / {_fmt(r['remember']['deduplicated'])}"),
        ("remember p50 / p95 / p99 (ms)", lambda r: _pcts(r["remember"]["latency_ms"])),
        ("remember mean / max (ms)",
         lambda r: f"{_fmt(r['remember']['latency_ms'].get('mean'), 2)} / "
                   f"{_fmt(r['remember']['latency_ms'].get('max'), 2)}"),
        ("… on a CPU / waiting for a CPU, p95 (ms)",
         lambda r: _cpu_wait(r["remember"])),
        ("writes/s (service time / wall)",
         lambda r: f"{_fmt(r['remember']['writes_per_s'], 0)} / "
                   f"{_fmt(r['remember']['writes_per_s_wall'], 0)}"),
        ("embedded while writing", lambda r: _fmt(r["remember"]["embedded_while_writing"])),
        ("indexed / coverage",
         lambda r: f"{_fmt(r['embedding']['indexed'])} / "
                   f"{_fmt(100 * r['embedding']['coverage'], 1)}%"
                   + ("" if r["embedding"].get("completed", True) else " (timed out)")),
        ("embedding: memories/s, first remember → idle",
         lambda r: _fmt(r["embedding"].get("memories_per_s"))),
        ("embedding: texts/s while writing / after",
         lambda r: f"{_fmt(r['embedding'].get('texts_per_s_while_writing'))} / "
                   f"{_fmt(r['embedding'].get('texts_per_s_after_writes'))}"),
        ("embedding: first remember → idle or timeout (s)",
         lambda r: _fmt(r["embedding"].get("first_remember_to_idle_s"))),
        ("**recall p50 / p95 / p99 (ms)**, query embedding included",
         lambda r: _pcts(r["recall"]["latency_ms"])),
        ("recall mean / max (ms)",
         lambda r: f"{_fmt(r['recall']['latency_ms'].get('mean'), 2)} / "
                   f"{_fmt(r['recall']['latency_ms'].get('max'), 2)}"),
        ("… on a CPU / waiting for a CPU, p95 (ms)", lambda r: _cpu_wait(r["recall"])),
        ("… query embedding alone p50 / p95 / p99",
         lambda r: _pcts(r["recall"]["legs"]["query_embedding_ms"])),
        ("… keyword leg alone (FTS5)", lambda r: _pcts(r["recall"]["legs"]["keyword_ms"])),
        ("… … over the context index, FTS5",
         lambda r: _pcts(r["recall"].get("keyword_variants", {}).get("keyword_context_ms", {}))),
        ("… … with its phrase query: the whole leg, FTS5",
         lambda r: _pcts(r["recall"].get("keyword_variants", {}).get(
             "keyword_context_and_phrase_ms", {}))),
        ("… … the whole leg from the keyword mirror (as recall runs it once built)",
         lambda r: _pcts(r["recall"].get("keyword_variants", {}).get(
             "keyword_context_and_phrase_mirror_ms", {}))),
        ("keyword mirror: built in (s; standing aside for writes apart) / postings / MiB",
         lambda r: f"{_fmt(r['keyword_mirror'].get('built_in_s'))} "
                   f"(+ {_fmt(r['keyword_mirror'].get('build_waited_s'))} aside) / "
                   f"{_fmt(r['keyword_mirror'].get('postings'))} / "
                   f"{_fmt(r['keyword_mirror'].get('bytes', 0) / 2**20, 0)}"
         if r.get("keyword_mirror", {}).get("state") == "ready" else "–"),
        ("… … the same with the filters inside the FTS5 query (before)",
         lambda r: _pcts(r["recall"].get("keyword_variants", {}).get(
             "keyword_context_joined_ms", {}))),
        ("… vector leg alone (index.search)", lambda r: _pcts(r["recall"]["legs"]["vector_ms"])),
        ("recall p50 ÷ keyword / ÷ vector / ÷ embedding",
         lambda r: " / ".join(
             _fmt(r["recall"]["ratios_p50"][k], 1) + "×"
             for k in ("recall_over_keyword", "recall_over_vector",
                       "recall_over_query_embedding"))),
        ("recall p50 not in the three legs (ms)",
         lambda r: _fmt(r["recall"]["ratios_p50"]["rest_ms"], 2)),
        ("**recall p50 ÷ its three legs' p50** (embedding + keyword leg as recall runs it + "
         "vector; ms), target",
         lambda r: _legs_ratio(r)),
        ("… the three legs one after another per query, as a recall runs them: embedding /"
         " keyword / vector p50 (ms), recall p50 ÷ their sum",
         lambda r: _in_sequence(r)),
        ("… recall's stages, mean ms: keyword leg inside recall (p50 ÷ the leg alone) / "
         "ranking after the legs / the largest three", lambda r: _stages(r)),
        ("vectors searched by recall", lambda r: _fmt(r["recall"]["indexed_vectors"])),
        ("target in top 10: lexical / paraphrase",
         lambda r: f"{_fmt(r['recall']['target_in_top'].get('lexical'), 2)} / "
                   f"{_fmt(r['recall']['target_in_top'].get('paraphrase'), 2)}"),
        ("RSS now / peak (MiB)",
         lambda r: f"{_fmt(r['memory']['rss_mib'], 0)} / {_fmt(r['memory']['peak_rss_mib'], 0)}"),
        ("vector index in RAM (MiB)",
         lambda r: f"{_fmt(r['memory'].get('vector_index_mib'), 1)}"
                   f" ({r['memory'].get('vector_index_precision') or '–'})"),
        ("RSS before opening / after model load (MiB)",
         lambda r: f"{_fmt(r['rss_start_mib'], 0)} / {_fmt(r['rss_after_open_mib'], 0)}"),
        ("RSS after writes / embedding / recall (MiB)",
         lambda r: " / ".join(_fmt(r["memory"]["phases_mib"][k], 0)
                              for k in ("after_writes", "after_embedding", "after_recall"))),
        ("database, open: db + wal (MiB)",
         lambda r: f"{_fmt(r['database']['while_open']['db_mib'])} + "
                   f"{_fmt(r['database']['while_open']['wal_mib'])}"),
        ("database after close (MiB)",
         lambda r: _fmt(r["database"]["after_close"]["total_mib"])),
        ("load average (1 min) at start / end",
         lambda r: f"{_fmt(r['load_average_1m']['start'], 2)} / "
                   f"{_fmt(r['load_average_1m']['end'], 2)}"),
        ("agent sessions ended meanwhile / turn memories",
         lambda r: f"{_fmt(r['sessions']['sessions_ended'])} / "
                   f"{_fmt(r['sessions']['turn_memories'])}" if "sessions" in r else "–"),
        ("session-end hook p50 / p95 / max (ms)",
         lambda r: f"{_fmt(r['sessions']['hook_ms'].get('p50'), 2)} / "
                   f"{_fmt(r['sessions']['hook_ms'].get('p95'), 2)} / "
                   f"{_fmt(r['sessions']['hook_ms'].get('max'), 2)}" if "sessions" in r
         else "–"),
        ("recall p95 ranker on / off (ms), ratio",
         lambda r: f"{_fmt(r['ranker']['on_ms'].get('p95'), 2)} / "
                   f"{_fmt(r['ranker']['off_ms'].get('p95'), 2)}, "
                   f"{_fmt(r['ranker']['p95_on_over_off'], 3)}"
         if "ranker" in r else "–"),
        ("prompt hook p50 / p95 (ms), memories per prompt",
         lambda r: f"{_fmt(r['prompt_hook']['latency_ms'].get('p50'), 2)} / "
                   f"{_fmt(r['prompt_hook']['latency_ms'].get('p95'), 2)}, "
                   f"{_fmt(r['prompt_hook']['memories_per_prompt'], 2)}"
         if "prompt_hook" in r else "–"),
        ("consolidation pass: memories read / wall (s) / read per s",
         lambda r: f"{_fmt(r['consolidation']['examined'])} / "
                   f"{_fmt(r['consolidation']['pass_s'])} / "
                   f"{_fmt(r['consolidation']['memories_read_per_s'], 0)}"
                   + ("" if r["consolidation"]["completed"] else " (incomplete)")
         if "consolidation" in r else "–"),
        ("consolidation: runs / batches; restated / replaced / flagged",
         lambda r: f"{_fmt(r['consolidation']['runs'])} / {_fmt(r['consolidation']['batches'])};"
                   f" {_fmt(r['consolidation']['restated'])} / "
                   f"{_fmt(r['consolidation']['replaced'])} / "
                   f"{_fmt(r['consolidation']['flagged'])}" if "consolidation" in r else "–"),
        ("consolidation: batch compare p95 / batch write p95 / longest write (ms)",
         lambda r: f"{_fmt(r['consolidation']['batch_compare_ms'].get('p95'), 1)} / "
                   f"{_fmt(r['consolidation']['batch_write_ms'].get('p95'), 1)} / "
                   f"{_fmt(r['consolidation']['longest_batch_write_ms'], 1)}"
         if "consolidation" in r else "–"),
        ("**remember during the pass p50 / p95 / p99 (ms)**, p95 ÷ remember phase's",
         lambda r: f"{_pcts(r['consolidation']['remember']['latency_ms'])}, "
                   f"{_fmt(r['consolidation']['remember']['p95_over_remember_phase_p95'], 2)}×"
         if "consolidation" in r else "–"),
        ("bulk import: memories/s overall / last block (texts made up apart)",
         lambda r: f"{_fmt(r['import']['per_s'], 0)} / "
                   f"{_fmt(r['import']['blocks'][-1]['per_s'], 0)}" if "import" in r else "–"),
        ("bulk import: wall memories/s overall / last block (texts made up included)",
         lambda r: f"{_fmt(r['import'].get('wall_per_s'), 0)} / "
                   f"{_fmt(r['import']['blocks'][-1].get('wall_per_s'), 0)}" if "import" in r
         else "–"),
        ("vectors: embedded for real / **GENERATED**",
         lambda r: f"{_fmt(r['vectors']['embedded'])} / {_fmt(r['vectors']['generated'])}"
         if "vectors" in r else "–"),
        ("where the time goes (wall s per phase)",
         lambda r: "; ".join(f"{k} {_fmt(v, 0)}" for k, v in r["phase_s"].items())
         if "phase_s" in r else "–"),
        ("target remember p95 ≤ 10 ms", lambda r: _mark(r["targets"]["remember_p95_ms"])),
        ("target recall p95 (ms; 100,000 and more: the scale target)",
         lambda r: _mark(r["targets"]["recall_p95_ms"])),
        ("target peak RSS ≤ 400 MB", lambda r: _mark(r["targets"]["peak_rss_mb"])),
        ("target graph_impact p95 ≤ 50 ms",
         lambda r: _mark(r["targets"]["graph_impact_p95_ms"])),
        ("target recall p50 ≤ 1.5 × its three legs' p50",
         lambda r: _mark(r["targets"]["recall_over_legs_p50"])
         if "recall_over_legs_p50" in r["targets"] else "–"),
        ("target prompt hook p95 ≤ 60 ms",
         lambda r: _mark(r["targets"]["prompt_hook_p95_ms"])
         if "prompt_hook_p95_ms" in r["targets"] else "–"),
        ("target remember p95 during a consolidation pass ≤ 10 ms",
         lambda r: _mark(r["targets"]["consolidation_remember_p95_ms"])
         if "consolidation_remember_p95_ms" in r["targets"] else "–"),
    ]  # fmt: skip
    lines = [
        f"# mnemonist scale benchmark, {report['started_at']}",
        "",
        f"mnemonist {report['mnemonist_version']}, Python {m['python']}, {m['cpus']} CPUs "
        f"({m.get('cpu_model', '')}), {m['platform']}; seed {report['params']['seed']}, "
        f"{report['params']['queries']} recalls after {report['params']['warmup_queries']} "
        f"warm-up.",
    ]
    if runs:
        c = runs[0]["config"]
        lines.append(
            f"durability {c['durability']}, embedding {c['embedding_model']} "
            f"({c['embedding_threads']} threads, products {c.get('embedding_products', '–')},"
            f" batch {c['embedding_batch_size']}), "
            f"top_k {c['search_top_k']}, vector index {c.get('vector_precision', 'float32')}."
        )
    lines += ["", head, sep]
    for label, cell in rows:
        lines.append(f"| {label} | " + " | ".join(cell(r) for r in runs) + " |")
    lines += ["", "Targets are the issues': stated for 10,000 memories, and for 100,000 (recall"
              " p95 ≤ 60 ms) from that size on.", ""]
    if report["params"].get("generated_vectors"):
        lines += ["**Generated vectors**: the memories were bulk-imported, then remembered "
                  "one by one only for a latency sample (the remember rows); most vectors are "
                  "generated, not embedded (see `vectors` in the JSON: how, and how many). "
                  "Queries and their target memories are embedded for real.", ""]
    lines += [f"- {note}" for note in report["notes"]]
    return "\n".join(lines) + "\n"
