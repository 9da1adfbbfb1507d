"""The service's shape: a few collaborators of at most 30 public methods each, none of them
overriding another's method, composed in one place, and reached by every face through a
typed accessor (docs/architecture.md)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import types
import typing
from pathlib import Path

import mnemonist
import mnemonist.service
from mnemonist.service import MemoryService

MAX_PUBLIC_METHODS = 30
SRC = Path(mnemonist.__file__).parent
#: the packages that are faces: they reach the service, never build it
FACES = ("api", "dashboard", "mcp", "cli", "hooks", "web.py")
#: the collaborators MemoryService composes, by attribute
PARTS = ("memories", "reads", "files", "documents", "sessions", "hooks", "feedback", "graph",
         "pipeline", "curation", "carry", "health")


def _service_classes() -> list[type]:
    out = []
    names = ["", *(f".{info.name}" for info in pkgutil.iter_modules(mnemonist.service.__path__))]
    for name in names:
        module = importlib.import_module(f"mnemonist.service{name}")
        out += [c for _, c in inspect.getmembers(module, inspect.isclass)
                if c.__module__ == module.__name__]
    return out


def _public_methods(cls: type) -> list[str]:
    """Every public callable a caller can reach on the class (its own and inherited)."""
    return [name for name, value in inspect.getmembers(cls)
            if not name.startswith("_") and callable(value)
            and not isinstance(value, type)]


def test_no_service_class_has_more_than_30_public_methods() -> None:
    classes = _service_classes()
    assert MemoryService in classes and len(classes) > 10
    too_big = {c.__qualname__: len(_public_methods(c)) for c in classes
               if not issubclass(c, BaseException)
               and len(_public_methods(c)) > MAX_PUBLIC_METHODS}
    assert too_big == {}, f"split these: {too_big}"


def test_no_collaborator_silently_overrides_a_method() -> None:
    """A class assembled from several modules' operations defines each public method once:
    no method hides another of the same name further down the MRO."""
    for cls in _service_classes():
        if issubclass(cls, BaseException):
            continue
        defined: dict[str, list[str]] = {}
        for base in cls.__mro__[:-1]:
            if base.__module__.startswith("mnemonist.service"):
                for name in vars(base):
                    if not name.startswith("_"):
                        defined.setdefault(name, []).append(base.__qualname__)
        twice = {name: owners for name, owners in defined.items() if len(owners) > 1}
        assert twice == {}, f"{cls.__qualname__} overrides: {twice}"


def test_the_service_is_composed_of_its_parts_in_one_place() -> None:
    """MemoryService inherits nothing: its operations are its parts', reached by name."""
    assert MemoryService.__bases__ == (object,)
    assert set(_public_methods(MemoryService)) == {"start", "stop", "flush"}
    source = inspect.getsource(MemoryService.__init__)
    for part in PARTS:
        assert f"self.{part} = " in source, part


def test_the_accessors_of_the_faces_are_typed() -> None:
    from mnemonist.api import deps
    from mnemonist.mcp.backends import ServiceBackend

    assert typing.get_type_hints(deps.svc)["return"] is MemoryService
    hints = typing.get_type_hints(ServiceBackend.__init__, localns={
        "MemoryService": MemoryService})
    assert hints["service"] is MemoryService


def _face_files() -> list[Path]:
    out: list[Path] = []
    for face in FACES:
        path = SRC / face
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return [p for p in out if p.exists()]


def test_no_face_reaches_an_untyped_service() -> None:
    """The app's state is read through `api.deps.svc` only, and every parameter or
    variable of a face named like the service is annotated, with something other than
    `Any`."""
    problems: list[str] = []
    for path in _face_files():
        where = path.relative_to(SRC)
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr == "service"
                    and isinstance(node.ctx, ast.Load)
                    and isinstance(node.value, ast.Attribute) and node.value.attr == "state"
                    and str(where) != "api/deps.py"):
                problems.append(f"{where}:{node.lineno} reads app.state.service")
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for arg in [*node.args.args, *node.args.kwonlyargs]:
                    if arg.arg in ("service", "svc"):
                        note = ast.unparse(arg.annotation) if arg.annotation else None
                        if note in (None, "Any", "typing.Any"):
                            problems.append(f"{where}:{node.lineno} {node.name}({arg.arg}:"
                                            f" {note})")
    assert problems == []


def test_answers_are_snake_case_beside_their_deprecated_twins() -> None:
    """An answer's keys are snake_case; the few a write spelt in camelCase before come as
    well, with the same value (docs/api.md#key-style)."""
    from mnemonist.model.answers import LEGACY_KEYS, RecallAnswer, RememberAnswer
    from mnemonist.service.mutations import MutationOps

    for shape in (RememberAnswer, RecallAnswer):
        assert all(key == key.lower() for key in shape.__annotations__), shape
    out = MutationOps._result("m1", "updated", None, new_version=2, content_changed=True)
    twins = {camel: snake for snake, camel in LEGACY_KEYS.items() if camel in out}
    assert all(key == key.lower() for key in out if key not in twins)
    assert twins and all(out[camel] == out[snake] for camel, snake in twins.items())


def test_remember_writes_no_camel_case_key() -> None:
    """The remember path (its answer and the `created` event's metadata) spells every key of
    its dict literals in snake_case."""
    for name in ("remember.py", "write_gate.py", "importer.py"):
        tree = ast.parse((SRC / "service" / name).read_text())
        keys = [k.value for node in ast.walk(tree) if isinstance(node, ast.Dict)
                for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        assert keys and [k for k in keys if k != k.lower()] == [], name



#: return annotations that say nothing of an answer's keys
_UNTYPED = (typing.Any, dict[str, typing.Any], list[dict[str, typing.Any]])


def _untyped(hint: object) -> bool:
    """`Any`, `dict[str, Any]`, `list[dict[str, Any]]`, or an Optional (a union) of one."""
    if hint in _UNTYPED:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_untyped(arg) for arg in typing.get_args(hint))
    return False


def _parts() -> dict[str, type]:
    """Each collaborator's class, by the attribute MemoryService keeps it under."""
    classes = {c.__name__: c for c in _service_classes()}
    source = inspect.getsource(MemoryService.__init__)
    out = {}
    for part in PARTS:
        line = next(x for x in source.splitlines() if f"self.{part} = " in x)
        out[part] = classes[line.split("= ", 1)[1].split("(", 1)[0]]
    return out


def test_untyped_answers_are_recognised() -> None:
    from mnemonist.model.answers import RecallAnswer

    assert _untyped(typing.Any) and _untyped(dict[str, typing.Any])
    assert _untyped(dict[str, typing.Any] | None)
    assert _untyped(typing.Optional[list[dict[str, typing.Any]]])  # noqa: UP045
    assert not _untyped(RecallAnswer) and not _untyped(RecallAnswer | None)
    assert not _untyped(type(None)) and not _untyped(bool) and not _untyped(list[str])


def test_every_answer_of_every_part_is_typed() -> None:
    """Each public method of each collaborator of MemoryService says what it answers: a
    TypedDict of model/answers*.py (or None, a bool, a model, a list of models), never a
    bare `Any`, `dict[str, Any]` or `list[dict[str, Any]]`, nor an Optional of one."""
    untyped: list[str] = []
    checked = 0
    for part, cls in _parts().items():
        for name in _public_methods(cls):
            hints = typing.get_type_hints(getattr(cls, name))
            assert "return" in hints, f"{part}.{name} has no return annotation"
            checked += 1
            if _untyped(hints["return"]):
                untyped.append(f"{part}.{name} -> {hints['return']}")
    assert checked > 100
    assert untyped == [], "give these answers a TypedDict (model/answers*.py):\n" + "\n".join(
        untyped)
