"""kernelscope report and roofline: the HTML report and the static roofline plot of the inputs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .. import argtypes as T
from .args import add_per_launch, add_reading, add_verb, analyze_request, file_out, refuse
from .output import say, ticker


def add_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """report, then roofline."""
    r = add_verb(sub, "report", "self-contained HTML report (opens offline)", cmd_report,
                 "kernelscope report bundles/gemm --out report.html")
    _figure_options(r, "the HTML file to write (e.g. report.html)")
    r.add_argument("--campaign-config", type=T.path, help="a campaign config.yaml whose context fills the header")

    ro = add_verb(sub, "roofline", "static roofline plot (.png, .svg or .pdf)", cmd_roofline,
                  "kernelscope roofline bundles/gemm bundles/attn --out roofline.png   # or .svg, .pdf")
    _figure_options(ro, "the plot file to write: .png, .svg or .pdf")


def _figure_options(p: argparse.ArgumentParser, what: str) -> None:
    add_reading(p)
    add_per_launch(p)
    p.add_argument("--title", help="title (default: device, model and metric set from the context)")
    p.add_argument("--out", required=True, type=T.path, help=what)


def _output(a: argparse.Namespace) -> Any:
    from ..app import Output

    return Output(a.title, a.per_launch, Path(a.campaign_config) if getattr(a, "campaign_config", None) else None)


def cmd_report(a: argparse.Namespace) -> int:
    from .. import app

    with ticker() as tick:
        out = app.report(analyze_request(a), file_out(a.out), _output(a), tick.step)
    say(f"wrote {out}")
    return 0


def cmd_roofline(a: argparse.Namespace) -> int:
    from .. import app

    refuse("roofline", ((a.achievable, "--achievable", "the plot draws the roofs of one ceilings file; to draw "
                                                        "measured ones, give that file as --ceilings"),))
    with ticker() as tick:
        out = app.roofline(analyze_request(a), file_out(a.out), _output(a), tick.step)
    say(f"wrote {out}")
    return 0
