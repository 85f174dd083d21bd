"""The static roofline (PNG or SVG) with matplotlib. In SVG each kernel marker carries the id
`kernel-<i>`, which the HTML report uses for hover details."""

from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ..errors import KernelscopeError  # noqa: E402
from ..files import write_file  # noqa: E402
from .roofline_data import RooflineData  # noqa: E402

BOUND_COLOUR = {"compute": "#d62728", "memory": "#1f77b4", "latency": "#ff7f0e", "unmeasured": "#7f7f7f"}


def figure(data: RooflineData, title: str) -> Figure:
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    xs = [p.ai for p in data.points] + [r.ridge for r in data.roofs]
    lo = 10 ** math.floor(math.log10(max(min(xs), 1e-2) / 10)) if xs else 0.1
    hi = 10 ** math.ceil(math.log10(max(xs) * 10)) if xs else 1e4
    for roof in data.roofs:
        ax.plot([lo, roof.ridge, hi], [lo * data.memory_tbps, roof.tflops, roof.tflops], lw=1.5,
                label=f"{roof.key} = {roof.tflops:g} TFLOP/s (ridge {roof.ridge:.0f} FLOP/B)")
        ax.axvline(roof.ridge, color="0.85", lw=0.8, zorder=0)
    ax.plot([], [], " ", label=f"{data.memory_key} = {data.memory_tbps:g} TB/s (slope)")
    for i, p in enumerate(data.points):
        colour = BOUND_COLOUR.get(p.bound, "black")
        size = 40 + 600 * p.time_share
        marker = ax.scatter([p.ai], [p.tflops], s=size, zorder=3, edgecolors=colour, linewidths=1.8,
                            facecolors=colour if p.measured else "none")
        marker.set_gid(f"kernel-{i}")
        ax.annotate(p.label[:40], (p.ai, p.tflops), xytext=(6, 4), textcoords="offset points", fontsize=7)
    for bound, colour in BOUND_COLOUR.items():
        ax.scatter([], [], c=colour, label=bound if bound == "unmeasured" else f"{bound}-bound")
    ax.scatter([], [], facecolors="none", edgecolors="k", label="hollow: AI unmeasured (placed by SM busy)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP / DRAM byte)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="major", color="0.9")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def render(data: RooflineData, title: str, fmt: str) -> bytes:
    fig = figure(data, title)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt)
    plt.close(fig)
    return buf.getvalue()


def write(data: RooflineData, title: str, out: Path) -> Path:
    fmt = out.suffix.lstrip(".").lower()
    if fmt not in {"png", "svg"}:
        raise KernelscopeError(f"{out}: roofline output must end in .png or .svg")
    return write_file(render(data, title, fmt), out)
