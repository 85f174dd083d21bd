"""`diff --fail-on` thresholds, in the units the diff table shows: `FIGURE OP LIMIT UNIT`, e.g.
`duration_ns>+5%` (a kernel more than 5 % slower per launch fails) or `pct_sol<-3pt` (%SoL down by
more than 3 points). FIGURE is any number figure of the column spec (kernelscope/columns.py): a
column, or a map's number key as `MAP.KEY` (`warp_stalls.barrier`, `flops.tensor_bf16`). UNIT is
`%` (a change relative to the baseline), `pt` (percentage points: only on a percent figure), or
nothing (a change in the figure's own unit: only on a figure that is not a percent, since on
`pct_sol` a bare `-8` could mean either and the two differ by a factor of the baseline)."""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..columns import BY_NAME, FLAT, FLAT_KINDS, value
from ..errors import KernelscopeError
from ..model import Assessment

_EXPR = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(>=|<=|>|<)\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(%|pt)?\s*$",
                   re.ASCII)  # ASCII digits only (no ٥)
_OPS: dict[str, Callable[[float, float], bool]] = {">": operator.gt, "<": operator.lt, ">=": operator.ge,
                                                   "<=": operator.le}
IDENTITY = frozenset({"launch_id"})  # a number that names a launch, not a figure that can regress


def _unit(flat: str) -> str:
    name, _, key = flat.partition(".")
    return BY_NAME[name].unit_of(key)


# every number figure a gate may name -> its unit, as the column spec declares it
UNITS: dict[str, str] = {n: _unit(n) for n in FLAT if FLAT_KINDS[n] in ("number", "integer") and n not in IDENTITY}
MAPS = tuple(c.name for c in BY_NAME.values() if any(f.startswith(f"{c.name}.") for f in UNITS))


def is_percent(figure: str) -> bool:
    """A percent figure: its changes read in points (`pt`), or relative (`%`) when asked."""
    return UNITS[figure].startswith("%")


def figure_value(a: Assessment, figure: str) -> float | None:
    """One number figure of a launch: a column, or a map's key (None where the map is)."""
    name, _, key = figure.partition(".")
    v = value(a, name)
    if key:
        v = v.get(key) if isinstance(v, dict) else None
    return None if v is None else float(v)


@dataclass(frozen=True)
class Change:
    """One figure of one kernel, baseline and candidate (None: unmeasured on that side)."""

    base: float | None
    cand: float | None

    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.cand is None else self.cand - self.base

    @property
    def pct(self) -> float | None:
        d = self.delta
        if d is None or self.base is None:
            return None
        if self.base == 0:
            return 0.0 if d == 0 else math.copysign(math.inf, d)
        return 100.0 * d / abs(self.base)


@dataclass(frozen=True)
class Gate:
    figure: str
    op: str
    limit: float
    relative: bool  # `%`: relative to the baseline; else absolute (points, or the figure's unit)
    text: str

    def fails(self, change: Change) -> bool | None:
        """True if the change crosses the limit; None when either side is unmeasured."""
        moved = change.pct if self.relative else change.delta
        return None if moved is None else _OPS[self.op](moved, self.limit)


def _unknown(figure: str) -> str:
    name, dot, key = figure.partition(".")
    keys = [f.split(".", 1)[1] for f in UNITS if f.startswith(f"{name}.")]
    if keys:
        return (f"{key!r} is not a number key of {name}; use one of {', '.join(keys)}" if dot else
                f"{name!r} is a map: name one of its number keys as {name}.KEY, e.g. {name}.{keys[0]}")
    plain = [f for f in UNITS if "." not in f]
    return (f"{figure!r} is not a number figure; use one of {', '.join(plain)}, or a map's number key as MAP.KEY "
            f"({', '.join(MAPS)})")


def parse(expr: str) -> Gate:
    """A `--fail-on` expression, or a one-line error saying what to write instead."""
    m = _EXPR.match(expr)
    if not m:
        raise KernelscopeError(f"--fail-on {expr!r}: expected FIGURE OP LIMIT UNIT, e.g. 'duration_ns>+5%' or "
                               "'pct_sol<-3pt' (OP one of > < >= <=; UNIT % relative, pt points of a percent figure)")
    figure, op, limit, unit = m.groups()
    if figure not in UNITS:
        raise KernelscopeError(f"--fail-on {expr!r}: {_unknown(figure)}")
    shown = UNITS[figure] or "its own unit"
    if is_percent(figure) and not unit:
        raise KernelscopeError(f"--fail-on {expr!r}: {figure} is a percent figure ({shown}): write {limit}pt for "
                               f"a change of {limit.lstrip('+-')} points or {limit}% for one relative to the baseline")
    if unit == "pt" and not is_percent(figure):
        raise KernelscopeError(f"--fail-on {expr!r}: pt (points) is for percent figures; {figure} is in {shown}: "
                               f"write {limit}% for a relative change or {limit} for one in {shown}")
    return Gate(figure, op, float(limit), unit == "%", f"{figure}{op}{limit}{unit or ''}")
