"""The next-lever frontier: every kernel's levers in one ranking, so the output ends with what to
try first across the workload, not kernel by kernel."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model import Assessment


@dataclass(frozen=True)
class FrontierItem:
    score: float  # gain x (0.25 + time share) / cost: a big kernel's lever first, a cheap one before a dear one
    kernel: str
    time_share_pct: float
    rule: str
    action: str
    expected: str
    confirm: str
    gain: int
    cost: int


def frontier(items: Sequence[Assessment]) -> list[FrontierItem]:
    total = sum(a.record.duration_ns or 0 for a in items) or 1.0
    rows = []
    for a in items:
        share = (a.record.duration_ns or 0) / total
        for lv in a.next_levers:
            rows.append(FrontierItem(lv.gain * (0.25 + share) / lv.cost, a.record.name, 100 * share, lv.rule,
                                     lv.action, lv.expected, lv.confirm, lv.gain, lv.cost))
    return sorted(rows, key=lambda r: -r.score)
