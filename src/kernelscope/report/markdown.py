"""`analyze --format markdown`: what a reviewer pastes into a PR — the kernel table and the next
levers across kernels, with kernel names as code spans and nothing from a report read as markup."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..analysis.frontier import FrontierItem
from ..model import Assessment
from . import kernels
from .table import md_code, md_text, render_markdown
from .terminal import FRONTIER_SHOWN


def analysis(items: Sequence[Assessment], headline: str, labels: Mapping[str, str] | None = None,
             per_launch: bool = False) -> str:
    with kernels.no_gc_pauses():
        rows = kernels.ranked(items, per_launch)
        return render_markdown(kernels.table(rows, labels, per_launch=per_launch, title=headline)) + \
            frontier(kernels.kernel_frontier(rows))


def frontier(front: Sequence[tuple[int, FrontierItem]]) -> str:
    if not front:
        return ""
    out = f"\n**Next levers across kernels** ({min(FRONTIER_SHOWN, len(front))} of {len(front)}, by expected "
    out += "gain x time share / cost)\n\n"
    for i, (rank, f) in enumerate(front[:FRONTIER_SHOWN], 1):
        out += (f"{i}. \\#{rank} {md_code(f.kernel)} ({md_text(kernels.share_text(f))}) — "
                f"**{md_text(f.rule)}**: {md_text(f.action)}. Expect: {md_text(f.expected)}; "
                f"confirm: {md_text(f.confirm)}\n")
    return out
