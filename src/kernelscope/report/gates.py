"""`diff --fail-on` thresholds: `FIGURE OP LIMIT[%]`, e.g. `duration_ns>+5%` (a kernel more than
5 % slower per launch fails) or `pct_sol<-3` (%SoL down by more than 3 points). FIGURE is a number
column of the column spec (kernelscope/columns.py); with `%` the limit is a relative change in
percent, without it an absolute change in the figure's own unit."""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..columns import BY_NAME
from ..errors import KernelscopeError

_EXPR = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*(>=|<=|>|<)\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(%?)\s*$")
_OPS: dict[str, Callable[[float, float], bool]] = {">": operator.gt, "<": operator.lt, ">=": operator.ge,
                                                   "<=": operator.le}
IDENTITY = frozenset({"launch_id"})  # a number that names a launch, not a figure that can regress
NUMBERS = tuple(c.name for c in BY_NAME.values() if c.kind in ("number", "integer") and c.name not in IDENTITY)


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
    relative: bool
    text: str

    def fails(self, change: Change) -> bool | None:
        """True if the change crosses the limit; None when either side is unmeasured."""
        moved = change.pct if self.relative else change.delta
        return None if moved is None else _OPS[self.op](moved, self.limit)


def parse(expr: str) -> Gate:
    m = _EXPR.match(expr)
    if not m:
        raise KernelscopeError(f"--fail-on {expr!r}: expected FIGURE OP LIMIT[%], e.g. 'duration_ns>+5%' "
                               "or 'pct_sol<-3' (OP one of > < >= <=)")
    figure, op, limit, pct = m.groups()
    if figure not in NUMBERS:
        raise KernelscopeError(f"--fail-on {expr!r}: {figure!r} is not a number figure; use one of "
                               + ", ".join(NUMBERS))
    return Gate(figure, op, float(limit), pct == "%", f"{figure}{op}{limit}{pct}")
