"""The options and checks several verbs share, and the verb registration every verb module uses:
each verb's help shows its example (EXAMPLES) under its description."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import argtypes as T
from ..errors import KernelscopeError, UsageError

Handler = Callable[[argparse.Namespace], int]
FORMATS = ("table", "json", "csv", "markdown")
EXAMPLES = {
    "analyze": "kernelscope analyze tests/fixtures/gemm_bf16.ncu-rep tests/fixtures/decode_gemm.ncu-rep\n"
               "  kernelscope analyze report.ncu-rep --kernel regex:nvjet --format markdown >> pr-comment.md",
    "report": "kernelscope report bundles/gemm --out report.html",
    "roofline": "kernelscope roofline bundles/gemm bundles/attn --out roofline.png   # or .svg, .pdf",
    "capture": "kernelscope capture --kernel regex:nvjet --launch-skip 3 --out bundles/gemm -- python3 step.py",
    "op": "kernelscope op gemm --m 256 --n 4096 --k 8192 --dtype fp8 --out bundles/fp8",
    "launch": "kernelscope launch -- python3 -m my_server   # then: capture --attach 127.0.0.1:49152",
    "kernels": "kernelscope kernels -- python3 serve_step.py   # then: capture --kernel 'regex:...' from its table",
    "k8s": "kernelscope k8s capture -n serving deploy/llama --kernel regex:nvjet --out bundles/live",
    "k8s inspect": "kernelscope k8s inspect -n serving deploy/basic-inference",
    "k8s capture": "kernelscope k8s capture -n serving deploy/llama --kernel regex:nvjet --out bundles/live --dry-run",
    "k8s cleanup": "kernelscope k8s cleanup -n serving --release basic-inference-ncu",
    "campaign": "kernelscope campaign import-ncu --campaign decode-h200 --cell-id c1 bundles/gemm",
    "campaign import-ncu": "kernelscope campaign import-ncu --campaign decode-h200 --cell-id c1 bundles/gemm",
    "campaign render": "kernelscope campaign render --campaign decode-h200 --out decode-h200.html",
    "campaign check": "kernelscope campaign check --campaign decode-h200 --strict --format markdown",
    "campaign export": "kernelscope campaign export --campaign decode-h200 --parquet out/",
    "bundle": "kernelscope bundle kernel-internals bundles/gemm",
    "bundle kernel-internals": "kernelscope bundle kernel-internals bundles/gemm bundles/attn",
    "join": "kernelscope join bundles/gemm bundles/attn --nsys kern_sum.csv --format markdown",
    "diff": "kernelscope diff bundles/base bundles/cand --fail-on 'duration_ns>+5%' --format markdown",
    "ceilings": "kernelscope ceilings list",
    "ceilings list": "kernelscope ceilings list --format markdown",
    "ceilings measure": "kernelscope ceilings measure --out h200.yaml   # then: analyze ... --achievable h200.yaml",
}
GATE_EXIT = "exit codes: 0 passed, 1 a gate failed, 2 an error"


def _epilog(name: str, extra: str = "") -> str:
    return f"example:\n  {EXAMPLES[name]}" + (f"\n\n{extra}" if extra else "")


def _sub(sub: argparse._SubParsersAction[Any], name: str, help_text: str,
         handler: Handler | None, path: str = "", extra: str = "") -> argparse.ArgumentParser:
    """A verb (or a verb's sub-verb, `path` naming its parent) with its example in the help."""
    full = f"{path} {name}".strip()
    p: argparse.ArgumentParser = sub.add_parser(
        name, help=help_text.replace("%", "%%"), description=help_text, epilog=_epilog(full, extra),
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    if handler is not None:
        p.set_defaults(func=handler)
    return p


def _format(p: argparse.ArgumentParser, extra: str = "") -> None:
    p.add_argument("--format", choices=FORMATS,
                   help="table (default: fitted to the terminal, plain text when piped), json, csv, or markdown "
                        "(for PR comments)" + extra)


INPUTS = ".ncu-rep reports, ncu CSV exports (raw or details page) or bundle directories"


def _reading(p: argparse.ArgumentParser, inputs: str = INPUTS, note: str = "", alias: str | None = None) -> None:
    """The inputs and the options that pick kernels and their ceilings, the same on every verb that
    reads reports; `alias`: the verb's earlier spelling of an input (--ncu, --bundle), still taken."""
    p.add_argument("inputs", nargs="*" if alias else "+", type=T.path, help=inputs + note)
    p.set_defaults(inputs_are=inputs)
    if alias:
        p.add_argument(alias, action="append", dest="alias_inputs", metavar="INPUT", type=T.path,
                       help="an input, as a positional one: the earlier spelling, still accepted (repeatable)")
    _judging(p)


def _judging(p: argparse.ArgumentParser) -> None:
    """Which launches are judged, and against which ceilings: every verb that reads reports, diff's
    two sides included."""
    p.add_argument("--kernel", help="exact kernel name, or regex:EXPR (as ncu's --kernel-name)")
    p.add_argument("--hw", help="ceilings key to use instead of the report's device (e.g. h200-sxm; see "
                                "`kernelscope ceilings list`)")
    p.add_argument("--ceilings", type=T.path, help="a ceilings YAML file replacing the packaged datasheet one")
    p.add_argument("--achievable", type=T.path, help="measured ceilings (kernelscope ceilings measure): each "
                   "kernel's %%SoL of them beside the datasheet's (the table's ach comp %% and ach mem %%)")


def _per_launch(p: argparse.ArgumentParser) -> None:
    p.add_argument("--per-launch", action="store_true",
                   help="one row (and point) per launch instead of one per kernel")


def _file_out(raw: str) -> Path:
    """--out of a verb that writes one file: a name ending in / is a directory, not a file name."""
    if raw.endswith(("/", os.sep)):
        raise KernelscopeError(f"--out {raw}: names a directory; --out takes the file to write (e.g. "
                               f"{raw}report.html)")
    return Path(raw)


def _analyze_request(a: argparse.Namespace) -> Any:
    """The inputs and selection of a verb whose parser called _reading: positional inputs, then
    those given by the alias (join's --ncu, bundle kernel-internals' --bundle)."""
    from ..app import AnalyzeRequest

    inputs = [*getattr(a, "inputs", ()), *(getattr(a, "alias_inputs", None) or ())]
    if not inputs and hasattr(a, "inputs_are"):
        raise UsageError(f"no input: name the {a.inputs_are} as arguments")
    return AnalyzeRequest(tuple(Path(p) for p in inputs), kernel=a.kernel, hw=a.hw,
                          ceilings=Path(a.ceilings) if a.ceilings else None,
                          achievable=Path(a.achievable) if a.achievable else None)


def _refuse(verb: str, checks: Sequence[tuple[object, str, str]]) -> None:
    """An option given where it does not apply is an error saying why (exit 2), never ignored:
    `checks` are (given here, the option, why it does not apply)."""
    for given, option, why in checks:
        if given:
            raise UsageError(f"{verb} {option}: {why}")
