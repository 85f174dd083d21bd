"""Colours, decided once for the terminal, the roofline and the HTML report. Verdict (bound)
colours and roof colours come from disjoint palettes, so a roof is never read as a verdict."""

from __future__ import annotations

# verdicts: warm/cool/neutral, as in ncu's own charts
BOUND_COLOUR = {"compute": "#d62728", "memory": "#1f77b4", "latency": "#ff7f0e", "unmeasured": "#7f7f7f"}
BOUND_ANSI = {"compute": "red", "memory": "blue", "latency": "yellow", "unmeasured": "grey"}
# roofs: one per precision present; dark, and none of them red, blue, orange or grey
ROOF_COLOURS = ("#1b7837", "#762a83", "#8c510a", "#01665e", "#c51b7d", "#543005", "#35978f", "#40004b")
MEMORY_ROOF_COLOUR = "#000000"
# warp-stall reasons (ncu has about 20): enough distinct colours that none is folded into "other"
STALL_COLOURS = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
    "#bab0ac", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79",
    "#637939", "#843c39", "#7b4173", "#3182bd",
)


def roof_colour(index: int) -> str:
    return ROOF_COLOURS[index % len(ROOF_COLOURS)]


def stall_colour(index: int) -> str:
    return STALL_COLOURS[index % len(STALL_COLOURS)]
