"""Colours, decided once for the terminal, the roofline and the HTML report. Verdict (bound)
colours and roof colours come from disjoint palettes, so a roof is never read as a verdict. A
roof's colour is its precision's, the same in every plot whatever else is drawn beside it."""

from __future__ import annotations

from zlib import crc32

# verdicts: warm/cool/neutral, as in ncu's own charts
BOUND_COLOUR = {"compute": "#d62728", "memory": "#1f77b4", "latency": "#ff7f0e", "unmeasured": "#7f7f7f"}
BOUND_ANSI = {"compute": "red", "memory": "blue", "latency": "yellow", "unmeasured": "grey"}
# roofs, by the precision of the ceiling (sol-ceilings.yaml's compute names): dark, and none of them
# red, blue, orange or grey; the four most often drawn together (bf16, fp32, fp8, fp16) far apart
ROOF_COLOUR = {
    "bf16": "#1b7837", "fp32": "#8c510a", "fp8": "#c51b7d", "fp16": "#762a83", "tf32": "#01665e",
    "int8": "#40004b", "fp4": "#35978f", "fp64_tensor": "#543005", "fp64": "#808000", "fp16_simt": "#4d9221",
}
MEMORY_ROOF_COLOUR = "#000000"
# warp-stall reasons (ncu has about 20): enough distinct colours that none is folded into "other"
STALL_COLOURS = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
    "#bab0ac", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79",
    "#637939", "#843c39", "#7b4173", "#3182bd",
)


def roof_precision(key: str) -> str:
    """The precision a compute ceiling key names: `h200-sxm.compute.bf16@mma.sync` -> `bf16`."""
    return key.split("@", 1)[0].rsplit(".", 1)[-1]


def roof_colour(key: str) -> str:
    """A compute roof's colour, from its precision alone (a precision no table names: a fixed pick
    from the same palette, by its name)."""
    precision = roof_precision(key)
    palette = tuple(ROOF_COLOUR.values())
    return ROOF_COLOUR.get(precision) or palette[crc32(precision.encode()) % len(palette)]


def stall_colour(index: int) -> str:
    return STALL_COLOURS[index % len(STALL_COLOURS)]
