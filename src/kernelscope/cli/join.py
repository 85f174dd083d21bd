"""kernelscope join: ncu figures beside nsys kernel totals and profiler sample shares, by name."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .. import argtypes as T
from .args import add_format, add_reading, add_verb, analyze_request
from .output import emit, formatted, terminal_width, ticker


def add_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """join: the ncu inputs, then the profiles that rank them."""
    jo = add_verb(sub, "join", "ncu figures + nsys kernel totals + profiler sample shares, by name", cmd_join,
                  "kernelscope join bundles/gemm bundles/attn --nsys kern_sum.csv --format markdown")
    add_reading(jo, note=" (a source column tells them apart)", alias="--ncu")
    jo.add_argument("--nsys", type=T.path, help="nsys stats --report cuda_gpu_kern_sum --format csv output: ranks "
                                                "the kernels")
    jo.add_argument("--zymtrace", type=T.path, help="CSV of sample shares: name, share %% (ranks the kernels when "
                                                    "no --nsys is given)")
    add_format(jo, "; json and csv name each kernel in full and list the profile rows that match none")


def cmd_join(a: argparse.Namespace) -> int:
    from .. import app
    from ..report import join, markdown, terminal

    with ticker() as tick:
        joined = app.join(analyze_request(a), Path(a.nsys) if a.nsys else None,
                          Path(a.zymtrace) if a.zymtrace else None, tick.step)
    fmt = a.format or "table"
    if fmt == "csv":
        emit(join.to_csv(joined))
        return 0
    text = formatted(join.table(joined), fmt, join.document(joined))
    unmatched = join.unmatched_table(joined)
    if unmatched is not None and fmt in ("table", "markdown"):
        text += "\n" + formatted(unmatched, fmt)
    if fmt == "markdown":
        text += markdown.frontier(joined.frontier)
    elif fmt == "table" and joined.frontier:
        text += "\n" + "\n".join(terminal.frontier_lines(joined.frontier, terminal_width())) + "\n"
    emit(text)
    return 0
