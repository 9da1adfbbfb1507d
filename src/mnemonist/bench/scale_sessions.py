"""`bench scale --sessions`: agent sessions ending throughout the run, so remember and recall
are measured while the session worker reads transcripts into turn memories.

A background thread writes a Claude Code transcript (`messages` messages of synthetic text,
20 by default) into a transcript folder the daemon may read, ends it through the session-end
hook (the service call the HTTP route makes), and waits `interval_s` (2 s) before the next:
about 10 turns a second, several busy agents' worth, adding roughly a tenth to the store
while 10,000 memories are remembered. The hook's own
time is measured per call; the turns arrive through the session worker like in production.
"""

from __future__ import annotations

import json
import threading
import time
from array import array
from pathlib import Path
from typing import Any

from mnemonist.bench.stats import summarize_ms
from mnemonist.bench.synthetic import SyntheticCorpus
from mnemonist.model.hooks import SessionEndRequest


class SessionLoad:
    def __init__(self, service: Any, folder: Path, seed: int, *, messages: int = 20,
                 interval_s: float = 2.0) -> None:
        self.service = service
        self.folder = folder
        self.corpus = SyntheticCorpus(seed + 1000)
        self.messages = messages
        self.interval_s = interval_s
        self.hook_s = array("d")
        self.ended = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _transcript(self, key: str) -> Path:
        lines = []
        for i, mem in enumerate(self.corpus.generate(self.messages)):
            role = "user" if i % 2 == 0 else "assistant"
            content: Any = mem.content if role == "user" else [
                {"type": "text", "text": mem.content}]
            lines.append({"type": role, "uuid": f"{key}-{i}", "sessionId": key,
                          "timestamp": f"2025-06-01T10:{i % 60:02d}:00.000Z",
                          "message": {"role": role, "content": content}})
        path = self.folder / f"{key}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        return path

    def _run(self) -> None:
        while not self._stop.is_set():
            key = f"bench-session-{self.ended}"
            path = self._transcript(key)
            started = time.perf_counter()
            self.service.hooks.hook_session_end(SessionEndRequest(
                session_id=key, transcript_path=str(path), cwd=str(self.folder)))
            self.hook_s.append(time.perf_counter() - started)
            self.ended += 1
            self._stop.wait(self.interval_s)

    def __enter__(self) -> SessionLoad:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._run, name="bench-sessions", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def report(self) -> dict[str, Any]:
        conn = self.service.core.db.reader()
        turns = conn.execute("SELECT COUNT(*) FROM memories WHERE source_type = 'session'"
                             ).fetchone()[0]
        return {"sessions_ended": self.ended, "messages_per_session": self.messages,
                "interval_s": self.interval_s, "turn_memories": turns,
                "hook_ms": summarize_ms(self.hook_s)}
