"""kernelscope campaign import-ncu|render|check|export: campaigns of cells as plain files."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .. import argtypes as T
from .args import GATE_EXIT, add_format, add_verb, file_out
from .output import emit, formatted, say, ticker


def add_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """campaign and its four sub-verbs."""
    cp = add_verb(sub, "campaign", "campaigns of cells stored as plain files", None,
                  "kernelscope campaign import-ncu --campaign decode-h200 --cell-id c1 bundles/gemm")
    cp_sub = cp.add_subparsers(dest="campaign_command", required=True)
    for name, text, example in (
            ("import-ncu", "import bundles/.ncu-rep/CSV exports as a cell (idempotent)",
             "kernelscope campaign import-ncu --campaign decode-h200 --cell-id c1 bundles/gemm"),
            ("render", "the campaign's HTML report, with a cell column",
             "kernelscope campaign render --campaign decode-h200 --out decode-h200.html"),
            ("check", "gates; --strict exits 1 on failure",
             "kernelscope campaign check --campaign decode-h200 --strict --format markdown"),
            ("export", "kernels as Parquet by campaign and cell",
             "kernelscope campaign export --campaign decode-h200 --parquet out/")):
        sp = add_verb(cp_sub, name, text, cmd_campaign, example, GATE_EXIT if name == "check" else "")
        sp.add_argument("--campaign", required=True, help="the campaign's name (its directory under --root)")
        sp.add_argument("--root", default="campaigns", type=T.path,
                        help="directory holding campaigns (default ./campaigns)")
        if name == "import-ncu":
            sp.add_argument("inputs", nargs="*", type=T.path, help="bundle dirs, .ncu-rep reports or CSV exports")
            sp.add_argument("--cell-id", required=True, help="the cell's name (letters, digits, . _ -)")
            sp.add_argument("--bundle", action="append", type=T.path, help="an input, as a positional one (repeatable)")
            sp.add_argument("--hw", help="ceilings key to use instead of the report's device")
        elif name == "render":
            sp.add_argument("--out", type=T.path,
                            help="the HTML file to write (default: <root>/<campaign>/report.html)")
        elif name == "check":
            sp.add_argument("--strict", action="store_true", help="exit 1 when a gate fails")
            add_format(sp)
        else:
            sp.add_argument("--parquet", required=True, type=T.path,
                            help="dataset directory: writes DIR/campaign=NAME/cell_id=ID/kernels.parquet")


def cmd_campaign(a: argparse.Namespace) -> int:
    from .. import app

    root = Path(a.root)
    if a.campaign_command == "import-ncu":
        inputs = [Path(p) for p in [*a.inputs, *(a.bundle or [])]]
        say(f"wrote {app.campaign_import(root, a.campaign, a.cell_id, inputs, a.hw)}")
    elif a.campaign_command == "check":
        from ..report.listing import check_table

        n, failures, notes = app.campaign_check(root, a.campaign)
        if a.format in (None, "table"):
            emit("".join(f"FAIL: {x}\n" for x in failures) + "".join(f"note: {x}\n" for x in notes)
                 + f"{n} cell(s), {len(failures)} failure(s)\n")
        else:
            emit(formatted(check_table(n, failures, notes), a.format,
                       {"cells": n, "passed": not failures, "failures": failures, "notes": notes}))
        return 1 if failures and a.strict else 0
    elif a.campaign_command == "export":
        say(f"wrote {app.campaign_export(root, a.campaign, Path(a.parquet))}")
    else:
        with ticker() as tick:
            out = app.campaign_render(root, a.campaign, file_out(a.out) if a.out else None, tick.step)
        say(f"wrote {out}")
    return 0
