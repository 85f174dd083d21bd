"""Output speed and size at scale: the terminal table, the roofline and the HTML report for 1k,
10k and 100k kernels, and a 20k-kernel campaign page, with the log-log slope of time against N
(1 = linear). Inputs replicate the real fixture records (every figure real) under distinct kernel
names, with times spread over three decades so ranks, labels and caps are exercised.

    taskset -c 0,1 python3 bench/output_scale.py                 # 1k and 10k (about a minute)
    taskset -c 0,1 python3 bench/output_scale.py --sizes 1000 10000 100000 --campaign 20000 --cli 1000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kernelscope import analyze
from kernelscope.ceilings import CeilingsFile
from kernelscope.model import Assessment
from kernelscope.report import roofline_data, roofline_plot, terminal
from kernelscope.report.html import Page, render_html
from kernelscope.report.kernels import ranked
from scale import raw_csv, slope  # bench/, beside this script

FIXTURES = Path(__file__).parents[1] / "tests" / "fixtures"
SOURCES = ("gemm_bf16.ncu-rep", "decode_gemm.ncu-rep", "fp8_gemm.ncu-rep", "divergent.ncu-rep",
           "softmax.ncu-rep.gz", "tiny.ncu-rep.gz", "attention_cudnn.ncu-rep", "gemm_basic.ncu-rep")


def kernels(n: int) -> tuple[list[Assessment], CeilingsFile]:
    base, table = analyze([str(FIXTURES / s) for s in SOURCES])
    out = []
    for i in range(n):
        a = base[i % len(base)]
        r = a.record
        spread = 10 ** (3 * ((i * 7919) % n) / n)  # times over three decades, in no order
        name = f"{r.name}_{i}"  # a distinct kernel: its identity is its full name
        out.append(replace(a, record=replace(r, name=name, name_full=name, launch_id=i, source=f"cell{i % 8}/r",
                                             duration_ns=None if r.duration_ns is None else r.duration_ns * spread)))
    return out, table


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def fit(points: list[tuple[int, float]]) -> str:
    return f"{slope(points):.2f}" if len(points) > 1 else "—"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--campaign", type=int, default=20000, help="kernels on the campaign page (0: skip)")
    ap.add_argument("--plot-max", type=int, default=20000, help="largest N to draw the roofline for")
    ap.add_argument("--cli", type=int, default=1000, help="kernels for the whole-process CLI runs (0: skip)")
    args = ap.parse_args()
    print(f"{len(os.sched_getaffinity(0))} cores; inputs replicate {len(SOURCES)} real fixture reports")
    term, plot, page = [], [], []
    for n in args.sizes:
        items, table = kernels(n)
        t, text = timed(lambda: terminal.render(items, "bench", width=200))  # noqa: B023
        term.append((n, t))
        print(f"terminal table  N={n:>7,}: {t:6.2f} s = {t / n * 1e3:.3f} ms/row, {str(text).count(chr(10)):,} lines")
        if n > args.plot_max:
            continue
        rows = ranked(items)
        data = roofline_data.build(rows, table)
        t, png = timed(lambda: roofline_plot.render(data, "bench", "png"))  # noqa: B023
        svg = roofline_plot.render(data, "bench", "svg")
        plot.append((n, t))
        print(f"roofline PNG    N={n:>7,}: {t:6.2f} s ({len(png) / 1e3:,.0f} kB PNG, {len(svg) / 1e6:.2f} MB SVG)")
        t, html = timed(lambda: render_html(rows, roofline_data.build(rows, table),  # noqa: B023
                                            Page("bench", "bench", {}, {})))
        page.append((n, t))
        print(f"HTML report     N={n:>7,}: {t:6.2f} s, {len(str(html)) / 1e6:.2f} MB")
    print(f"log-log slope of time against N: terminal {fit(term)}, roofline {fit(plot)}, HTML {fit(page)}")
    if args.campaign:
        items, table = kernels(args.campaign)
        rows = ranked(items)
        labels = {a.record.source: a.record.source.split("/")[0] for a in items}
        t, html = timed(lambda: render_html(rows, roofline_data.build(rows, table, labels=labels),
                                            Page("campaign", "bench", {}, labels, "cell")))
        print(f"campaign page   N={args.campaign:>7,}: {t:6.2f} s, {len(str(html)) / 1e6:.2f} MB "
              "(8 cells, cell column)")
    if args.cli:
        whole_process(args.cli)


def whole_process(n: int) -> None:
    """The CLI end to end on a raw CSV export of N kernels (the fixture rows, each its own kernel):
    reading and judging included, as a user runs it."""
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "n.csv"
        raw_csv(n, csv, distinct=True)
        for verb in (["analyze", str(csv)], ["roofline", str(csv), "--out", f"{tmp}/r.png"],
                     ["report", str(csv), "--out", f"{tmp}/r.html"]):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "kernelscope.cli", *verb], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            size = os.path.getsize(verb[-1]) / 1e6 if verb[0] != "analyze" else 0.0
            print(f"kernelscope {verb[0]:<8} N={n:>7,}: {time.perf_counter() - t0:6.2f} s whole process"
                  + (f", {size:.2f} MB" if size else ""))


if __name__ == "__main__":
    main()
