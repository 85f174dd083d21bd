"""kernelscope diff: a baseline and a candidate compared kernel by kernel, as a gate."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .. import argtypes as T
from .args import GATE_EXIT, add_format, add_judging, add_verb, analyze_request
from .output import emit, formatted, ticker

# how diff pairs kernels and reads their figures: its --help, under the options
PAIRING = ("Kernels are paired by name, as join pairs them: by full name, else by base name where the\n"
           "template arguments changed (said in a note). Launches of a kernel together: mean time per\n"
           "launch. Cells read `baseline → candidate (change)`: points (pt) for a percent figure, relative\n"
           "(%) for the rest, and as each gate reads it. Columns show time, the gated figures and those\n"
           "that moved by 1 % or more. The figures both sides measured are compared and those one side\n"
           "lacks are listed; a different device, shapes or model is refused (--allow-mismatch), and one\n"
           "that only one side records is noted as not checked.\n"
           "A gate that could not be evaluated (a side did not measure its figure) has failed.\n")


def add_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """diff: the two sides, the selection and ceilings, the gates."""
    di = add_verb(sub, "diff", "compare a baseline and a candidate kernel by kernel, as a gate", cmd_diff,
                  "kernelscope diff bundles/base bundles/cand --fail-on 'duration_ns>+5%' --format markdown",
                  extra=PAIRING + GATE_EXIT)
    di.add_argument("baseline", type=T.path, help="bundle, .ncu-rep or CSV export: the baseline")
    di.add_argument("candidate", type=T.path, help="bundle, .ncu-rep or CSV export: the candidate")
    add_judging(di)
    di.add_argument("--fail-on", action="append", metavar="GATE",
                    help="FIGURE OP LIMIT UNIT, repeatable: e.g. 'duration_ns>+5%%' (a kernel over 5 %% slower per "
                         "launch fails), 'pct_sol<-3pt' (%%SoL down more than 3 points), 'warp_stalls.barrier>+2pt'; "
                         "UNIT %% (relative), pt (points: percent figures only) or none (the figure's own unit: "
                         "not on a percent figure); exit 1 if any kernel fails or a side did not measure the figure")
    di.add_argument("--allow-mismatch", action="store_true",
                    help="compare even when device/shapes/model differ")
    add_format(di, "; csv: one row per kernel and figure")


def cmd_diff(a: argparse.Namespace) -> int:
    from .. import app
    from ..report import diff

    with ticker() as tick:
        cmp = app.diff(Path(a.baseline), Path(a.candidate), analyze_request(a), a.allow_mismatch, a.fail_on or (),
                       tick.step)
    title = f"diff: baseline {Path(a.baseline).name} → candidate {Path(a.candidate).name}"
    if a.format == "csv":
        emit(diff.to_csv(cmp))
    else:
        emit(formatted(diff.table(cmp, title), a.format, diff.document(cmp, a.baseline, a.candidate)))
    return 0 if cmp.passed else 1
