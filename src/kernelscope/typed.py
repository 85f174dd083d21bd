"""Typed JSON <-> frozen dataclasses: write a dataclass as plain data, and read plain data back
into it with every field checked against its type hint. A hand-edited or hostile document is then
one TypeProblem naming the field, never an AttributeError deep inside a reader, and a reader never
sees a string where it expects a number.

Each type hint is compiled once into a checker (a closure that knows its type), since a campaign
cell of 100k kernels checks ~200 values a kernel: reflecting on the hint per value (get_origin,
get_args, is_dataclass, a path string built in case of an error) cost more than the rest of the
render. The path of a value is spelt only when it is wrong.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Hashable, Mapping
from functools import cache
from typing import Any, Literal, TypeVar, cast, get_args, get_origin, get_type_hints

T = TypeVar("T")
Check = Callable[[Any], Any]  # a value -> itself checked and shaped to the hint, or a _Problem


def plain(value: Any) -> Any:
    """A dataclass (nested) as JSON-ready dicts and lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    return value


class TypeProblem(Exception):
    """Where a document departs from the type, e.g. `captures[0].passes[1]: expected int, got '9'`."""


class _Problem(Exception):
    """A TypeProblem on its way up: its message, and the path below the value being checked,
    innermost segment first (`.field`, `[index]`, `.key`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.below: list[str] = []

    def under(self, segment: str) -> _Problem:
        self.below.append(segment)
        return self

    def shown(self, where: str) -> str:
        path = where + "".join(reversed(self.below))
        return f"{path if where else path.removeprefix('.')}: {self.message}"


def _any(value: Any) -> Any:
    return value


def _float(value: Any) -> float:
    if type(value) is float and -math.inf < value < math.inf:  # the common case, NaN fails both
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Problem(f"expected a number, got {value!r:.80}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise _Problem(f"expected a finite number, got {value!r:.80}")
    return number


INT64 = range(-(2**63), 2**63)  # every integer column (Parquet, DataFrames, JSON readers) is int64


def _exact(tp: type) -> Check:
    def check(value: Any) -> Any:
        if not isinstance(value, tp) or (tp is int and (isinstance(value, bool) or value not in INT64)):
            raise _Problem(f"expected {tp.__name__}{' (int64)' if tp is int else ''}, got {value!r:.80}")
        return value

    return check


def _union(options: tuple[Any, ...]) -> Check:
    nullable = type(None) in options
    checks = [checker(o) for o in options if o is not type(None)]

    def check(value: Any) -> Any:
        if value is None and nullable:
            return None
        problems = []
        for one in checks:
            try:
                return one(value)
            except _Problem as exc:
                problems.append(exc)
        raise problems[0] if problems else _Problem("unexpected null")

    return check


def _literal(allowed: tuple[Any, ...]) -> Check:
    def check(value: Any) -> Any:
        if value not in allowed:
            raise _Problem(f"{value!r:.80} is not one of {', '.join(map(repr, allowed))}")
        return value

    return check


def _tuple(item: Check) -> Check:
    def check(value: Any) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise _Problem(f"expected a list, got {type(value).__name__}")
        out = []
        for i, v in enumerate(value):
            try:
                out.append(item(v))
            except _Problem as exc:
                raise exc.under(f"[{i}]") from None
        return tuple(out)

    return check


def _map(item: Check) -> Check:
    def check(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _Problem(f"expected a map, got {type(value).__name__}")
        out = {}
        for k, v in value.items():
            try:
                out[str(k)] = item(v)
            except _Problem as exc:
                raise exc.under(f".{k}") from None
        return out

    return check


def _dataclass(cls: type[Any]) -> Check:
    hints = get_type_hints(cls)
    fields = [(f.name, checker(hints[f.name]),
               f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
              for f in dataclasses.fields(cls)]

    def check(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _Problem(f"expected a map, got {type(value).__name__}")
        kwargs = {}
        for name, one, required in fields:
            if name in value:
                try:
                    kwargs[name] = one(value[name])
                except _Problem as exc:
                    raise exc.under(f".{name}") from None
            elif required:
                raise _Problem("missing").under(f".{name}")
        return cls(**kwargs)

    return check


@cache
def checker(tp: Any) -> Check:
    """The checker of one type hint, built once."""
    origin = get_origin(tp)
    if tp is Any:
        return _any
    if origin in (typing.Union, types.UnionType):
        return _union(get_args(tp))
    if origin is Literal:
        return _literal(get_args(tp))
    if origin is tuple:
        return _tuple(checker(get_args(tp)[0]))
    if origin in (Mapping, dict) or tp is dict:
        args = get_args(tp)
        return _map(checker(args[1] if args else Any))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass(tp)
    if tp is float:
        return _float
    if tp in (int, str, bool):
        return _exact(tp)
    raise TypeError(f"unsupported type {tp!r}")  # pragma: no cover - a schema bug


def build(cls: type[T], value: Any, where: str = "") -> T:
    """An instance of the dataclass `cls` from plain JSON data, every field checked against its type."""
    try:
        built: T = checker(cast(Hashable, cls))(value)
    except _Problem as exc:
        raise TypeProblem(exc.shown(where)) from None
    return built
