"""`mnemonist bench sessions` on a small LoCoMo-format file: real-format Claude Code
transcripts ended through the session-end hook, scored per turn beside direct ingest."""

from __future__ import annotations

import json

from click.testing import CliRunner

from mnemonist.bench.locomo_data import load_locomo
from mnemonist.bench.sessions import transcript_lines
from mnemonist.cli.bench import bench
from test_bench_locomo import write_data


def test_transcripts_are_claude_code_lines_with_the_first_speaker_as_user(tmp_path):
    conv = load_locomo(write_data(tmp_path))[0]
    session = conv.sessions[0]
    lines, uuids = transcript_lines(conv, session, "s-1", "/work/x", 0)
    assert [x["type"] for x in lines] == [
        "user" if t.speaker == conv.speakers[0] else "assistant" for t in session.turns]
    user = next(x for x in lines if x["type"] == "user")
    assistant = next(x for x in lines if x["type"] == "assistant")
    assert isinstance(user["message"]["content"], str)
    assert assistant["message"]["content"][0]["type"] == "text"
    assert all(x["sessionId"] == "s-1" and x["cwd"] == "/work/x" for x in lines)
    assert sorted(uuids.values()) == sorted(t.dia_id for t in session.turns)
    stamps = [x["timestamp"] for x in lines]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


def test_sessions_ended_through_the_hook_score_beside_direct_ingest(tmp_path):
    data = write_data(tmp_path)
    out = tmp_path / "results"
    result = CliRunner().invoke(bench, ["sessions", "--data", str(data), "--out", str(out),
                                        "--json", "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    res = json.loads(result.stdout)
    distinct = sum(len({(t.session, t.content) for t in c.turns()}) for c in load_locomo(data))
    sessions, direct = res["arms"]["sessions"], res["arms"]["direct"]
    assert res["sessions"]["ended"] == sum(len(c.sessions) for c in load_locomo(data))
    # one memory per message, none lost (identical lines of one session are one memory)
    assert res["sessions"]["memories"] == distinct
    assert res["sessions"]["summary_jobs_pending"] == 0
    for arm in (sessions, direct):
        for key in ("recall@5", "recall@10", "mrr", "session_any@5"):
            assert 0.0 <= arm["overall"][key] <= 1.0
    # the same turns, found as well whichever way they came in
    assert abs(sessions["overall"]["recall@10"] - direct["overall"]["recall@10"]) <= 0.05
    assert sessions["overall"]["recall@10"] > 0.5
    assert (out / res["files"]["json"].split("/")[-1]).exists()
