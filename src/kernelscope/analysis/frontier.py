"""The next-lever frontier: every kernel's levers in one ranking, so the output ends with what to try
first across the workload, not kernel by kernel. A kernel is all its launches (groups.py), ranked by
its total time; when a profile of the whole run is joined (nsys totals or a sampling profiler's
shares, which report/join.py reads), its shares replace ours, since they count the launches ncu
never captured. Each row says which share it used."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ..model import Assessment
from .groups import KernelSummary, Key, Tally, display_names
from .levers import saved_fraction


class FrontierItem(NamedTuple):
    """A lever of one kernel in the frontier's ranking, scored by the share of the run it could save a cost."""

    score: float  # expected gain x time share / cost: % of the whole run saved, per unit of cost
    kernel: str  # as shown: the short name, with template arguments where two kernels share it
    kernel_full: str  # the kernel's identity (groups.py)
    source: str  # the report it came from: two reports may hold kernels of one name
    time_share_pct: float | None  # None: the kernel is absent from the joined profile
    share_basis: str  # what the share is of
    launches: int
    total_ns: float | None  # over every captured launch
    rule: str
    family: str
    action: str
    expected: str
    confirm: str
    gain: int
    cost: int
    unlock_x: float | None


def frontier(items: Sequence[Assessment], weights: Mapping[Key, float] | None = None,
             basis: str = "joined profile") -> list[FrontierItem]:
    """`weights`: kernel (groups.identity) -> its weight in a whole-run profile (nsys total time,
    sample %); any unit, since shares are taken over the kernels present here."""
    tally = Tally()
    for a in items:
        tally.add(a)
    return ranked(tally.summaries(), weights, basis)


def ranked(groups: Sequence[KernelSummary], weights: Mapping[Key, float] | None = None,
           basis: str = "joined profile") -> list[FrontierItem]:
    """The frontier of kernels summarised as they streamed past (groups.Tally)."""
    if weights is None:
        total = sum(g.total_ns or 0.0 for g in groups) or 1.0
        shares: list[float | None] = [(g.total_ns or 0.0) / total for g in groups]
    else:
        keys = [(g.source, g.name_full) for g in groups]
        total = sum(weights.get(k, 0.0) for k in keys) or 1.0
        shares = [weights[k] / total if k in weights else None for k in keys]
    rows = []
    for g, share, shown in zip(groups, shares, display_names((g.name, g.name_full) for g in groups), strict=True):
        what = (f"ncu: {g.launches} launch{'es' if g.launches > 1 else ''} of this kernel over all "
                "captured launches" if weights is None else basis if share is not None else f"absent from the {basis}")
        for lv in g.levers:
            rows.append(FrontierItem(
                100 * saved_fraction(lv.gain, lv.unlock_x) * (share or 0.0) / lv.cost, shown, g.name_full, g.source,
                None if share is None else 100 * share,
                what, g.launches, g.total_ns, lv.rule, lv.family, lv.action, lv.expected, lv.confirm,
                lv.gain, lv.cost, lv.unlock_x))
    # Ties (kernels absent from a joined profile score 0) fall back to gain / cost, then total time.
    return sorted(rows, key=lambda r: (-r.score, -r.gain / r.cost, -(r.total_ns or 0.0)))
