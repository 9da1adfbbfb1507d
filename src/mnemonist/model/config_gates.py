"""Settings of the two gates in front of writes (docs/gates.md): the write gate of an explicit
remember (`memory.writeGate`) and the significance gate of a session's LLM summary
(`sessions.significance`). Both are off unless turned on; `shadow` decides and logs only."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mnemonist.model.config_fields import CamelModel, Range, SnakeModel

GateMode = Literal["off", "shadow", "on"]


class WriteGateConfig(CamelModel):
    """An explicit remember that says what a stored memory of the same project and owner says
    already (the same words, no other number, name, negation or order) is not stored again."""

    mode: GateMode = Field(
        default="off",
        description="off; shadow: every remember is stored, what the gate would have done is"
        " logged (GET /api/gates/log); on: a restatement is not stored, the answer names the"
        " memory that holds it",
    )
    threshold: float = Range(
        0.85, 0.5, 1.0, "the least cosine to a stored memory for a remember to be compared with"
        " it word by word (the text guards decide)"
    )
    neighbours: int = Range(5, 1, 50, "nearest stored memories a remember is compared with")


class SignificanceGateConfig(SnakeModel):
    """A session's LLM summary (and the extraction that follows it) is skipped when every check
    finds the session insignificant: few substantive turns, no entity already known, and close
    to a recent session of its project."""

    mode: GateMode = Field(
        default="off",
        description="off; shadow: every summary runs, what the gate would have done is logged;"
        " on: an insignificant session gets no summary (POST /api/repair/backfill-skipped"
        " runs it later)",
    )
    min_turns: int = Range(
        5, 0, 1000, "fewer substantive turns than this is one sign of an insignificant session"
    )
    min_entity_overlap: int = Range(
        1, 0, 1000, "naming fewer entities that other memories of the project name is another"
    )
    novelty_threshold: float = Range(
        0.15, 0.0, 2.0, "a session whose mean turn vector is within this cosine distance of a"
        " recent session of its project is not novel: the third sign"
    )
    recent_sessions: int = Range(
        20, 1, 1000, "recent sessions of the project a session is compared with"
    )
