"""The configuration reference table of docs/configuration.md, generated from the schema so
that the documentation cannot drift from the defaults and ranges the daemon enforces
(`mnemonist config reference` prints it; a test compares it with the docs)."""

from __future__ import annotations

import typing
from collections.abc import Iterator

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from mnemonist.model.config import CamelModel, Config, bounds

HEADER = "| key | default | allowed | meaning |\n|---|---|---|---|"


def _key(name: str, info: FieldInfo, model: type[BaseModel]) -> str:
    if info.alias:
        return info.alias
    if issubclass(model, CamelModel):
        head, *rest = name.split("_")
        return head + "".join(p.capitalize() for p in rest)
    return name


def _allowed(info: FieldInfo) -> str:
    lo, hi = bounds(info)
    if lo is not None and hi is not None:
        return f"{lo}–{hi}"
    ann = info.annotation
    if ann is bool:
        return "true \\| false"
    if typing.get_origin(ann) is typing.Literal:
        return " \\| ".join(str(a) for a in typing.get_args(ann))
    return ""


def _rows(model: type[BaseModel], prefix: str) -> Iterator[str]:
    for name, info in model.model_fields.items():
        key = f"{prefix}{_key(name, info, model)}"
        ann = info.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            yield from _rows(ann, key + ".")
            continue
        default = info.get_default(call_default_factory=True)
        doc = (info.description or "").replace("|", "\\|")
        yield f"| `{key}` | `{default!r}` | {_allowed(info)} | {doc} |"


def reference_table() -> str:
    """Every leaf key of the configuration with its default, allowed values and meaning."""
    return "\n".join([HEADER, *_rows(Config, "")])
