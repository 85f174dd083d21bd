"""kernelscope kernels: every kernel a program runs, with the --kernel that selects each."""

from __future__ import annotations

import argparse
from typing import Any

from .. import argtypes as T
from .args import add_format, add_verb, refuse
from .output import emit, formatted, say


def add_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """kernels: how much to profile, the program's time, ncu."""
    ki = add_verb(sub, "kernels", "list every kernel PROGRAM (after --) runs: launches, GPU time, the --kernel that "
                  "selects each (one cheap ncu pass)", cmd_kernels,
                  "kernelscope kernels -- python3 serve_step.py   # then: capture --kernel 'regex:...' from its table")
    ki.add_argument("--timed", type=T.positive, metavar="N",
                    help="profile the first N launches with their duration, for launch counts and GPU time (each "
                         "costs ncu a serialised result: keep N small); default: names only, nothing profiled")
    ki.add_argument("--timeout", type=T.seconds, default=1800.0, help="seconds the program may run (default 1800)")
    ki.add_argument("--ncu", type=T.path, help="ncu binary (default: ncu on PATH, then /usr/local/cuda/bin/ncu)")
    ki.add_argument("--dry-run", action="store_true", help="print the ncu command and run nothing")
    add_format(ki)


def cmd_kernels(a: argparse.Namespace) -> int:
    from .. import app
    from ..report.listing import kernels_table

    refuse("kernels", ((a.dry_run and a.format, "--format", "--dry-run prints the ncu command that would list the "
                         "kernels, not a listing to format"),))
    result = app.kernels(a.target, a.ncu, a.timed, a.timeout, dry_run=a.dry_run, progress=say)
    if result.dry_run is not None:
        emit("".join(line + "\n" for line in result.dry_run))
        return 0
    table = kernels_table(result.rows, result.profiled, result.cap, a.target[0])
    doc = {"profiled_launches": result.profiled, "launch_cap": result.cap,
           "kernels": [{"name": r.name, "name_full": r.name_full, "launches": r.launches, "total_ns": r.total_ns,
                        "select": r.select, "select_matches": r.shared} for r in result.rows]}
    emit(formatted(table, a.format or "table", doc))
    return 0
