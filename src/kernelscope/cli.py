"""Command line: parse arguments, call one function, print. No analysis logic lives here."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console

from . import __version__
from .analysis.pipeline import analyze
from .errors import KernelscopeError
from .report.terminal import render
from .report.writers import to_csv, to_json, write_atomic


def _analyze(args: argparse.Namespace) -> int:
    items, table = analyze(args.inputs, kernel=args.kernel, hw=args.hw, ceilings=args.ceilings)
    if not items:
        raise KernelscopeError(f"no kernel launch matches --kernel {args.kernel!r} in {', '.join(args.inputs)}")
    context = {
        "tool": f"kernelscope {__version__}",
        "analyzed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "inputs": [str(p) for p in args.inputs],
        "kernel_filter": args.kernel,
        "ceilings_file": table.origin,
        "hw_override": args.hw,
    }
    if args.out:
        written = write_atomic({"kernels.json": to_json(items, context), "kernels.csv": to_csv(items)}, Path(args.out))
        print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(to_json(items, context))
    elif args.format == "csv":
        sys.stdout.write(to_csv(items))
    elif not args.out or args.format == "table":
        render(items, Console(), f"{len(items)} launch(es), ceilings {table.origin}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kernelscope", description=__doc__)
    p.add_argument("--version", action="version", version=f"kernelscope {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("analyze", help="per-kernel bound, %%SoL and next lever from ncu reports")
    a.add_argument("inputs", nargs="+", help=".ncu-rep, ncu CSV export (raw or details page), or a bundle dir")
    a.add_argument("--kernel", help="exact kernel name, or regex:EXPR (as ncu's --kernel-name)")
    a.add_argument("--hw", help="ceilings key to use instead of the report's device (e.g. h200-sxm)")
    a.add_argument("--ceilings", help="a ceilings YAML file replacing the packaged datasheet one")
    a.add_argument("--format", choices=("table", "json", "csv"), help="what to print (default: table)")
    a.add_argument("--out", help="directory to write kernels.json and kernels.csv into")
    a.set_defaults(func=_analyze)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KernelscopeError as exc:
        print(f"kernelscope: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
