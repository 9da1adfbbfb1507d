"""Reading a LoCoMo-format file (snap-research/LoCoMo `locomo10.json` and its subsets).

The file is a JSON list of samples, each with a `sample_id`, a `conversation` (`speaker_a`,
`speaker_b`, `session_N` turn lists and `session_N_date_time` strings such as
"4:12 pm on 9 March, 2023") and `qa` items (`question`, `answer`, `evidence` dia_ids like
"D3:12", `category` 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial).

The data is read from wherever the caller keeps it; nothing of it ships with mnemonist.
Known defects of the original are handled here: evidence entries holding several ids
("D2:7; D5:3") are split and stripped, and ids naming no turn are dropped and counted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
#: the categories of the overall score (adversarial questions are reported apart)
OVERALL_CATEGORIES = (1, 2, 3, 4)
#: the systems scored over the same memories, and their labels in reports
SYSTEMS = ("mnemonist", "bm25", "dense")
SYSTEM_LABELS = {"mnemonist": "mnemonist (hybrid)", "bm25": "BM25 only", "dense": "dense only"}

_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}  # fmt: skip

_DATE_TIME = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*$",
    re.IGNORECASE,
)
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_EVIDENCE_SPLIT = re.compile(r"[;,]")


def parse_session_datetime(text: str) -> datetime:
    """Parse a session date-time: "4:12 pm on 9 March, 2023" is 2023-03-09 16:12 UTC (the file
    carries no time zone)."""
    m = _DATE_TIME.match(text or "")
    if m is None:
        raise ValueError(f"not a LoCoMo session date-time: {text!r}")
    hour, minute, half, day, month_name, year = m.groups()
    month = _MONTHS.get(month_name.lower())
    h = int(hour)
    if month is None or not 1 <= h <= 12:
        raise ValueError(f"not a LoCoMo session date-time: {text!r}")
    h = h % 12 + (12 if half.lower() == "p" else 0)
    try:
        return datetime(int(year), month, int(day), h, int(minute), tzinfo=UTC)
    except ValueError as exc:
        raise ValueError(f"not a LoCoMo session date-time: {text!r}") from exc


def split_evidence(entries: list[Any]) -> list[str]:
    """Split malformed entries ("D2:7; D5:3") and strip; order kept, repeats removed."""
    out: list[str] = []
    for entry in entries or []:
        for part in _EVIDENCE_SPLIT.split(str(entry)):
            ident = part.strip()
            if ident and ident not in out:
                out.append(ident)
    return out


def turn_content(speaker: str, text: str, caption: str | None = None) -> str:
    """What one turn is remembered as: "<speaker>: <text>", plus the shared photo's caption."""
    parts = [text.strip()]
    caption = (caption or "").strip()
    if caption:
        parts.append(f"[shares {caption}]")
    return f"{speaker}: " + " ".join(p for p in parts if p)


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    caption: str | None = None

    @property
    def content(self) -> str:
        return turn_content(self.speaker, self.text, self.caption)


@dataclass(frozen=True)
class Session:
    number: int
    date_time: datetime | None
    date_text: str | None
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class QAItem:
    question: str
    answer: str | None
    category: int
    evidence: tuple[str, ...]  # valid dia_ids only
    dropped_evidence: tuple[str, ...]  # ids (after splitting) naming no turn


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, ...]
    sessions: list[Session]
    qa: list[QAItem] = field(default_factory=list)

    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]

    def session_of(self) -> dict[str, int]:
        return {t.dia_id: t.session for s in self.sessions for t in s.turns}


def _sessions(sample_id: str, conv: dict[str, Any]) -> list[Session]:
    numbers = sorted(
        int(m.group(1))
        for key, value in conv.items()
        if (m := _SESSION_KEY.match(key)) and isinstance(value, list)
    )
    sessions: list[Session] = []
    for n in numbers:
        date_text = conv.get(f"session_{n}_date_time")
        when = None
        if date_text:
            try:
                when = parse_session_datetime(date_text)
            except ValueError as exc:
                raise ValueError(f"{sample_id} session {n}: {exc}") from exc
        turns = []
        for raw in conv[f"session_{n}"]:
            text = str(raw.get("text") or "")
            caption = str(raw.get("blip_caption") or "").strip() or None
            dia_id = str(raw.get("dia_id") or "").strip()
            if not dia_id or not (text.strip() or caption):
                continue
            turns.append(
                Turn(
                    dia_id=dia_id,
                    speaker=str(raw.get("speaker") or "unknown"),
                    text=text,
                    session=n,
                    caption=caption,
                )
            )
        sessions.append(Session(n, when, date_text, tuple(turns)))
    return sessions


def _qa(items: list[dict[str, Any]] | None, known: set[str]) -> list[QAItem]:
    out = []
    for raw in items or []:
        ids = split_evidence(raw.get("evidence") or [])
        answer = raw.get("answer", raw.get("adversarial_answer"))
        out.append(
            QAItem(
                question=str(raw.get("question") or ""),
                answer=None if answer is None else str(answer),
                category=int(raw.get("category") or 0),
                evidence=tuple(i for i in ids if i in known),
                dropped_evidence=tuple(i for i in ids if i not in known),
            )
        )
    return out


def parse_locomo(samples: list[dict[str, Any]]) -> list[Conversation]:
    conversations = []
    for i, sample in enumerate(samples):
        sample_id = str(sample.get("sample_id") or f"sample-{i}")
        conv = sample.get("conversation") or {}
        speakers = tuple(str(conv[k]) for k in ("speaker_a", "speaker_b") if conv.get(k))
        sessions = _sessions(sample_id, conv)
        known = {t.dia_id for s in sessions for t in s.turns}
        conversations.append(
            Conversation(sample_id, speakers, sessions, _qa(sample.get("qa"), known))
        )
    return conversations


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read a LoCoMo-format JSON file (a list of samples, or one sample)."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of LoCoMo samples")
    return parse_locomo(data)
