"""The options and checks several verbs share, and the verb registration every verb module uses:
each verb's help shows its example, given where the verb is registered, under its description."""

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
GATE_EXIT = "exit codes: 0 passed, 1 a gate failed, 2 an error"


def add_verb(sub: argparse._SubParsersAction[Any], name: str, help_text: str, handler: Handler | None, example: str,
             extra: str = "") -> argparse.ArgumentParser:
    """A verb (or a verb's sub-verb) with its example, and any `extra` lines, in the help."""
    epilog = f"example:\n  {example}" + (f"\n\n{extra}" if extra else "")
    p: argparse.ArgumentParser = sub.add_parser(
        name, help=help_text.replace("%", "%%"), description=help_text, epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    if handler is not None:
        p.set_defaults(func=handler)
    return p


def add_format(p: argparse.ArgumentParser, extra: str = "") -> None:
    p.add_argument("--format", choices=FORMATS,
                   help="table (default: fitted to the terminal, plain text when piped), json, csv, or markdown "
                        "(for PR comments)" + extra)


INPUTS = ".ncu-rep reports, ncu CSV exports (raw or details page) or bundle directories"


def add_reading(p: argparse.ArgumentParser, inputs: str = INPUTS, note: str = "", alias: str | None = None) -> None:
    """The inputs and the options that pick kernels and their ceilings, the same on every verb that
    reads reports; `alias`: the verb's earlier spelling of an input (--ncu, --bundle), still taken."""
    p.add_argument("inputs", nargs="*" if alias else "+", type=T.path, help=inputs + note)
    p.set_defaults(inputs_are=inputs)
    if alias:
        p.add_argument(alias, action="append", dest="alias_inputs", metavar="INPUT", type=T.path,
                       help="an input, as a positional one: the earlier spelling, still accepted (repeatable)")
    add_judging(p)


def add_judging(p: argparse.ArgumentParser) -> None:
    """Which launches are judged, and against which ceilings: every verb that reads reports, diff's
    two sides included."""
    p.add_argument("--kernel", help="exact kernel name, or regex:EXPR (as ncu's --kernel-name)")
    p.add_argument("--hw", help="ceilings key to use instead of the report's device (e.g. h200-sxm; see "
                                "`kernelscope ceilings list`)")
    p.add_argument("--ceilings", type=T.path, help="a ceilings YAML file replacing the packaged datasheet one")
    p.add_argument("--achievable", type=T.path, help="measured ceilings (kernelscope ceilings measure): each "
                   "kernel's %%SoL of them beside the datasheet's (the table's ach comp %% and ach mem %%)")


def add_per_launch(p: argparse.ArgumentParser) -> None:
    p.add_argument("--per-launch", action="store_true",
                   help="one row (and point) per launch instead of one per kernel")


def file_out(raw: str) -> Path:
    """--out of a verb that writes one file: a name ending in / is a directory, not a file name."""
    if raw.endswith(("/", os.sep)):
        raise KernelscopeError(f"--out {raw}: names a directory; --out takes the file to write (e.g. "
                               f"{raw}report.html)")
    return Path(raw)


def analyze_request(a: argparse.Namespace) -> Any:
    """The inputs and selection of a verb whose parser called add_reading: positional inputs, then
    those given by the alias (join's --ncu, bundle kernel-internals' --bundle)."""
    from ..app import AnalyzeRequest

    inputs = [*getattr(a, "inputs", ()), *(getattr(a, "alias_inputs", None) or ())]
    if not inputs and hasattr(a, "inputs_are"):
        raise UsageError(f"no input: name the {a.inputs_are} as arguments")
    return AnalyzeRequest(tuple(Path(p) for p in inputs), kernel=a.kernel, hw=a.hw,
                          ceilings=Path(a.ceilings) if a.ceilings else None,
                          achievable=Path(a.achievable) if a.achievable else None)


def refuse(verb: str, checks: Sequence[tuple[object, str, str]]) -> None:
    """An option given where it does not apply is an error saying why (exit 2), never ignored:
    `checks` are (given here, the option, why it does not apply)."""
    for given, option, why in checks:
        if given:
            raise UsageError(f"{verb} {option}: {why}")
