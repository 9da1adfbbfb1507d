"""Where mnemonist lives on disk and how `agent.yaml` becomes a validated `Config`.

The home folder is `~/.agents` unless `MNEMONIST_HOME` is set; the database is
`<home>/memory/memories.db`. `agent.yaml` may hold sections of other tools: only `memory`,
`search`, `embedding`, `server`, `hooks` and `files` are read. Legacy flat keys under
`memory.pipelineV2` (e.g. `workerPollMs`) are accepted; when the nested key is also present,
the nested key wins.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from mnemonist.model.config import Config, bounds

log = logging.getLogger(__name__)

SECTIONS = tuple(Config.model_fields)  # every top-level section of agent.yaml

#: flat key under memory.pipelineV2 -> nested path (older configurations' flat keys)
LEGACY_PIPELINE_KEYS: dict[str, tuple[str, ...]] = {
    "extractionProvider": ("extraction", "provider"),
    "extractionModel": ("extraction", "model"),
    "extractionTimeout": ("extraction", "timeout"),
    "minFactConfidenceForWrite": ("extraction", "minConfidence"),
    "workerPollMs": ("worker", "pollMs"),
    "workerMaxRetries": ("worker", "maxRetries"),
    "leaseTimeoutMs": ("worker", "leaseTimeoutMs"),
    "graphEnabled": ("graph", "enabled"),
    "graphBoostWeight": ("graph", "boostWeight"),
    "graphBoostTimeoutMs": ("graph", "boostTimeoutMs"),
    "rerankerEnabled": ("reranker", "enabled"),
    "rerankerModel": ("reranker", "model"),
    "rerankerTopN": ("reranker", "topN"),
    "rerankerTimeoutMs": ("reranker", "timeoutMs"),
    "autonomousEnabled": ("autonomous", "enabled"),
    "maintenanceIntervalMs": ("autonomous", "maintenanceIntervalMs"),
    "maintenanceMode": ("autonomous", "maintenanceMode"),
    "documentWorkerIntervalMs": ("documents", "workerIntervalMs"),
    "documentChunkSize": ("documents", "chunkSize"),
    "documentChunkOverlap": ("documents", "chunkOverlap"),
    "documentMaxContentBytes": ("documents", "maxContentBytes"),
    "hintsEnabled": ("hints", "enabled"),
}


class ConfigError(ValueError):
    """agent.yaml is unreadable or holds a value out of range; the message names the key."""


@dataclass(frozen=True)
class Paths:
    home: Path

    @property
    def config_file(self) -> Path:
        return self.home / "agent.yaml"

    @property
    def memory_dir(self) -> Path:
        return self.home / "memory"

    @property
    def database(self) -> Path:
        return self.memory_dir / "memories.db"


def home_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("MNEMONIST_HOME")
    return Path(env).expanduser() if env else Path.home() / ".agents"


def _apply_legacy_keys(raw: dict[str, Any]) -> None:
    memory = raw.get("memory")
    pipeline = memory.get("pipelineV2") if isinstance(memory, dict) else None
    if not isinstance(pipeline, dict):
        return
    for flat, path in LEGACY_PIPELINE_KEYS.items():
        if flat not in pipeline:
            continue
        value = pipeline.pop(flat)
        node = pipeline
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        snake = "".join("_" + c.lower() if c.isupper() else c for c in path[-1])
        if path[-1] not in node and snake not in node:  # nested wins
            node[path[-1]] = value


def load_config(paths: Paths | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Read `<home>/agent.yaml` (missing file: all defaults) and validate it."""
    raw: dict[str, Any] = {}
    if paths is not None and paths.config_file.exists():
        raw = _read_sections(paths.config_file)
    for section, values in (overrides or {}).items():
        raw.setdefault(section, {})
        raw[section] = _deep_merge(raw[section], values)
    _apply_legacy_keys(raw)
    try:
        return Config.model_validate(raw)
    except ValidationError as exc:
        where = f"{paths.config_file}: " if paths else ""
        raise ConfigError(where + "; ".join(_describe(err) for err in exc.errors())) from exc


def _read_sections(path: Path) -> dict[str, Any]:
    """mnemonist's sections of agent.yaml, each a mapping; anything else is a ConfigError
    that names the file and the problem (never a traceback)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} on line"
                          f" {line}): save it as UTF-8") from None
    try:
        loaded = yaml.safe_load(text) or {}
    except (yaml.YAMLError, ValueError, RecursionError) as exc:  # ValueError: a bad date
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections"
                          f" (memory:, search:, ...), got {_kind(loaded)}")
    raw = {k: v for k, v in loaded.items() if k in SECTIONS and v is not None}
    for section, value in raw.items():
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: {section} = {_short(value)}: must be a mapping of"
                              f" settings ({section}:, then indented key: value lines), got"
                              f" {_kind(value)}")
    return raw


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number"}.get(type(value), f"a {type(value).__name__}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _deep_merge(base: Any, extra: Any) -> Any:
    if isinstance(base, dict) and isinstance(extra, dict):
        out = dict(base)
        for key, value in extra.items():
            out[key] = _deep_merge(out.get(key), value)
        return out
    return extra


def _describe(err: Any) -> str:
    loc = [str(p) for p in err["loc"]]
    key = ".".join(loc)
    value = err.get("input")
    allowed = _allowed(loc)
    shown = _short(value) if isinstance(value, str | dict | list) else value
    suffix = f" (allowed: {allowed})" if allowed else ""
    if err["type"] in {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}:
        return f"{key} = {shown} is out of range{suffix}"
    if err["type"] in {"model_type", "dict_type", "model_attributes_type"}:
        return f"{key} = {shown}: must be a mapping of settings, got {_kind(value)}"
    return f"{key} = {shown}: {err['msg']}{suffix}"


def _allowed(loc: list[str]) -> str:
    """The allowed range or choices of the field at `loc`, from the schema itself."""
    model: type[BaseModel] | None = Config
    field = None
    for part in loc:
        if model is None:
            return ""
        field = next(
            (f for name, f in model.model_fields.items() if part in (name, f.alias)), None
        )
        if field is None:
            return ""
        ann = field.annotation
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    if field is None:
        return ""
    lo, hi = bounds(field)
    if lo is not None or hi is not None:
        return f"{lo if lo is not None else '-inf'}–{hi if hi is not None else 'inf'}"
    if get_origin(field.annotation) is not None and str(get_origin(field.annotation)).endswith(
        "Literal"
    ):
        return ", ".join(str(a) for a in get_args(field.annotation))
    if field.annotation is not None:
        return getattr(field.annotation, "__name__", str(field.annotation))
    return ""


SECRET_KEYS = {"api_key", "apiKey", "token", "posthogApiKey"}


def _mask(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: ("********" if k in SECRET_KEYS and v else _mask(v)) for k, v in node.items()}
    return node


def config_as_yaml(config: Config) -> str:
    """The effective configuration as YAML, secrets masked."""
    data = _mask(config.model_dump(by_alias=True, mode="json"))
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
