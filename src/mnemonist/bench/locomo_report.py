"""The LoCoMo benchmark's Markdown report: the systems side by side, the categories, the
latency, and each ablation against the default (written beside the JSON result)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemonist.bench.locomo_data import SYSTEM_LABELS, SYSTEMS


def _cell(value: float | None, base: float | None = None) -> str:
    if value is None:
        return "—"
    if base is None:
        return f"{value:.3f}"
    ratio = f"{value / base:.2f}×" if base else "—"
    return f"{value:.3f} ({ratio})"


def render_markdown(result: dict[str, Any]) -> str:
    cfg, data, systems = result["config"], result["data"], result["systems"]
    ks = cfg["ks"]
    s_k = 5 if 5 in ks else ks[0]
    lines = [
        f"# LoCoMo recall — {Path(cfg['data']).name}",
        "",
        f"{cfg['started_at']} · mnemonist {cfg['mnemonist']} "
        f"(commit {(cfg.get('git_commit') or 'unknown')[:10]}"
        f"{', with local changes' if cfg.get('git_changed_files') else ''}) · "
        f"{cfg['embedding_model']} · "
        f"alpha {cfg['search']['alpha']} · {cfg['cpus']} CPUs "
        f"(load {cfg.get('load_average_at_end', ['?'])[0]} at the end) · {cfg['platform']}",
        "",
        f"{data['conversations']} conversations, {data['sessions']} sessions, {data['turns']} "
        f"turns → {data['memories']} memories ({data['deduplicated_turns']} deduplicated). "
        f"{data['questions_evaluated']} questions scored "
        f"({data['questions_overall']} in categories 1–4); "
        f"{data['questions_skipped_no_evidence']} skipped for lack of valid evidence; "
        f"{data['evidence_ids_dropped']} evidence ids naming no turn dropped.",
        "",
        f"## Overall — categories 1–4 ({systems['bm25']['overall']['n']} questions), ratio vs BM25",
        "",
    ]
    columns = [*(f"recall@{k}" for k in ks), "hit@10", "mrr", "ndcg@10",
               f"session_any@{s_k}", f"session_all@{s_k}"]  # fmt: skip
    heads = [*(f"R@{k}" for k in ks), "Hit@10", "MRR", "NDCG@10",
             f"sess. any@{s_k}", f"sess. all@{s_k}"]  # fmt: skip
    lines.append("| system | " + " | ".join(heads) + " |")
    lines.append("|---|" + "---|" * len(heads))
    base = systems["bm25"]["overall"]
    for name in SYSTEMS:
        row = systems[name]["overall"]
        cells = [_cell(row.get(c), base.get(c) if name != "bm25" else None) for c in columns]
        lines.append(f"| {SYSTEM_LABELS[name]} | " + " | ".join(cells) + " |")

    lines += ["", "## Recall@10 by category", ""]
    lines.append("| category | n | " + " | ".join(SYSTEM_LABELS[s] for s in SYSTEMS) + " |")
    lines.append("|---|---|" + "---|" * len(SYSTEMS))
    for cat, info in systems["bm25"]["by_category"].items():
        label = f"{cat} {info['name']}" + ("" if info["in_overall"] else " (not in overall)")
        cells = [_cell(systems[s]["by_category"][cat].get("recall@10")) for s in SYSTEMS]
        lines.append(f"| {label} | {info['n']} | " + " | ".join(cells) + " |")

    lat, ing = result["latency_ms"], result["ingest"]
    lines += ["", "## Latency and ingest", ""]
    lines.append("| measure | p50 ms | p95 ms | mean ms |")
    lines.append("|---|---|---|---|")
    for key, label in (("mnemonist", "recall (hybrid, service.reads.recall)"),
                       ("bm25", "BM25 keyword leg"),
                       ("dense_search_only", "dense index search (vector cached)")):  # fmt: skip
        row = lat[key]
        if row.get("n"):
            lines.append(f"| {label} | {row['p50']:.2f} | {row['p95']:.2f} | {row['mean']:.2f} |")
    lines += [
        "",
        f"Ingest: {ing['memories_per_s']} memories/s through service.memories.remember "
        f"({ing['remember_s']} s); background embedding finished "
        f"{ing['embedding_wait_after_ingest_s']} s after the last remember "
        f"({ing['embedding_done_after_start_s']} s after the first); "
        f"{ing['vectors']} vectors, complete: {ing['embedding_complete']}.",
        "",
        f"Access tracking was live, as in a user's daemon: recall updated access counts "
        f"({result['access']['memories_with_recorded_access']} memories accessed). "
        f"Recalls that fell back to keyword only: {result['recall_degraded_to_keyword']}. "
        "Results from another conversation (must be 0): "
        + ", ".join(f"{k} {v}" for k, v in result["foreign_results"].items())
        + ".",
        "",
    ]
    if result.get("ablations"):
        lines += _ablation_lines(result["ablations"], systems["mnemonist"], ks, s_k)
    return "\n".join(lines)


def _ablation_lines(
    ablations: list[dict[str, Any]], default: dict[str, Any], ks: Sequence[int], s_k: int
) -> list[str]:
    """One row per variant, the default first; each changes only the settings it names."""
    columns = [*(f"recall@{k}" for k in ks), "mrr", f"session_any@{s_k}"]
    cats = [c for c, info in default["by_category"].items() if info["in_overall"]]
    lines = ["## Ablations (categories 1–4, each row the default but for its settings)", "",
             "| variant | settings | " + " | ".join(
                 [*(f"R@{k}" for k in ks), "MRR", f"any@{s_k}"]
                 + [f"R@10 cat {c}" for c in cats]) + " |",
             "|---|---|" + "---|" * (len(columns) + len(cats))]
    rows = [{"name": "**default**", "settings": {}, **default}, *ablations]
    for row in rows:
        settings = ", ".join(f"`{k}={v}`" for k, v in row["settings"].items()) or "—"
        cells = [_cell(row["overall"].get(c)) for c in columns]
        cells += [_cell(row["by_category"].get(c, {}).get("recall@10")) for c in cats]
        lines.append(f"| {row['name']} | {settings} | " + " | ".join(cells) + " |")
    return [*lines, ""]
