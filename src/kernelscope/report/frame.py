"""The Python API's DataFrames: one row a launch (kernels.csv's columns) or one a kernel (its
launches together, analysis/groups.py), each column of one dtype fixed by the column spec, so a
frame of any run has the same columns and dtypes as any other: a figure is float64 with NaN where
unmeasured (never an all-None object column), an integer Int64, a flag boolean, text string (both
<NA> where absent), grid and block as Int64 x, y, z columns, and a list column (evidence, levers,
ncu's rules) holds lists. `frame.attrs["units"]` gives each figure's unit."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from .. import typed
from ..columns import COLUMNS, INT64, UNITS, Kind, kernel_object, record_object
from ..errors import KernelscopeError
from ..model import Assessment, KernelRecord
from .kernels import Ranked, ranked

if TYPE_CHECKING:
    import pandas

Per = Literal["launch", "kernel"]
DIMS = ("grid", "block")  # "(x, y, z)" text in the spec: three integer columns here
_DIMS_TEXT = re.compile(r"\(\s*(\d{1,19}),\s*(\d{1,19}),\s*(\d{1,19})\s*\)")
# a per-kernel frame's own columns (besides its rank by time, the table's #, first): what its
# launches add up to, after name_full
KERNEL_COLUMNS: tuple[tuple[str, Kind, str], ...] = (
    ("launches", "integer", ""), ("total_duration_ns", "number", "ns"), ("mean_duration_ns", "number", "ns"))

Getter = Callable[[Mapping[str, Any]], Any]


def _launch_columns() -> list[tuple[str, Kind, Getter]]:
    """(column, kind, its getter from a kernel object) of a launch frame, in the spec's order."""
    cols: list[tuple[str, Kind, Getter]] = []
    for c in COLUMNS:
        if c.name in DIMS:
            cols += [(f"{c.name}_{axis}", "integer", _axis(c.name, i)) for i, axis in enumerate("xyz")]
        elif c.kind == "map":
            cols += [(f"{c.name}.{key}", kind, _key(c.name, key)) for key, kind in c.keys]
        else:
            cols.append((c.name, c.kind, _get(c.name)))
    return cols


def _get(name: str) -> Getter:
    return lambda obj: obj.get(name)


def _key(name: str, key: str) -> Getter:
    return lambda obj: obj[name].get(key) if isinstance(obj.get(name), dict) else None


def _axis(name: str, i: int) -> Getter:
    return lambda obj: _dims(obj.get(name))[i]


def _dims(text: str | None) -> tuple[int | None, int | None, int | None]:
    """'(2, 66, 1)' -> (2, 66, 1); anything else (absent, or not three int64 numbers) -> unknown."""
    found = _DIMS_TEXT.fullmatch(text.strip()) if isinstance(text, str) else None
    dims = tuple(int(d) for d in found.groups()) if found else ()
    return (dims[0], dims[1], dims[2]) if len(dims) == 3 and all(d in INT64 for d in dims) else (None, None, None)


_LAUNCH = _launch_columns()
_DTYPES: dict[Kind, str] = {"number": "float64", "integer": "Int64", "boolean": "boolean", "text": "string",
                            "list": "object"}


def _columns(per: Per) -> list[tuple[str, Kind, Getter]]:
    """A launch frame's columns; per kernel, its rank first and what its launches add up to after
    name_full."""
    cols = list(_LAUNCH)
    if per == "kernel":
        at = next(i for i, (name, _, _) in enumerate(cols) if name == "name_full") + 1
        cols[at:at] = [(name, kind, _get(name)) for name, kind, _ in KERNEL_COLUMNS]
        cols.insert(0, ("rank", "integer", _get("rank")))
    return cols


def _checked(items: Iterable[KernelRecord | Assessment]) -> list[KernelRecord | Assessment]:
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise KernelscopeError(f"to_dataframe: expected a list of KernelRecord or Assessment, got "
                               f"{type(items).__name__}")
    out = list(items)
    for at, i in enumerate(out):
        if not isinstance(i, (Assessment, KernelRecord)):
            raise KernelscopeError(f"to_dataframe: expected KernelRecord or Assessment items, got {type(i).__name__}")
        try:  # a record changed by the caller (dataclasses.replace, object.__setattr__) is checked as a document is
            typed.build(type(i), typed.plain(i), f"items[{at}]")
        except typed.TypeProblem as exc:
            raise KernelscopeError(f"to_dataframe: {exc}") from None
    return out


def _kernel_object(r: Ranked) -> dict[str, Any]:
    """A kernel's row: its representative launch's figures and verdict (as the table shows it), with
    its rank and what its launches add up to."""
    return {**kernel_object(r.lead), "rank": r.rank, "launches": len(r.group.launches),
            "total_duration_ns": r.total_ns, "mean_duration_ns": r.group.mean_ns}


def to_dataframe(items: Iterable[KernelRecord | Assessment], per: Per = "launch") -> pandas.DataFrame:
    """One row a launch in input order (the default; KernelRecords or Assessments), or with
    per="kernel" one row a kernel (its launches together, analysis/groups.py; Assessments: what
    kernelscope.analyze returns) ranked by total time as the table ranks them, each figure its
    representative launch's. Anything else is a KernelscopeError."""
    import pandas

    if per not in ("launch", "kernel"):
        raise KernelscopeError(f"to_dataframe: per must be 'launch' or 'kernel', got {per!r:.80}")
    checked = _checked(items)
    if per == "launch":
        objects = [kernel_object(i) if isinstance(i, Assessment) else record_object(i) for i in checked]
    else:
        judged = [i for i in checked if isinstance(i, Assessment)]
        if len(judged) != len(checked):
            raise KernelscopeError("to_dataframe(per='kernel') groups judged launches: pass the Assessments "
                                   "kernelscope.analyze returns, not KernelRecords")
        objects = [_kernel_object(r) for r in ranked(judged)]
    data = {name: pandas.Series([get(o) for o in objects], dtype=_DTYPES[kind]) for name, kind, get in _columns(per)}
    frame: pandas.DataFrame = pandas.DataFrame(data)
    frame.attrs["units"] = {**UNITS, **{n: u for n, _, u in KERNEL_COLUMNS if u and per == "kernel"}}
    return frame
