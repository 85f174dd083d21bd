"""kernelscope: per-kernel answers from NVIDIA Nsight Compute (ncu) reports — is each kernel
compute-, memory- or latency-bound, how far from the speed of light (%SoL) of its own precision,
what limits it, and which lever to pull next.

Start with:  kernelscope analyze REPORT.ncu-rep      (one row a kernel; --details for the levers)
Outputs:     --format table|json|csv|markdown on analyze, diff, join, campaign check, ceilings list
             (table fits the terminal, plain text when piped; markdown is for PR comments)

Exit codes: 0 done; 1 a gate failed (diff --fail-on, campaign check --strict, k8s inspect blocked,
a capture that kept only some kernels); 2 an error (bad input or options: one line on stderr);
130 interrupted (Ctrl-C), 128+N stopped by signal N (SIGTERM 143, SIGHUP 129), after cleanup.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .. import __version__
from .. import argtypes as T
from ..errors import Interrupted, KernelscopeError, signals_interrupt
from ..report.safe_text import clean
from . import analyze, bundle, campaign, capture, ceilings, diff, join, k8s, kernels, launch, op, report_roofline
from .output import say, silence_stdout

# every verb in the order --help lists it, by the names it registers: each module's add_arguments registers the
# verb's options, and the handler they set beside them
VERBS: tuple[tuple[tuple[str, ...], Callable[[argparse._SubParsersAction[Any]], None]], ...] = (
    (("analyze",), analyze.add_arguments), (("report", "roofline"), report_roofline.add_arguments),
    (("campaign",), campaign.add_arguments), (("bundle",), bundle.add_arguments), (("join",), join.add_arguments),
    (("diff",), diff.add_arguments), (("k8s",), k8s.add_arguments), (("capture",), capture.add_arguments),
    (("op",), op.add_arguments), (("kernels",), kernels.add_arguments), (("launch",), launch.add_arguments),
    (("ceilings",), ceilings.add_arguments))


def parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The command line: the top-level options, then every verb from its own module; only the verb
    `argv` starts with, when it names one (building every verb's options, and importing what some
    of them need for their defaults, costs a run ~30 ms)."""
    p = T.Parser(prog="kernelscope", description=__doc__, allow_abbrev=False,
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"kernelscope {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="VERB")
    named = [add for names, add in VERBS if argv and argv[0] in names]
    for add_arguments in named or [add for _, add in VERBS]:
        add_arguments(sub)
    return p


def split_target(argv: list[str]) -> tuple[list[str], list[str]]:
    """Everything after the first `--` is the program, never parsed as our options."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


# the verbs whose `-- PROGRAM` is a program
RUN_A_PROGRAM = frozenset({capture.cmd_capture, kernels.cmd_kernels, launch.cmd_launch})


def main(argv: Sequence[str] | None = None) -> int:
    raw, target = split_target(list(sys.argv[1:] if argv is None else argv))
    try:
        with signals_interrupt():  # SIGTERM and SIGHUP clean up as Ctrl-C does, in every verb
            args = parser(raw).parse_args(raw)
            if target and args.func not in RUN_A_PROGRAM:  # no program to run: `--` only ends the options
                args = parser(raw).parse_args([*raw, "--", *target])
                target = []
            args.target = target
            return int(args.func(args))
    except KernelscopeError as exc:  # a bad option (argtypes.Parser) too: every error line is printed here
        say(f"error: {exc}")
        return 2
    except OSError as exc:  # a path too long, not permitted, a disk full: one line naming the file, never a traceback
        where = exc.filename if exc.filename is not None else "a file"
        say(f"error: {clean(str(where))[:300]}: {exc.strerror or exc}")
        return 2
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except BrokenPipeError:  # the reader went away (`kernelscope --help | head -1`): not an error
        silence_stdout()
        return 0
    except Interrupted as exc:  # SIGTERM/SIGHUP (or SIGINT during a k8s capture), after cleanup
        say(f"stopped by {exc}")
        return 128 + exc.signum
