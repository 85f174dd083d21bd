"""kernelscope capture: scoped ncu captures into a bundle; the capture plumbing (the window of
launches, the metric set, the request and what a capture prints) op and k8s capture share."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import argtypes as T
from .args import add_verb
from .output import emit, say

if TYPE_CHECKING:  # imported where used: `kernelscope --help` starts without them
    from ..app import CaptureRequest, CaptureResult
    from ..ncu.plan import CapturePlan


def add_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """capture: the window, the attach, ncu's switches, then the shared capture options."""
    c = add_verb(sub, "capture", "scoped ncu capture(s) into a bundle: ... -- PROGRAM ARGS, or --attach", cmd_capture,
                 "kernelscope capture --kernel regex:nvjet --launch-skip 3 --out bundles/gemm -- python3 step.py")
    add_window(c)
    c.add_argument("--attach", help="HOST:PORT of a process started with `kernelscope launch`")
    c.add_argument("--one-run", action="store_true",
                   help="several --kernel in one run of the program (one filter, --launch-count for each): for a "
                        "program that is slow to start, such as vLLM; a kernel whose launches went to the others is "
                        "reported as not captured")
    c.add_argument("--allow-unscoped", action="store_true", help="capture every kernel (slow: each is replayed)")
    c.add_argument("--force", action="store_true", help="allow a --launch-count above the local limit")
    c.add_argument("--clock-control", default="none", choices=("none", "base"),
                   help="none (default): the clocks serving runs at; base: ncu's locked base clocks")
    c.add_argument("--target-processes", default="all", choices=("all", "application-only"),
                   help="all (default): follow child processes too, as ncu's --target-processes")
    c.add_argument("--replay-mode", default="kernel", choices=("kernel", "application"),
                   help="kernel (default): replay each kernel; application: rerun the program per pass")
    c.add_argument("--graph-profiling", default="node", choices=("node", "graph"),
                   help="node (default): CUDA graph kernels one by one; graph: a whole graph as one workload")
    c.add_argument("--profile-from-start", default="on", choices=("on", "off"),
                   help="off: profile only between cudaProfilerStart/Stop (default on)")
    add_local_capture_options(c)


def add_capture_options(p: argparse.ArgumentParser) -> None:
    from ..ncu.metric_sets import ADDONS, SETS

    p.add_argument("--set", default="roofline", choices=SETS,
                   help="roofline (ours: 12 passes on an H200), basic (10) or full (38)")
    p.add_argument("--add", action="append", choices=tuple(ADDONS),
                   help="add-on to --set roofline: " + "; ".join(f"{n}: {x.what}" for n, x in ADDONS.items()))
    p.add_argument("--context", action="append", metavar="KEY=VALUE",
                   help="context recorded in the bundle, e.g. model=llama-3-8b (repeatable)")
    p.add_argument("--out", required=True, type=T.path, help="the bundle directory to create")


def multiplex_option(p: argparse.ArgumentParser, runs: str) -> None:
    """--multiplex, for a verb whose ncu runs are `runs`."""
    p.add_argument("--multiplex", action="store_true",
                   help="fewer passes a launch: the roofline list in counter groups (31 on an H200, 17 of one pass), "
                        f"each collected by its own ncu run ({runs}) on the next launches of the kernels, merged on "
                        "read; against one held process, 14 sessions of 3-5 passes (it takes no session of one pass "
                        "after which to take another); needs --kernel")


def add_local_capture_options(p: argparse.ArgumentParser) -> None:
    add_capture_options(p)
    multiplex_option(p, "a run of the program, or with --attach a session")
    p.add_argument("--ncu", type=T.path, help="ncu binary (default: ncu on PATH, then /usr/local/cuda/bin/ncu)")
    p.add_argument("--dry-run", action="store_true", help="print the exact ncu argv and run nothing")
    p.add_argument("--timeout", type=T.seconds, default=600.0,
                   help="seconds the capture may take; with --attach, counting the wait for a held process to "
                        "listen (vLLM's EngineCore 20-60 s after the server starts; default 600)")


def add_window(p: argparse.ArgumentParser) -> None:
    from ..ncu.plan import POLICIES

    p.add_argument("--kernel", action="append", help="kernel name or regex:EXPR; repeat for several")
    p.add_argument("--kernel-set", help="a named list of hot kernels (capture/kernel_sets.yaml)")
    p.add_argument("--kernel-base", default="demangled", choices=("demangled", "function", "mangled"),
                   help="the name ncu matches --kernel against (its --kernel-name-base): demangled (default; a "
                        "CUTLASS wrapper's function name is device_kernel whatever it wraps), function, mangled")
    p.add_argument("--launch-skip", type=T.count, default=0, help="matching launches to skip first (warm-up)")
    p.add_argument("--launch-count", type=T.positive, default=1,
                   help=f"matching launches to profile (above {POLICIES['local'].max_launch_count} needs --force "
                        "locally; live pods allow 3 on one replica, 5 on several)")


def _kernels(given: dict[str, Any]) -> tuple[str, ...]:
    from ..capture.kernel_sets import kernels

    named = given.get("kernel_set")
    return tuple(given.get("kernel") or ()) + (kernels(named) if named else ())


# CapturePlan's fields a verb may have no option for (op has no launch window, only capture has ncu's
# switches): a verb without one leaves CapturePlan's default. field -> option
AS_GIVEN = {"launch_skip": "launch_skip", "launch_count": "launch_count", "name_base": "kernel_base",
            "multiplex": "multiplex", "clock_control": "clock_control", "target_processes": "target_processes",
            "replay_mode": "replay_mode", "graph_profiling": "graph_profiling"}


def plan_from(a: argparse.Namespace, target: Sequence[str] = ()) -> CapturePlan:
    from ..ncu.plan import CapturePlan, parse_attach

    given = vars(a)
    chosen: dict[str, Any] = {name: given[option] for name, option in AS_GIVEN.items() if option in given}
    if "profile_from_start" in given:
        chosen["profile_from_start"] = a.profile_from_start == "on"
        chosen["window"] = "start" if a.profile_from_start == "on" else "profiler-range"
    if given.get("attach"):
        chosen["attach"] = parse_attach(a.attach)
    return CapturePlan(kernels=_kernels(given), metric_set=a.set, addons=tuple(a.add or ()), target=tuple(target),
                       **chosen)


def capture_request(a: argparse.Namespace, plan: CapturePlan) -> CaptureRequest:
    from ..app import CaptureRequest, parse_context

    given = vars(a)
    return CaptureRequest(plan=plan, out=Path(a.out), command=("kernelscope", *sys.argv[1:]), ncu=a.ncu,
                          dry_run=a.dry_run, timeout=a.timeout, context=parse_context(a.context or []),
                          **{name: given[name] for name in ("allow_unscoped", "force") if name in given})


def print_capture(result: CaptureResult) -> int:
    for f in result.findings:
        say(f"{f.level}: {f.message}")
    if result.analytic is not None:
        an = result.analytic
        say(f"analytic work of {an.describe}: {an.flops or 'unknown'} FLOP, {an.bytes or 'unknown'} bytes per call")
    if result.dry_run is not None:
        emit("".join(line + "\n" for line in result.dry_run))
        return 0
    assert result.manifest is not None
    for c in result.manifest.failed:
        say(f"not captured: {', '.join(c.kernels) or c.kernel_filter}: {c.error}")
    ncu = result.manifest.ncu.version if result.manifest.ncu else "?"
    say(f"bundle written to {result.out} (ncu {ncu}); next: kernelscope analyze {result.out}")
    return 1 if result.manifest.failed else 0


def cmd_capture(a: argparse.Namespace) -> int:
    from .. import app
    from ..ncu.plan import one_session

    plan = plan_from(a, a.target)
    if a.one_run:
        plan = one_session(plan, "--one-run")
    return print_capture(app.capture(capture_request(a, plan), say))
