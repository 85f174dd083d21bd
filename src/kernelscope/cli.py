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
from .capture.plan import MAX_LAUNCH_COUNT, SETS, CapturePlan, parse_attach
from .ceilings import CeilingsFile
from .errors import KernelscopeError
from .model import Assessment
from .report.terminal import render
from .report.writers import to_csv, to_json, write_atomic


def _analyzed(args: argparse.Namespace, achievable: str | None = None) -> tuple[list[Assessment], CeilingsFile]:
    """The inputs' assessments; a --kernel that matches nothing is an error, not an empty output."""
    items, table = analyze(args.inputs, kernel=args.kernel, hw=args.hw, ceilings=args.ceilings,
                           achievable=achievable)
    if not items:
        raise KernelscopeError(f"no kernel launch matches --kernel {args.kernel!r} in {', '.join(args.inputs)}")
    return items, table


def _analyze(args: argparse.Namespace) -> int:
    from .analysis.pipeline import bundles

    items, table = _analyzed(args, args.achievable)
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


def _report(args: argparse.Namespace) -> int:
    from .analysis.pipeline import bundles
    from .report import roofline_data
    from .report.context import header
    from .report.html import render_html

    items, table = _analyzed(args)
    campaign = _campaign_config(args.campaign_config) if args.campaign_config else None
    ctx = header(bundles(args.inputs), campaign, {a.record.device for a in items if a.record.device},
                 {"ceilings": f"{table.origin} ({items[0].hw_key})", "tool": f"kernelscope {__version__}",
                  "inputs": ", ".join(args.inputs)})
    title = args.title or f"kernelscope report: {len(items)} kernel launch(es)"
    out = Path(args.out)
    text = render_html(items, roofline_data.build(items, table, args.hw), ctx, title)
    write_atomic({out.name: text}, out.parent)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def _campaign_config(path: str) -> dict:
    from .campaign.store import read_config

    return read_config(Path(path))


def _roofline(args: argparse.Namespace) -> int:
    from .report import roofline_data, roofline_plot

    items, table = _analyzed(args)
    out = roofline_plot.write(roofline_data.build(items, table, args.hw),
                              args.title or f"roofline: {', '.join(args.inputs)}"[:120], Path(args.out))
    print(f"wrote {out}", file=sys.stderr)
    return 0


def _campaign(args: argparse.Namespace) -> int:
    from .campaign import check, export, store
    from .campaign.cells import SOURCES, import_ncu

    root = Path(args.root)
    if args.campaign_command == "import-ncu":
        inputs = args.bundle or []
        if not inputs:
            raise KernelscopeError("give --bundle DIR, a .ncu-rep or a CSV export (repeatable)")
        path = import_ncu(root, args.campaign, args.cell_id, inputs, hw=args.hw)
        print(f"wrote {path}", file=sys.stderr)
        return 0
    config = store.load_config(root, args.campaign)
    cells = store.cells(root, args.campaign)
    if args.campaign_command == "check":
        failures, notes = check.check(config, cells)
        for line in failures:
            print(f"FAIL: {line}")
        for line in notes:
            print(f"note: {line}")
        print(f"{len(cells)} cell(s), {len(failures)} failure(s)")
        return 1 if failures and args.strict else 0
    if args.campaign_command == "export":
        print(f"wrote {export.export_parquet(root, args.campaign, Path(args.parquet))}", file=sys.stderr)
        return 0
    # render: the cells' own copies of their sources, with the campaign's context
    sources = [str(p) for cid in cells for p in sorted((store.cell_dir(root, args.campaign, cid) / SOURCES).iterdir())]
    out = Path(args.out or store.campaign_dir(root, args.campaign) / "report.html")
    return _report(argparse.Namespace(inputs=sources, kernel=None, hw=None, ceilings=None, out=str(out),
                                      campaign_config=str(store.campaign_dir(root, args.campaign) / "config.yaml"),
                                      title=f"campaign {args.campaign}: {len(cells)} cell(s)"))


def _kernel_internals(args: argparse.Namespace) -> int:
    from .report.internals import write

    items, _ = analyze([args.bundle], hw=args.hw)
    print(f"wrote {write(Path(args.bundle), items, 'ncu via kernelscope', f'kernelscope {__version__}')}",
          file=sys.stderr)
    return 0


def _join(args: argparse.Namespace) -> int:
    from .report import join

    items, _ = analyze([args.ncu], hw=args.hw)
    nsys = join.read_nsys(Path(args.nsys)) if args.nsys else {}
    shares = join.read_shares(Path(args.zymtrace)) if args.zymtrace else {}
    rows = join.join(items, nsys, shares)
    if args.format == "csv":
        sys.stdout.write(join.to_csv(rows))
    elif args.format == "markdown":
        sys.stdout.write(join.to_markdown(rows))
    else:
        from rich.table import Table

        t = Table(*join.HEADER)
        for r in rows:
            t.add_row(*join.cells(r))
        Console().print(t)
    return 0


def _diff(args: argparse.Namespace) -> int:
    from .analysis.pipeline import bundles
    from .report import diff

    base, _ = analyze([args.baseline], hw=args.hw)
    cand, _ = analyze([args.candidate], hw=args.hw)
    ctx_a = diff.bundle_context(bundles([args.baseline]).get(str(Path(args.baseline))), base)
    ctx_b = diff.bundle_context(bundles([args.candidate]).get(str(Path(args.candidate))), cand)
    problems = diff.mismatches(ctx_a, ctx_b)
    if problems and not args.allow_mismatch:
        raise KernelscopeError("contexts differ, refusing to compare (" + "; ".join(problems)
                               + "); pass --allow-mismatch to compare anyway")
    mark = ("MISMATCH " + "; ".join(problems)) if problems else ""
    print("kernel\tfigure\tbaseline\tcandidate\tchange %" + ("\tcontext" if mark else ""))
    for r in diff.diff(base, cand):
        def f(v: float | None) -> str:
            return "—" if v is None else f"{v:.4g}"
        print(f"{r.kernel}\t{r.figure}\t{f(r.baseline)}\t{f(r.candidate)}\t{f(r.change_pct)}"
              + (f"\t{mark}" if mark else ""))
    return 0


def _kernels(args: argparse.Namespace) -> tuple[str, ...]:
    from .capture.kernel_sets import kernels

    return tuple(args.kernel or ()) + (kernels(args.kernel_set) if getattr(args, "kernel_set", None) else ())


def _k8s(args: argparse.Namespace) -> int:
    from .k8s import commands

    if args.k8s_command == "inspect":
        return commands.run_inspect(args.namespace, args.deployment, args.tools_image, args.container)
    if args.k8s_command == "cleanup":
        return commands.run_cleanup(args.namespace, args.release, args.timeout)
    plan = CapturePlan(kernels=_kernels(args), metric_set=args.set, addons=tuple(args.add or ()),
                       launch_skip=args.launch_skip, launch_count=args.launch_count,
                       attach=parse_attach("127.0.0.1:49152"))
    warmup = (args.warmup_url, args.warmup_body, args.warmup_requests) if args.warmup_url else None
    return commands.run_capture(args.namespace, args.deployment, plan, Path(args.out), args.tools_image,
                                args.pull_secret, args.ncu_home, args.release, args.direct, args.dry_run,
                                args.timeout, warmup, ["kernelscope", *sys.argv[1:]])


def _capture(args: argparse.Namespace) -> int:
    from .capture import commands

    plan = CapturePlan(
        kernels=_kernels(args), metric_set=args.set, addons=tuple(args.add or ()),
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
    p.add_argument("--add", action="append", choices=("stalls", "sm-throughput"), help="add-on to --set roofline")
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

    def inputs_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("inputs", nargs="+", help=".ncu-rep, ncu CSV export or bundle dir")
        p.add_argument("--kernel", help="exact kernel name, or regex:EXPR")
        p.add_argument("--hw", help="ceilings key to use instead of the report's device")
        p.add_argument("--ceilings", help="a ceilings YAML file replacing the packaged one")
        p.add_argument("--title")

    r = sub.add_parser("report", help="self-contained HTML report (opens offline)")
    inputs_options(r)
    r.add_argument("--out", required=True, help="report.html")
    r.add_argument("--campaign-config", help="a campaign config.yaml whose context fills the header")
    r.set_defaults(func=_report)

    ro = sub.add_parser("roofline", help="static roofline plot (.png or .svg)")
    inputs_options(ro)
    ro.add_argument("--out", required=True, help="roofline.png or roofline.svg")
    ro.set_defaults(func=_roofline)

    cp = sub.add_parser("campaign", help="campaigns of cells stored as plain files")
    cp_sub = cp.add_subparsers(dest="campaign_command", required=True)
    for name, text in (("import-ncu", "import a bundle/.ncu-rep/CSV as a cell (idempotent)"),
                       ("render", "the campaign's HTML report"), ("check", "gates; --strict exits 1 on failure"),
                       ("export", "one kernels table as Parquet")):
        sp = cp_sub.add_parser(name, help=text)
        sp.add_argument("--campaign", required=True)
        sp.add_argument("--root", default="campaigns", help="directory holding campaigns (default ./campaigns)")
        if name == "import-ncu":
            sp.add_argument("--cell-id", required=True)
            sp.add_argument("--bundle", action="append", help="bundle dir, .ncu-rep or CSV export (repeatable)")
            sp.add_argument("--hw")
        if name == "render":
            sp.add_argument("--out", help="default: <root>/<campaign>/report.html")
        if name == "check":
            sp.add_argument("--strict", action="store_true")
        if name == "export":
            sp.add_argument("--parquet", required=True, help="output directory")
        sp.set_defaults(func=_campaign)

    bu = sub.add_parser("bundle", help="bundle tools")
    bu_sub = bu.add_subparsers(dest="bundle_command", required=True)
    ki = bu_sub.add_parser("kernel-internals", help="write kernel_internals into inference_perfbench_v1.json")
    ki.add_argument("--bundle", required=True)
    ki.add_argument("--hw")
    ki.set_defaults(func=_kernel_internals)

    jo = sub.add_parser("join", help="ncu figures + nsys kernel totals + profiler sample shares, by name")
    jo.add_argument("--ncu", required=True, help="bundle or report")
    jo.add_argument("--nsys", help="nsys stats --report cuda_gpu_kern_sum --format csv output")
    jo.add_argument("--zymtrace", help="CSV of sample shares: name, share %%")
    jo.add_argument("--hw")
    jo.add_argument("--format", choices=("table", "csv", "markdown"), default="table")
    jo.set_defaults(func=_join)

    di = sub.add_parser("diff", help="compare two bundles kernel by kernel (same context only)")
    di.add_argument("baseline")
    di.add_argument("candidate")
    di.add_argument("--allow-mismatch", action="store_true")
    di.add_argument("--hw")
    di.set_defaults(func=_diff)

    k8 = sub.add_parser("k8s", help="capture from a Kubernetes deployment through a sister release")
    k8_sub = k8.add_subparsers(dest="k8s_command", required=True)
    for name, text in (("inspect", "what capture path is possible, and why"),
                       ("capture", "plan, then run: sister -> sidecar -> capture -> copy out -> cleanup"),
                       ("cleanup", "uninstall a sister release left behind")):
        kp = k8_sub.add_parser(name, help=text)
        kp.add_argument("-n", "--namespace", default="default")
        kp.add_argument("--timeout", type=float, default=600.0, help="seconds for every wait (default 600)")
        if name == "cleanup":
            kp.add_argument("--release", required=True)
        else:
            kp.add_argument("deployment", help="deploy/NAME")
            kp.add_argument("--tools-image", default="kernelscope-tools:ncu-2025.3.1",
                            help="image holding ncu (e.g. an NGC PyTorch image for a newer ncu)")
        if name == "inspect":
            kp.add_argument("--container")
        if name == "capture":
            kp.add_argument("--kernel", action="append")
            kp.add_argument("--kernel-set")
            kp.add_argument("--set", default="roofline", choices=SETS)
            kp.add_argument("--add", action="append", choices=("stalls", "sm-throughput"))
            kp.add_argument("--launch-skip", type=int, default=0)
            kp.add_argument("--launch-count", type=int, default=1)
            kp.add_argument("--out", required=True)
            kp.add_argument("--pull-secret", help="imagePullSecret name for the tools image's registry")
            kp.add_argument("--ncu-home", help="where ncu lives inside the tools image")
            kp.add_argument("--release", help="sister release name (default NAME-ncu)")
            kp.add_argument("--direct", action="store_true", help="attach to the production pod (if attachable)")
            kp.add_argument("--dry-run", action="store_true", help="list every kubectl/helm step, change nothing")
            kp.add_argument("--warmup-url", help="POST warm-up requests here from the sidecar")
            kp.add_argument("--warmup-body", default='{"prompt": "hello", "max_tokens": 16}')
            kp.add_argument("--warmup-requests", type=int, default=3)
        kp.set_defaults(func=_k8s)

    c = sub.add_parser("capture", help="scoped ncu capture(s) into a bundle: ... -- PROGRAM ARGS, or --attach")
    c.add_argument("--kernel", action="append", help="kernel name or regex:EXPR; repeat for a sequence of captures")
    c.add_argument("--kernel-set", help="a named list of hot kernels (see capture/kernel_sets.yaml)")
    c.add_argument("--launch-skip", type=int, default=0)
    c.add_argument("--launch-count", type=int, default=1)
    c.add_argument("--attach", help="HOST:PORT of a process started with `kernelscope launch`")
    c.add_argument("--allow-unscoped", action="store_true", help="capture every kernel (slow: each is replayed)")
    c.add_argument("--force", action="store_true", help=f"allow --launch-count above {MAX_LAUNCH_COUNT}")
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
