"""Inputs of the hook and checkpoint endpoints.

Hook bodies are what a harness sends its hook commands (Claude Code: `session_id`,
`transcript_path`, `cwd`, `hook_event_name`, plus `source` | `prompt` | `trigger` | `reason`),
forwarded as they are: unknown keys are ignored because harnesses add fields over time.
`session_key` / `sessionId` are accepted for `session_id`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from mnemonist.model.requests import Caller, ScopeId

SESSION_ALIASES = AliasChoices("session_id", "sessionId", "session_key", "sessionKey")


def _key(value: str) -> str:
    if not value.strip():
        raise ValueError("session_id is empty")
    return value.strip()


class HookRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    session_id: str = Field(validation_alias=SESSION_ALIASES, min_length=1, max_length=500)
    transcript_path: str | None = Field(
        default=None, max_length=4096,
        validation_alias=AliasChoices("transcript_path", "transcriptPath"),
    )
    cwd: str | None = Field(default=None, max_length=4096)
    hook_event_name: str | None = Field(
        default=None, max_length=100,
        validation_alias=AliasChoices("hook_event_name", "hookEventName"),
    )
    harness: str | None = Field(default=None, max_length=100)
    project: str | None = Field(default=None, max_length=500,
                                description="overrides the project derived from cwd")
    agent_id: ScopeId | None = Field(
        default=None, description="the agent the hook reads as: global memories and its own")
    user_id: ScopeId | None = Field(
        default=None, description="the user the hook reads as: global memories and theirs")

    _session = field_validator("session_id")(lambda cls, v: _key(v))

    def caller(self) -> Caller:
        return Caller(agent_id=self.agent_id, user_id=self.user_id)


class SessionStartRequest(HookRequest):
    source: str | None = Field(default=None, max_length=50,
                               description="startup | resume | clear | compact")


class PromptSubmitRequest(HookRequest):
    prompt: str = Field(default="", max_length=1_000_000)


class PreCompactionRequest(HookRequest):
    trigger: str | None = Field(default=None, max_length=50, description="manual | auto")
    custom_instructions: str | None = Field(
        default=None, max_length=100_000,
        validation_alias=AliasChoices("custom_instructions", "customInstructions"),
    )


class CompactionCompleteRequest(HookRequest):
    trigger: str | None = Field(default=None, max_length=50)


class SessionEndRequest(HookRequest):
    reason: str | None = Field(default=None, max_length=200)
    transcript: str | None = Field(
        default=None, max_length=64 * 1024 * 1024,
        description="the transcript itself, for harnesses whose file the daemon cannot read",
    )


class CheckpointRequest(BaseModel):
    """POST /api/checkpoints: an explicit (written now) or agent (debounced) checkpoint."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    session_key: str = Field(validation_alias=SESSION_ALIASES, min_length=1, max_length=500)
    trigger: Literal["explicit", "agent"] = "explicit"
    harness: str | None = Field(default=None, max_length=100)
    project: str | None = Field(default=None, max_length=500)
    cwd: str | None = Field(default=None, max_length=4096)
    note: str | None = Field(default=None, max_length=100_000,
                             validation_alias=AliasChoices("note", "digest"),
                             description="free text kept in the digest (session context)")
    memory_queries: list[str] = Field(default_factory=list, max_length=100,
                                      validation_alias=AliasChoices("memory_queries",
                                                                    "memoryQueries"))
    recent_remembers: list[str] = Field(default_factory=list, max_length=100,
                                        validation_alias=AliasChoices("recent_remembers",
                                                                      "recentRemembers"))
    prompt_count: int = Field(default=0, ge=0, le=1_000_000,
                              validation_alias=AliasChoices("prompt_count", "promptCount"))

    _session = field_validator("session_key")(lambda cls, v: _key(v))
