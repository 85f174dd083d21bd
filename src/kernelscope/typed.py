"""Typed JSON <-> frozen dataclasses: write a dataclass as plain data, and read plain data back
into it with every field checked against its type hint. A hand-edited or hostile document is then
one TypeProblem naming the field, never an AttributeError deep inside a reader, and a reader never
sees a string where it expects a number.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

T = TypeVar("T")


def plain(value: Any) -> Any:
    """A dataclass (nested) as JSON-ready dicts and lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    return value


def _convert(tp: Any, value: Any, where: str) -> Any:
    """`value` checked against (and shaped to) the type hint `tp`, or a TypeProblem at `where`."""
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = get_args(tp)
        if value is None and type(None) in options:
            return None
        problems = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(option, value, where)
            except TypeProblem as exc:
                problems.append(str(exc))
        raise TypeProblem(problems[0] if problems else f"{where}: unexpected null")
    if origin is Literal:
        if value not in get_args(tp):
            raise TypeProblem(f"{where}: {value!r:.80} is not one of {', '.join(map(repr, get_args(tp)))}")
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise TypeProblem(f"{where}: expected a list, got {type(value).__name__}")
        (item,) = get_args(tp)[:1]
        return tuple(_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin in (Mapping, dict) or tp is dict:
        if not isinstance(value, dict):
            raise TypeProblem(f"{where}: expected a map, got {type(value).__name__}")
        _, item = get_args(tp) or (str, Any)
        return {str(k): _convert(item, v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return build(tp, value, where)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeProblem(f"{where}: expected a number, got {value!r:.80}")
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise TypeProblem(f"{where}: expected a finite number, got {value!r:.80}")
        return number
    if tp in (int, str, bool):
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise TypeProblem(f"{where}: expected {tp.__name__}, got {value!r:.80}")
        return value
    raise TypeProblem(f"{where}: unsupported type {tp!r}")  # pragma: no cover - a schema bug


class TypeProblem(Exception):
    """Where a document departs from the type, e.g. `captures[0].passes[1]: expected int, got '9'`."""


_HINTS: dict[Any, dict[str, Any]] = {}  # get_type_hints is slow: a cell of 100k kernels builds 100k records


def build(cls: type[T], value: Any, where: str = "") -> T:
    """An instance of the dataclass `cls` from plain JSON data, every field checked against its type."""
    if not isinstance(value, dict):
        raise TypeProblem(f"{where}: expected a map, got {type(value).__name__}")
    hints = _HINTS.get(cls) or _HINTS.setdefault(cls, get_type_hints(cls))
    kwargs = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in value:
            kwargs[f.name] = _convert(hints[f.name], value[f.name], f"{where}.{f.name}" if where else f.name)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise TypeProblem(f"{where + '.' if where else ''}{f.name}: missing")
    return cls(**kwargs)
