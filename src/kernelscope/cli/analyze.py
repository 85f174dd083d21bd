"""kernelscope analyze: one row a kernel, or the documents every launch is in."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .. import argtypes as T
from .args import add_format, add_per_launch, add_reading, add_verb, analyze_request, refuse
from .output import analysis_text, emit, emit_file, say, ticker


def add_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """analyze: the inputs, then how the kernels are shown or written."""
    a = add_verb(sub, "analyze", "per-kernel bound, %SoL and next lever from ncu reports", cmd_analyze,
                 "kernelscope analyze tests/fixtures/gemm_bf16.ncu-rep tests/fixtures/decode_gemm.ncu-rep\n"
                 "  kernelscope analyze report.ncu-rep --kernel regex:nvjet --format markdown >> pr-comment.md")
    add_reading(a)
    add_per_launch(a)
    add_format(a, "; json and csv hold every launch with every figure (--details and --per-launch are the table's)")
    a.add_argument("--details", action="store_true", help="table format: each kernel's verdict, limiters and levers")
    a.add_argument("--out-dir", type=T.path, help="directory to write kernels.json and kernels.csv into")
    a.add_argument("--jobs", type=T.positive, help="json, csv and --out-dir: processes that read a large raw CSV "
                   "export or report in parts (default: the CPUs this process may use, within its CPU quota, "
                   "at most 16)")


def _streamed(a: argparse.Namespace) -> bool:
    """analyze writes documents (json, csv, or --out-dir's two), streamed whatever the size."""
    return a.format in ("json", "csv") or bool(a.out_dir and not a.format)


def _check_analyze(a: argparse.Namespace) -> None:
    """analyze's format-bound options: --details and --per-launch shape the table (json and csv hold
    every launch with every figure), --jobs the streamed documents."""
    streamed = _streamed(a)
    holds = {"json": "--format json holds every launch (one object each)", "csv": "--format csv holds every launch "
             "(one row each)"}.get(a.format, "--out-dir alone writes kernels.json and kernels.csv, which hold every "
                                              "launch")
    refuse("analyze", (
        (a.details and streamed, "--details", f"{holds} with its verdict, limiters and levers; the details are "
                                              "the table's (--format table)"),
        (a.details and a.format == "markdown", "--details", "the markdown is the table and next levers for a PR "
                                                            "comment; the details are the table's (--format table)"),
        (a.per_launch and streamed, "--per-launch", f"{holds} already; --per-launch is the table's and markdown's"),
        (a.jobs and not streamed, "--jobs", f"the {a.format or 'table'} is built in this process; --jobs reads a "
                                            "large input in parts for --format json or csv and --out-dir"),
    ))


def _warn(line: str) -> None:
    say(f"warning: {line}")


def cmd_analyze(a: argparse.Namespace) -> int:
    from .. import app
    from ..report.stream import default_jobs

    _check_analyze(a)
    if _streamed(a):
        with ticker() as tick:
            written, spool = app.stream_results(analyze_request(a), Path(a.out_dir) if a.out_dir else None,
                                                a.format, a.jobs or default_jobs(), tick.step, _warn)
        if written:
            say("wrote " + ", ".join(str(p) for p in written))
        if spool is not None:
            with spool:
                emit_file(spool)
        return 0
    with ticker() as tick:
        an = app.analyze(analyze_request(a), tick.step)
    for line in an.warnings():
        _warn(line)
    if a.out_dir:
        say("wrote " + ", ".join(str(p) for p in app.write_results(an, Path(a.out_dir))))
    emit(analysis_text(an, a.format or "table", a.per_launch, a.details))
    return 0
