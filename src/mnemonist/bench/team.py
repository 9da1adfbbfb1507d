"""`mnemonist bench team`: several daemons on one PostgreSQL under concurrent writers.

What a team's deployment must hold (docs/postgres.md, "Measured: many daemons"):

1. `daemons` real daemons (`mnemonist serve`, one process each, own home and token) on one
   PostgreSQL database; `clients` client threads per daemon each write `writes` memories
   through their daemon's HTTP API at once (`POST /api/memory/remember`).
2. Every acknowledged write (a 201 with an id) is in the database exactly once, and nothing
   else is: rows are counted by id and by the unique marker each text carries.
3. Every job is processed exactly once: each memory queues one `extract` job; the daemons'
   extraction workers lease them from the one table (`FOR UPDATE SKIP LOCKED`) and call the
   LLM — here a stub on loopback that answers "no facts" and counts the calls per memory.
   One job row per memory, every job completed, leased once (`attempts` = 1), and one LLM
   call per memory.
4. No deadlock: no 5xx answer, `pg_stat_database.deadlocks` unchanged, no
   "deadlock detected" in any daemon's log.
5. A memory written through the first daemon is recalled through the second: by keyword at
   once (the next request), by vector once embedded (a query sharing none of its words).

Latencies (write p50/p95) depend on the machine and its load; the counts do not.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from mnemonist.bench.stats import machine, summarize_ms
from mnemonist.bench.team_processes import DaemonProcess, StubLlm, team

#: a probe whose words no generated memory uses, and a paraphrase of it sharing none of them
PROBE = "The quarterly backup of the billing ledger runs on the replica in Frankfurt"
PARAPHRASE = "where is the payment accounting book copied each season"
MARKER = re.compile(r"\bteamload-(\d+)-(\d+)-(\d+)\b")


def text_of(d: int, c: int, i: int) -> str:
    """A distinct memory text: a sentence that varies with its numbers and a unique marker."""
    topics = ("the deploy pipeline", "the cache layer", "the search service", "the API gateway",
              "the nightly import", "the billing job", "the auth proxy", "the log shipper")
    verbs = ("was moved to", "now depends on", "times out against", "is owned by")
    objs = ("team blue", "the new cluster", "the staging database", "the message queue",
            "version 2.4", "the on-call rota")
    n = d * 100_000 + c * 1000 + i
    return (f"{topics[n % 8].capitalize()} {verbs[(n // 8) % 4]} {objs[(n // 32) % 6]}"
            f" (note {n}, teamload-{d}-{c}-{i}).")


def _writer(daemon: DaemonProcess, d: int, c: int, writes: int, out: dict[str, Any],
            start: threading.Event) -> None:
    acked: list[tuple[str, str]] = []
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    errors: list[str] = []
    with daemon.client() as http:
        start.wait()
        for i in range(writes):
            text = text_of(d, c, i)
            t0 = time.perf_counter()
            try:
                r = http.post("/api/memory/remember", json={"content": text, "type": "fact"})
            except httpx.HTTPError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            latencies.append(time.perf_counter() - t0)
            statuses[r.status_code] += 1
            if r.status_code in (200, 201):
                acked.append((r.json()["id"], text))
            elif len(errors) < 5:
                errors.append(f"{r.status_code}: {r.text[:300]}")
    out[f"{d}-{c}"] = {"acked": acked, "latencies": latencies, "statuses": statuses,
                       "errors": errors}


def _pg(url: str, sql: str, args: Any = None) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return [tuple(r) for r in conn.execute(sql, args).fetchall()]


def _deadlocks(url: str) -> int:
    return int(_pg(url, "SELECT deadlocks FROM pg_stat_database"
                        " WHERE datname = current_database()")[0][0])


def _recall_ids(http: httpx.Client, query: str) -> list[dict[str, Any]]:
    r = http.post("/api/memory/recall", json={"query": query, "limit": 10})
    r.raise_for_status()
    return list(r.json().get("results", []))


def _cross_daemon(a: DaemonProcess, b: DaemonProcess, url: str, timeout_s: float
                  ) -> dict[str, Any]:
    """A probe written through `a`, recalled through `b`: keyword at once, vector once the
    probe's embedding is stored (by either daemon's embedder)."""
    with a.client() as ha, b.client() as hb:
        created = ha.post("/api/memory/remember", json={"content": PROBE, "type": "fact"})
        created.raise_for_status()
        probe = created.json()["id"]
        keyword = [r for r in _recall_ids(hb, "billing ledger replica Frankfurt")
                   if r.get("id") == probe]
        started = time.monotonic()
        embedded_s = None
        while time.monotonic() - started < timeout_s:
            if _pg(url, "SELECT 1 FROM memories m JOIN embeddings e ON"
                        " e.content_hash = m.content_hash WHERE m.id = %s", (probe,)):
                embedded_s = round(time.monotonic() - started, 1)
                break
            time.sleep(0.5)
        vector = [r for r in _recall_ids(hb, PARAPHRASE) if r.get("id") == probe
                  and (r.get("scores") or {}).get("vector") is not None]
    return {"probe": probe, "keyword_at_once": bool(keyword),
            "embedded_after_s": embedded_s, "vector_once_embedded": bool(vector),
            "vector_score": vector[0]["scores"]["vector"] if vector else None,
            "keyword_score_of_paraphrase": vector[0]["scores"].get("keyword") if vector else None}


def _wait_jobs(url: str, timeout_s: float) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        left = _pg(url, "SELECT count(*) FROM memory_jobs WHERE job_type = 'extract'"
                        " AND status IN ('pending', 'leased')")[0][0]
        if left == 0:
            return round(time.monotonic() - started, 1)
        time.sleep(1.0)
    return None


def check_writes(url: str, acked: list[tuple[str, str]]) -> dict[str, Any]:
    """Every acknowledged (id, text) stored once; no stored load memory unacknowledged."""
    ids = Counter(r[0] for r in _pg(
        url, "SELECT id FROM memories WHERE content LIKE %s", ("%teamload-%",)))
    texts = Counter(MARKER.search(r[0]).group(0) for r in _pg(  # type: ignore[union-attr]
        url, "SELECT content FROM memories WHERE content LIKE %s", ("%teamload-%",)))
    want_ids = {i for i, _ in acked}
    want_texts = {MARKER.search(t).group(0) for _, t in acked}  # type: ignore[union-attr]
    return {
        "acknowledged": len(acked),
        "acknowledged_distinct_ids": len(want_ids),
        "stored": sum(ids.values()),
        "acknowledged_missing": len(want_ids - set(ids)),
        "stored_twice": sum(1 for n in ids.values() if n > 1) + sum(
            1 for n in texts.values() if n > 1),
        "stored_unacknowledged": len(set(texts) - want_texts),
    }


def check_jobs(url: str, llm_calls: Counter[str]) -> dict[str, Any]:
    rows = _pg(url, "SELECT j.memory_id, j.status, j.attempts, m.content FROM memory_jobs j"
                    " JOIN memories m ON m.id = j.memory_id WHERE j.job_type = 'extract'"
                    " AND m.content LIKE %s", ("%teamload-%",))
    per_memory = Counter(r[0] for r in rows)
    status = Counter(r[1] for r in rows)
    calls = {text: n for text, n in llm_calls.items() if "teamload-" in text}
    return {
        "job_rows": len(rows),
        "memories_with_one_job": sum(1 for n in per_memory.values() if n == 1),
        "memories_with_more_jobs": sum(1 for n in per_memory.values() if n > 1),
        "status": dict(status),
        "leases": sum(int(r[2]) for r in rows),
        "leased_more_than_once": sum(1 for r in rows if int(r[2]) > 1),
        "completed": status.get("completed", 0),
        "llm_calls": sum(calls.values()),
        "memories_called_once": sum(1 for n in calls.values() if n == 1),
        "memories_called_more": sum(1 for n in calls.values() if n > 1),
    }


def run_team(url: str, *, daemons: int = 2, clients: int = 8, writes: int = 500,
             jobs_timeout_s: float = 1800.0, embed_timeout_s: float = 600.0,
             progress: bool = True) -> dict[str, Any]:
    """The load run; the report's `ok` is True when every check holds."""
    if _pg(url, "SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_name ="
                " 'memories' AND table_schema = current_schema())")[0][0] and _pg(
            url, "SELECT EXISTS (SELECT 1 FROM memories)")[0][0]:
        raise ValueError("the database already holds memories: give an empty one")
    work = Path(tempfile.mkdtemp(prefix="mnemonist-team-"))
    say = (lambda msg: print(msg, file=sys.stderr, flush=True)) if progress else (
        lambda msg: None)
    try:
        with StubLlm() as llm, team(url, daemons, llm.url, work) as members:
            say(f"team: {daemons} daemons up; {daemons * clients} clients x {writes} writes")
            deadlocks_before = _deadlocks(url)
            results: dict[str, Any] = {}
            start = threading.Event()
            threads = [threading.Thread(target=_writer, args=(members[d], d, c, writes,
                                                             results, start))
                       for d in range(daemons) for c in range(clients)]
            for t in threads:
                t.start()
            t0 = time.perf_counter()
            start.set()
            for t in threads:
                t.join()
            write_s = time.perf_counter() - t0
            say(f"team: writes done in {write_s:.1f} s; waiting for the jobs")
            acked = [a for r in results.values() for a in r["acked"]]
            latencies = [x for r in results.values() for x in r["latencies"]]
            statuses: Counter[int] = Counter()
            for r in results.values():
                statuses.update(r["statuses"])
            errors = [e for r in results.values() for e in r["errors"]][:10]
            cross = _cross_daemon(members[0], members[-1], url, embed_timeout_s)
            jobs_s = _wait_jobs(url, jobs_timeout_s)
            say(f"team: jobs drained after {jobs_s} s more")
            writes_check = check_writes(url, acked)
            jobs_check = check_jobs(url, llm.calls)
            deadlocks = _deadlocks(url) - deadlocks_before
            logs = {f"daemon-{i}": m.log() for i, m in enumerate(members)}
        log_deadlocks = sum(text.count("deadlock detected") for text in logs.values())
        log_tracebacks = sum(text.count("Traceback") for text in logs.values())
        server_errors = sum(n for s, n in statuses.items() if s >= 500)
        total = daemons * clients * writes
        ok = (writes_check["acknowledged"] == total
              and writes_check["stored"] == total
              and writes_check["acknowledged_missing"] == 0
              and writes_check["stored_twice"] == 0
              and writes_check["stored_unacknowledged"] == 0
              and jobs_check["job_rows"] == total
              and jobs_check["memories_with_one_job"] == total
              and jobs_check["completed"] == total
              and jobs_check["leased_more_than_once"] == 0
              and jobs_check["memories_called_once"] == total
              and jobs_check["memories_called_more"] == 0
              and server_errors == 0 and deadlocks == 0 and log_deadlocks == 0
              and cross["keyword_at_once"] and cross["vector_once_embedded"])
        return {
            "ok": ok,
            "daemons": daemons, "clients_per_daemon": clients, "writes_per_client": writes,
            "writes_total": total,
            "statuses": {str(k): v for k, v in sorted(statuses.items())},
            "client_errors": errors,
            "writes": writes_check, "jobs": jobs_check,
            "deadlocks": {"pg_stat_database": deadlocks, "in_logs": log_deadlocks,
                          "tracebacks_in_logs": log_tracebacks},
            "cross_daemon": cross,
            "timing": {"write_phase_s": round(write_s, 1),
                       "writes_per_s": round(len(latencies) / write_s, 1) if write_s else None,
                       "write_ms": summarize_ms(latencies),
                       "jobs_drained_after_s": jobs_s},
            "machine": machine(),
            "note": "latencies depend on the machine and its load; the counts do not",
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def markdown(r: dict[str, Any]) -> str:
    w, j, d, c, t = r["writes"], r["jobs"], r["deadlocks"], r["cross_daemon"], r["timing"]
    ms = t["write_ms"]
    lines = [
        f"team load run: {r['daemons']} daemons x {r['clients_per_daemon']} clients x"
        f" {r['writes_per_client']} writes = {r['writes_total']} — "
        + ("ALL CHECKS HOLD" if r["ok"] else "A CHECK FAILED"), "",
        "| check | value |", "|---|---|",
        f"| HTTP statuses | {r['statuses']} |",
        f"| acknowledged / stored | {w['acknowledged']} / {w['stored']} |",
        f"| acknowledged missing / stored twice / unacknowledged | {w['acknowledged_missing']}"
        f" / {w['stored_twice']} / {w['stored_unacknowledged']} |",
        f"| extract job rows / completed / leases | {j['job_rows']} / {j['completed']} /"
        f" {j['leases']} |",
        f"| jobs leased more than once / memories with >1 job | {j['leased_more_than_once']}"
        f" / {j['memories_with_more_jobs']} |",
        f"| LLM calls / memories called once / more | {j['llm_calls']} /"
        f" {j['memories_called_once']} / {j['memories_called_more']} |",
        f"| deadlocks (pg_stat_database / logs) | {d['pg_stat_database']} / {d['in_logs']} |",
        f"| A→B keyword at once / vector once embedded | {c['keyword_at_once']} /"
        f" {c['vector_once_embedded']} (embedded after {c['embedded_after_s']} s) |",
        f"| write p50 / p95 / max ms | {ms.get('p50')} / {ms.get('p95')} / {ms.get('max')} |",
        f"| writes/s (all daemons) | {t['writes_per_s']} |",
        f"| jobs drained after the writes | {t['jobs_drained_after_s']} s |",
    ]
    return "\n".join(lines)
