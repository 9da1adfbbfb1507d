"""The significance gate's judgement: is a session worth an LLM summary and its extraction?

Three checks, each a sign of a session with nothing worth remembering (`sessions.significance`):

- turns: fewer than `min_turns` substantive turns (turns that say something: not greetings,
  thanks or acknowledgements; `sessions.turns.is_substantive`, the count the session reader
  keeps);
- entities: it names fewer than `min_entity_overlap` entities that other memories of its
  project name too (what the project already knows about);
- novelty: its mean turn vector is within `novelty_threshold` cosine distance of a recent
  session of the project (it goes over the same ground again).

Only when all three say so is the session insignificant: one sign alone is common in a
session that matters (a short session that records one decision; a session on a new
subject that names nothing known yet). A check that cannot be made (no turn embedded yet, no
earlier session to compare with) does not count as a sign.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mnemonist.model.config import SignificanceGateConfig


@dataclass
class SessionSignals:
    substantive: int
    known_entities: list[str] = field(default_factory=list)
    #: cosine distance to the nearest recent session (None: nothing to compare with)
    distance: float | None = None
    nearest_session: str | None = None
    compared_sessions: int = 0


@dataclass
class SignificanceVerdict:
    insignificant: bool
    #: check -> whether it found the session insignificant
    signs: dict[str, bool]
    reasons: list[str]


def mean_vector(vectors: list[np.ndarray]) -> np.ndarray | None:
    """The normalised mean of a session's turn vectors (None without any)."""
    if not vectors:
        return None
    mean = np.mean(np.stack([np.asarray(v, dtype=np.float32) for v in vectors]), axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else None


def nearest(vector: np.ndarray, others: dict[str, np.ndarray]) -> tuple[str | None, float | None]:
    """The session of `others` nearest to `vector`, and its cosine distance."""
    best: tuple[str | None, float | None] = (None, None)
    for key, other in others.items():
        distance = 1.0 - float(np.dot(vector, other))
        if best[1] is None or distance < best[1]:
            best = (key, distance)
    return best


def judge(s: SessionSignals, cfg: SignificanceGateConfig) -> SignificanceVerdict:
    few_turns = s.substantive < cfg.min_turns
    unknown = len(s.known_entities) < cfg.min_entity_overlap
    repeated = s.distance is not None and s.distance <= cfg.novelty_threshold
    reasons = [
        f"{s.substantive} substantive turn(s): "
        + (f"fewer than {cfg.min_turns}" if few_turns else f"at least {cfg.min_turns}"),
        f"{len(s.known_entities)} entit{'y' if len(s.known_entities) == 1 else 'ies'} the"
        " project knows"
        + (f" ({', '.join(s.known_entities[:5])})" if s.known_entities else "")
        + (f": fewer than {cfg.min_entity_overlap}" if unknown else ""),
        ("no earlier session of the project to compare with" if s.distance is None else
         f"cosine distance {s.distance:.3f} to session {s.nearest_session}"
         + (f": within {cfg.novelty_threshold}" if repeated
            else f": more than {cfg.novelty_threshold}")),
    ]
    signs = {"turns": few_turns, "entities": unknown, "novelty": repeated}
    return SignificanceVerdict(all(signs.values()), signs, reasons)
