"""The building blocks of the configuration schema: ranged fields and the two key styles
(snake_case sections, camelCase sections that accept snake_case too)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo


def bounds(info: FieldInfo) -> tuple[float | int | None, float | int | None]:
    """The inclusive (low, high) a field's `Range` allows; None where unbounded."""
    lo = hi = None
    for meta in info.metadata:
        lo = getattr(meta, "ge", lo)
        hi = getattr(meta, "le", hi)
    return lo, hi


def Range(default: float | int, lo: float | int, hi: float | int, doc: str = ""):
    """A field with a default and an inclusive allowed range."""
    return Field(default=default, ge=lo, le=hi, description=doc)


class SnakeModel(BaseModel):
    model_config = ConfigDict(extra="ignore", validate_assignment=True)


class CamelModel(BaseModel):
    """Keys are camelCase in YAML; snake_case is accepted too."""

    model_config = ConfigDict(
        extra="ignore", alias_generator=to_camel, populate_by_name=True, validate_assignment=True
    )


Ms = int  # milliseconds
