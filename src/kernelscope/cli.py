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
from .capture.plan import SETS, CapturePlan, parse_attach
from .errors import KernelscopeError
from .report.terminal import render
from .report.writers import to_csv, to_json, write_atomic


def _analyze(args: argparse.Namespace) -> int:
    from .analysis.pipeline import bundles

    items, table = analyze(args.inputs, kernel=args.kernel, hw=args.hw, ceilings=args.ceilings,
                           achievable=args.achievable)
    if not items:
        raise KernelscopeError(f"no kernel launch matches --kernel {args.kernel!r} in {', '.join(args.inputs)}")
    context = {
        "tool": f"kernelscope {__version__}",
        "analyzed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "inputs": [str(p) for p in args.inputs],
        "kernel_filter": args.kernel,
        "ceilings_file": table.origin,
        "hw_override": args.hw,
        "achievable_file": args.achievable,
        "bundles": {d: {k: m.get(k) for k in ("command", "ncu", "gpu_name", "driver_version", "driver_cuda_version",
                                               "metric_set", "addons", "scoping", "env_keys_set", "started_at",
                                               "analytic")}
                    for d, m in bundles(args.inputs).items()},
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


def _capture(args: argparse.Namespace) -> int:
    from .capture import commands

    plan = CapturePlan(
        kernels=tuple(args.kernel or ()), metric_set=args.set, addons=tuple(args.add or ()),
        launch_skip=args.launch_skip, launch_count=args.launch_count, target=tuple(args.target),
        attach=parse_attach(args.attach) if args.attach else None, clock_control=args.clock_control,
        target_processes=args.target_processes, replay_mode=args.replay_mode,
        graph_profiling=args.graph_profiling, profile_from_start=args.profile_from_start == "on",
    )
    plan, findings = commands.prepare(plan, args.allow_unscoped, args.force)
    return commands.run_plan(plan, Path(args.out), args.ncu, ["kernelscope", *sys.argv[1:]], args.dry_run, findings)


def _op(args: argparse.Namespace) -> int:
    from .capture import commands

    harness_args = [a for a in args.harness_argv]
    analytic = commands.op_analytic_file()
    plan = commands.op_plan(args.op, harness_args, args.kernel, args.set, tuple(args.add or ()), args.warmup,
                            analytic)
    plan, findings = commands.prepare(plan, allow_unscoped=False, force=False)
    return commands.run_plan(plan, Path(args.out), args.ncu, ["kernelscope", *sys.argv[1:]], args.dry_run, findings,
                             analytic)


def _launch(args: argparse.Namespace) -> int:
    from .capture import commands

    return commands.launch(list(args.target), args.port, args.ncu)


def _measure(args: argparse.Namespace) -> int:
    from .capture.measure import measure

    text = measure(args.hw)
    write_atomic({Path(args.out).name: text}, Path(args.out).parent)
    sys.stdout.write(text)
    return 0


def _capture_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", default="roofline", choices=SETS, help="roofline (ours, 8 passes), basic, full")
    p.add_argument("--add", action="append", choices=("stalls", "divergence"), help="add-on to --set roofline")
    p.add_argument("--out", required=True, help="bundle directory to create")
    p.add_argument("--ncu", help="ncu binary (default: ncu on PATH, then /usr/local/cuda/bin/ncu)")
    p.add_argument("--dry-run", action="store_true", help="print the exact ncu argv and run nothing")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kernelscope", description=__doc__)
    p.add_argument("--version", action="version", version=f"kernelscope {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("analyze", help="per-kernel bound, %%SoL and next lever from ncu reports")
    a.add_argument("inputs", nargs="+", help=".ncu-rep, ncu CSV export (raw or details page), or a bundle dir")
    a.add_argument("--kernel", help="exact kernel name, or regex:EXPR (as ncu's --kernel-name)")
    a.add_argument("--hw", help="ceilings key to use instead of the report's device (e.g. h200-sxm)")
    a.add_argument("--ceilings", help="a ceilings YAML file replacing the packaged datasheet one")
    a.add_argument("--achievable",
                   help="measured ceilings (kernelscope ceilings measure) shown beside the datasheet %%SoL")
    a.add_argument("--format", choices=("table", "json", "csv"), help="what to print (default: table)")
    a.add_argument("--out", help="directory to write kernels.json and kernels.csv into")
    a.set_defaults(func=_analyze)

    c = sub.add_parser("capture", help="scoped ncu capture(s) into a bundle: ... -- PROGRAM ARGS, or --attach")
    c.add_argument("--kernel", action="append", help="kernel name or regex:EXPR; repeat for a sequence of captures")
    c.add_argument("--launch-skip", type=int, default=0)
    c.add_argument("--launch-count", type=int, default=1)
    c.add_argument("--attach", help="HOST:PORT of a process started with `kernelscope launch`")
    c.add_argument("--allow-unscoped", action="store_true", help="capture every kernel (slow: each is replayed)")
    c.add_argument("--force", action="store_true", help=f"allow --launch-count above {5}")
    c.add_argument("--clock-control", default="none", choices=("none", "base"),
                   help="none (default): measure at the clocks serving runs at; base: ncu's locked clocks")
    c.add_argument("--target-processes", default="all", choices=("all", "application-only"))
    c.add_argument("--replay-mode", default="kernel", choices=("kernel", "application"))
    c.add_argument("--graph-profiling", default="node", choices=("node", "graph"))
    c.add_argument("--profile-from-start", default="on", choices=("on", "off"))
    _capture_options(c)
    c.set_defaults(func=_capture)

    o = sub.add_parser("op", help="single-op harness + capture: kernelscope op gemm --m 256 --dtype fp8 --out DIR")
    o.add_argument("op", choices=("gemm", "attention", "rmsnorm", "softmax", "callable"))
    o.add_argument("--kernel", help="override the op's kernel filter")
    o.add_argument("--warmup", type=int, default=3, help="warm-up calls (skipped by the capture)")
    _capture_options(o)
    o.set_defaults(func=_op)

    la = sub.add_parser("launch", help="start PROGRAM (after --) so that ncu can attach to it later")
    la.add_argument("--port", type=int, help="base port (ncu default 49152)")
    la.add_argument("--ncu")
    la.set_defaults(func=_launch)

    ce = sub.add_parser("ceilings", help="ceilings files")
    ce_sub = ce.add_subparsers(dest="ceilings_command", required=True)
    m = ce_sub.add_parser("measure", help="measure achievable copy bandwidth and matmul peaks on this GPU")
    m.add_argument("--out", default="measured-ceilings.yaml")
    m.add_argument("--hw", help="key for the measured entry (default: from the GPU name)")
    m.set_defaults(func=_measure)
    return p


HARNESS_OPTIONS = ("--dtype", "--m", "--n", "--k", "--batch", "--heads", "--seq", "--head-dim", "--rows",
                   "--cols", "--callable", "--arg", "--flops", "--bytes")


def split_target(argv: list[str]) -> tuple[list[str], list[str]]:
    """Everything after the first `--` is the program, never parsed as our options."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def split_harness(argv: list[str]) -> tuple[list[str], list[str]]:
    """`op` passes shape options through to the harness untouched."""
    ours, harness, i = [], [], 0
    while i < len(argv):
        arg = argv[i]
        if arg.split("=", 1)[0] in HARNESS_OPTIONS:
            takes_value = "=" not in arg
            harness += argv[i:i + 1 + takes_value]
            i += 1 + takes_value
        elif arg == "--causal":
            harness.append(arg)
            i += 1
        else:
            ours.append(arg)
            i += 1
    return ours, harness


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    raw, target = split_target(raw)
    harness: list[str] = []
    if raw[:1] == ["op"]:
        raw, harness = split_harness(raw)
    args = parser().parse_args(raw)
    args.target, args.harness_argv = target, harness
    try:
        return int(args.func(args))
    except KernelscopeError as exc:
        print(f"kernelscope: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
