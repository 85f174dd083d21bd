"""kernelscope ceilings list|measure: the speed-of-light ceilings, listed or measured on this GPU."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .. import argtypes as T
from .args import add_format, add_verb, file_out
from .output import emit, formatted


def add_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """ceilings and its sub-verbs list and measure."""
    ce = add_verb(sub, "ceilings", "the speed-of-light ceilings: list them, or measure this GPU's", None,
                  "kernelscope ceilings list")
    ce_sub = ce.add_subparsers(dest="ceilings_command", required=True)
    ls = add_verb(ce_sub, "list", "every ceiling key with its value, unit, devices and source", cmd_ceilings_list,
                  "kernelscope ceilings list --format markdown")
    ls.add_argument("--ceilings", type=T.path, help="a ceilings YAML file (default: the packaged datasheet one)")
    ls.add_argument("--for", dest="for_report", metavar="REPORT", type=T.path,
                    help="the ceilings a report's device is held to, each datasheet figure beside what the report's "
                         "own attributes derive")
    ls.add_argument("--hw", help="with --for: the ceilings key to hold the report to instead of its device's")
    add_format(ls)
    m = add_verb(ce_sub, "measure", "measure achievable copy bandwidth and matmul peaks on this GPU (needs torch)",
                 cmd_measure,
                 "kernelscope ceilings measure --out h200.yaml   # then: analyze ... --achievable h200.yaml")
    m.add_argument("--out", default="measured-ceilings.yaml", type=T.path, help="the YAML file to write")
    m.add_argument("--hw", help="key for the measured entry (default: from the GPU name)")


def cmd_measure(a: argparse.Namespace) -> int:
    from .. import app

    emit(app.ceilings_measure(file_out(a.out), a.hw))
    return 0


def cmd_ceilings_list(a: argparse.Namespace) -> int:
    from .. import app
    from ..report.listing import ceilings_rows, ceilings_table

    cf, devices, archs, title = app.ceilings_listing(Path(a.ceilings) if a.ceilings else None,
                                                     Path(a.for_report) if a.for_report else None, a.hw)
    rows = ceilings_rows(devices, archs)
    emit(formatted(ceilings_table(rows, title), a.format, {"origin": cf.origin, "ceilings": rows}))
    return 0
