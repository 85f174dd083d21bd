"""kernelscope: per-kernel answers from NVIDIA Nsight Compute reports: compute-, memory- or
latency-bound, how far from the speed of light, what limits it, and the next lever.

Exit codes: 0 done; 1 a gate failed (campaign check --strict, a capture that kept only some
kernels); 2 an error (bad input or options; one line on stderr); 130 interrupted (after cleanup).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import __version__
from . import argtypes as T
from .errors import Interrupted, KernelscopeError

Handler = Callable[[argparse.Namespace], int]
EXAMPLES = {
    "analyze": "kernelscope analyze tests/fixtures/gemm_bf16.ncu-rep --format json",
    "report": "kernelscope report bundles/gemm --out report.html",
    "roofline": "kernelscope roofline bundles/gemm bundles/attn --out roofline.png",
    "capture": "kernelscope capture --kernel regex:nvjet --launch-skip 3 --out bundles/gemm -- python3 step.py",
    "op": "kernelscope op gemm --m 256 --n 4096 --k 8192 --dtype fp8 --out bundles/fp8",
    "launch": "kernelscope launch -- python3 -m my_server",
    "k8s": "kernelscope k8s capture -n serving deploy/llama --kernel regex:nvjet --out bundles/live",
    "campaign": "kernelscope campaign import-ncu --campaign decode-h200 --cell-id c1 --bundle bundles/gemm",
    "bundle": "kernelscope bundle kernel-internals --bundle bundles/gemm",
    "join": "kernelscope join --ncu bundles/gemm --nsys kern_sum.csv --format markdown",
    "diff": "kernelscope diff bundles/base bundles/cand",
    "ceilings": "kernelscope ceilings measure --out h200.yaml",
}


def say(line: str) -> None:
    print(f"kernelscope: {line}", file=sys.stderr, flush=True)


def _analyze_request(a: argparse.Namespace) -> object:
    from .app import AnalyzeRequest

    return AnalyzeRequest(tuple(Path(p) for p in a.inputs), kernel=a.kernel, hw=a.hw,
                          ceilings=Path(a.ceilings) if a.ceilings else None,
                          achievable=Path(a.achievable) if getattr(a, "achievable", None) else None)


def _print_analysis(an: object, fmt: str | None) -> None:
    from rich.console import Console

    from .app import Analysis
    from .report.terminal import render
    from .report.writers import to_csv, to_json

    assert isinstance(an, Analysis)
    if fmt == "json":
        sys.stdout.write(to_json(an.items, an.context()))
    elif fmt == "csv":
        sys.stdout.write(to_csv(an.items))
    else:
        render(an.items, Console(), f"{len(an.items)} launch(es), ceilings {an.ceilings.origin}")


def cmd_analyze(a: argparse.Namespace) -> int:
    from . import app

    an = app.analyze(_analyze_request(a))  # type: ignore[arg-type]
    if a.out:
        say("wrote " + ", ".join(str(p) for p in app.write_results(an, Path(a.out))))
    if a.format or not a.out:
        _print_analysis(an, a.format)
    return 0


def cmd_report(a: argparse.Namespace) -> int:
    from . import app

    out = app.report(_analyze_request(a), Path(a.out), a.title,  # type: ignore[arg-type]
                     Path(a.campaign_config) if a.campaign_config else None)
    say(f"wrote {out}")
    return 0


def cmd_roofline(a: argparse.Namespace) -> int:
    from . import app

    say(f"wrote {app.roofline(_analyze_request(a), Path(a.out), a.title)}")  # type: ignore[arg-type]
    return 0


def cmd_campaign(a: argparse.Namespace) -> int:
    from . import app

    root = Path(a.root)
    if a.campaign_command == "import-ncu":
        say(f"wrote {app.campaign_import(root, a.campaign, a.cell_id, [Path(p) for p in a.bundle or []], a.hw)}")
    elif a.campaign_command == "check":
        n, failures, notes = app.campaign_check(root, a.campaign)
        for line in failures:
            print(f"FAIL: {line}")
        for line in notes:
            print(f"note: {line}")
        print(f"{n} cell(s), {len(failures)} failure(s)")
        return 1 if failures and a.strict else 0
    elif a.campaign_command == "export":
        say(f"wrote {app.campaign_export(root, a.campaign, Path(a.parquet))}")
    else:
        say(f"wrote {app.campaign_render(root, a.campaign, Path(a.out) if a.out else None)}")
    return 0


def cmd_kernel_internals(a: argparse.Namespace) -> int:
    from . import app

    say(f"wrote {app.kernel_internals(Path(a.bundle), a.hw)}")
    return 0


def cmd_join(a: argparse.Namespace) -> int:
    from . import app
    from .report import join

    rows = app.join(Path(a.ncu), Path(a.nsys) if a.nsys else None, Path(a.zymtrace) if a.zymtrace else None, a.hw)
    if a.format == "csv":
        sys.stdout.write(join.to_csv(rows))
    elif a.format == "markdown":
        sys.stdout.write(join.to_markdown(rows))
    else:
        from rich.console import Console
        from rich.table import Table

        t = Table(*join.HEADER)
        for r in rows:
            t.add_row(*join.cells(r))
        Console().print(t)
    return 0


def cmd_diff(a: argparse.Namespace) -> int:
    from . import app

    result = app.diff(Path(a.baseline), Path(a.candidate), a.hw, a.allow_mismatch)
    mark = ("MISMATCH " + "; ".join(result.mismatches)) if result.mismatches else ""
    print("kernel\tfigure\tbaseline\tcandidate\tchange %" + ("\tcontext" if mark else ""))

    def f(v: float | None) -> str:
        return "—" if v is None else f"{v:.4g}"

    for r in result.rows:
        print(f"{r.kernel}\t{r.figure}\t{f(r.baseline)}\t{f(r.candidate)}\t{f(r.change_pct)}"
              + (f"\t{mark}" if mark else ""))
    return 0


def _kernels(a: argparse.Namespace) -> tuple[str, ...]:
    from .capture.kernel_sets import kernels

    return tuple(a.kernel or ()) + (kernels(a.kernel_set) if getattr(a, "kernel_set", None) else ())


def _plan(a: argparse.Namespace, target: Sequence[str] = ()) -> object:
    from .ncu.plan import CapturePlan, parse_attach

    return CapturePlan(
        kernels=_kernels(a), metric_set=a.set, addons=tuple(a.add or ()), launch_skip=a.launch_skip,
        launch_count=a.launch_count, target=tuple(target),
        attach=parse_attach(a.attach) if getattr(a, "attach", None) else None,
        clock_control=getattr(a, "clock_control", "none"), target_processes=getattr(a, "target_processes", "all"),
        replay_mode=getattr(a, "replay_mode", "kernel"), graph_profiling=getattr(a, "graph_profiling", "node"),
        profile_from_start=getattr(a, "profile_from_start", "on") == "on")


def _capture_request(a: argparse.Namespace, plan: object) -> object:
    from .app import CaptureRequest, parse_context

    return CaptureRequest(plan=plan, out=Path(a.out), command=("kernelscope", *sys.argv[1:]), ncu=a.ncu,  # type: ignore[arg-type]
                          dry_run=a.dry_run, allow_unscoped=getattr(a, "allow_unscoped", False),
                          force=getattr(a, "force", False), context=parse_context(a.context or []))


def _print_capture(result: object) -> int:
    from .app import CaptureResult

    assert isinstance(result, CaptureResult)
    for f in result.findings:
        say(f"{f.level}: {f.message}")
    if result.analytic is not None:
        an = result.analytic
        say(f"analytic work of {an.describe}: {an.flops or 'unknown'} FLOP, {an.bytes or 'unknown'} bytes per call")
    if result.dry_run is not None:
        for line in result.dry_run:
            print(line)
        return 0
    assert result.manifest is not None
    for c in result.manifest.failed:
        say(f"not captured: {', '.join(c.kernels) or c.kernel_filter}: {c.error}")
    ncu = result.manifest.ncu.version if result.manifest.ncu else "?"
    say(f"bundle written to {result.out} (ncu {ncu}); next: kernelscope analyze {result.out}")
    return 1 if result.manifest.failed else 0


def cmd_capture(a: argparse.Namespace) -> int:
    from . import app

    return _print_capture(app.capture(_capture_request(a, _plan(a, a.target)), say))  # type: ignore[arg-type]


def cmd_op(a: argparse.Namespace) -> int:
    from . import app

    a.kernel = None
    a.launch_skip, a.launch_count = 0, 1
    req = app.OpRequest(harness=a, kernel=a.op_kernel, capture=_capture_request(a, _plan(a)))  # type: ignore[arg-type]
    return _print_capture(app.op(req, say))


def cmd_launch(a: argparse.Namespace) -> int:
    import shlex

    from . import app

    argv = app.launch(a.target, a.port, a.ncu, dry_run=a.dry_run)
    print(shlex.join(argv))
    return 0


def cmd_measure(a: argparse.Namespace) -> int:
    from . import app

    sys.stdout.write(app.ceilings_measure(Path(a.out), a.hw))
    return 0


def _print_inspection(ins: object) -> None:
    from .k8s.inspect import Inspection

    assert isinstance(ins, Inspection)
    print(f"deployment {ins.namespace}/{ins.deployment}: {ins.replicas} replica(s), GPU container {ins.container}, "
          f"image {ins.image}, node {ins.node or '?'}, pod {ins.pod or 'none'}, "
          f"{ins.tensor_parallel} GPU worker process(es)")
    for f in ins.findings:
        print(f"  [{f.level}] {f.name}: {f.message}\n         evidence: {f.evidence}")
    print(f"strategy: {ins.strategy} — {ins.strategy_reason}")
    for f in ins.blocked():
        print(f"BLOCKED by {f.name}")


def cmd_k8s(a: argparse.Namespace) -> int:
    from . import app

    if a.k8s_command == "inspect":
        ins = app.k8s_inspect(a.namespace, a.deployment, a.tools_image, a.container, a.strategy,
                              a.grant_profiling_cap)
        _print_inspection(ins)
        return 1 if ins.blocked() else 0
    if a.k8s_command == "cleanup":
        removed = app.k8s_cleanup(a.namespace, a.release, a.expired, a.timeout)
        print(f"removed: {', '.join(removed) or 'nothing of kernelscope left'}")
        return 0
    return _k8s_capture(a)


def _k8s_capture(a: argparse.Namespace) -> int:
    import json
    import shlex

    from . import app
    from .k8s.capture import K8sCaptureRequest

    req = K8sCaptureRequest(
        namespace=a.namespace, target=a.deployment, plan=_plan(a), out=Path(a.out),  # type: ignore[arg-type]
        command=("kernelscope", *sys.argv[1:]), tools_image=a.tools_image, ncu_home=a.ncu_home,
        ncu_in_image=a.ncu_in_image, pull_secret=a.pull_secret, release=a.release, container=a.container,
        entrypoint=tuple(shlex.split(a.entrypoint)) if a.entrypoint else None, strategy=a.strategy,
        pod_per_kernel=a.pod_per_kernel, grant_profiling_cap=a.grant_profiling_cap,
        warmup_requests=a.warmup_requests, warmup_path=a.warmup_path, warmup_body=a.warmup_body,
        warmup_port=a.warmup_port,
        dry_run=a.dry_run, timeout=a.timeout, ttl_s=a.ttl, context=app.parse_context(a.context or []))
    result = app.k8s_capture(req, say)
    _print_inspection(result.inspection)
    print(f"policy: {result.policy}; {len(result.plan.units())} capture unit(s); release {result.release}")
    for note in result.plan.notes:
        print(f"  note: {note}")
    if a.dry_run:
        if result.values:
            print("sister values (secrets redacted): " + json.dumps(result.values))
        for i, (mutates, step) in enumerate(result.steps, 1):
            print(f"{i:3d}. {'[change]' if mutates else '[read]  '} {step}")
        return 0
    for line in result.failed:
        say(f"not captured: {line}")
    say(f"bundle written to {result.out}; the sister is removed")
    an = app.analyze(app.AnalyzeRequest((Path(a.out),)))
    _print_analysis(an, None)
    return 1 if result.failed else 0


# -- the parser ----------------------------------------------------------------------------------
def _sub(sub: argparse._SubParsersAction[T.Parser], name: str, help_text: str,
         handler: Handler) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help_text.replace("%", "%%"), description=help_text,
                       epilog=f"example: {EXAMPLES.get(name, '')}" if name in EXAMPLES else None)
    p.set_defaults(func=handler)
    return p


def _inputs(p: argparse.ArgumentParser, title: bool = True) -> None:
    p.add_argument("inputs", nargs="+", type=T.path,
                   help=".ncu-rep, ncu CSV export (raw or details page), or a bundle dir")
    p.add_argument("--kernel", help="exact kernel name, or regex:EXPR (as ncu's --kernel-name)")
    p.add_argument("--hw", help="ceilings key to use instead of the report's device (e.g. h200-sxm)")
    p.add_argument("--ceilings", type=T.path, help="a ceilings YAML file replacing the packaged datasheet one")
    if title:
        p.add_argument("--title")


def _capture_options(p: argparse.ArgumentParser) -> None:
    from .ncu.metric_sets import ADDONS, SETS

    p.add_argument("--set", default="roofline", choices=SETS,
                   help="roofline (ours: 9 passes on an H200), basic (10) or full (38)")
    p.add_argument("--add", action="append", choices=tuple(ADDONS),
                   help="add-on to --set roofline: " + "; ".join(f"{n}: {x.what}" for n, x in ADDONS.items()))
    p.add_argument("--context", action="append", metavar="KEY=VALUE",
                   help="context recorded in the bundle, e.g. model=llama-3-8b (repeatable)")
    p.add_argument("--out", required=True, type=T.path, help="bundle directory to create")


def _local_capture_options(p: argparse.ArgumentParser) -> None:
    _capture_options(p)
    p.add_argument("--ncu", type=T.path, help="ncu binary (default: ncu on PATH, then /usr/local/cuda/bin/ncu)")
    p.add_argument("--dry-run", action="store_true", help="print the exact ncu argv and run nothing")


def _window(p: argparse.ArgumentParser) -> None:
    from .ncu.plan import POLICIES

    p.add_argument("--kernel", action="append", help="kernel name or regex:EXPR; repeat for several")
    p.add_argument("--kernel-set", help="a named list of hot kernels (capture/kernel_sets.yaml)")
    p.add_argument("--launch-skip", type=T.count, default=0, help="matching launches to skip first (warm-up)")
    p.add_argument("--launch-count", type=T.positive, default=1,
                   help=f"matching launches to profile (above {POLICIES['local'].max_launch_count} needs --force "
                        "locally; live pods allow 3 on one replica, 5 on several)")


def parser() -> argparse.ArgumentParser:
    from .capture.harness import add_op_arguments

    p = T.Parser(prog="kernelscope", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"kernelscope {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    a = _sub(sub, "analyze", "per-kernel bound, %SoL and next lever from ncu reports", cmd_analyze)
    _inputs(a, title=False)
    a.add_argument("--achievable", type=T.path,
                   help="measured ceilings (kernelscope ceilings measure) beside the datasheet %%SoL")
    a.add_argument("--format", choices=("table", "json", "csv"), help="what to print (default: table)")
    a.add_argument("--out", type=T.path, help="directory to write kernels.json and kernels.csv into")

    r = _sub(sub, "report", "self-contained HTML report (opens offline)", cmd_report)
    _inputs(r)
    r.add_argument("--out", required=True, type=T.path, help="report.html")
    r.add_argument("--campaign-config", type=T.path, help="a campaign config.yaml whose context fills the header")

    ro = _sub(sub, "roofline", "static roofline plot (.png or .svg)", cmd_roofline)
    _inputs(ro)
    ro.add_argument("--out", required=True, type=T.path, help="roofline.png or roofline.svg")

    _campaign_parser(sub)
    bu = _sub(sub, "bundle", "bundle tools", lambda _: 2)
    ki = bu.add_subparsers(dest="bundle_command", required=True).add_parser(
        "kernel-internals", help="write kernel_internals into inference_perfbench_v1.json")
    ki.add_argument("--bundle", required=True, type=T.path)
    ki.add_argument("--hw")
    ki.set_defaults(func=cmd_kernel_internals)

    jo = _sub(sub, "join", "ncu figures + nsys kernel totals + profiler sample shares, by name", cmd_join)
    jo.add_argument("--ncu", required=True, type=T.path, help="bundle or report")
    jo.add_argument("--nsys", type=T.path, help="nsys stats --report cuda_gpu_kern_sum --format csv output")
    jo.add_argument("--zymtrace", type=T.path, help="CSV of sample shares: name, share %%")
    jo.add_argument("--hw")
    jo.add_argument("--format", choices=("table", "csv", "markdown"), default="table")

    di = _sub(sub, "diff", "compare two bundles kernel by kernel (same context only)", cmd_diff)
    di.add_argument("baseline", type=T.path, help="bundle or report: the baseline")
    di.add_argument("candidate", type=T.path, help="bundle or report: the candidate")
    di.add_argument("--allow-mismatch", action="store_true", help="compare even when device/set/shapes/model differ")
    di.add_argument("--hw")

    _k8s_parser(sub)

    c = _sub(sub, "capture", "scoped ncu capture(s) into a bundle: ... -- PROGRAM ARGS, or --attach", cmd_capture)
    _window(c)
    c.add_argument("--attach", help="HOST:PORT of a process started with `kernelscope launch`")
    c.add_argument("--allow-unscoped", action="store_true", help="capture every kernel (slow: each is replayed)")
    c.add_argument("--force", action="store_true", help="allow a --launch-count above the local limit")
    c.add_argument("--clock-control", default="none", choices=("none", "base"),
                   help="none (default): the clocks serving runs at; base: ncu's locked base clocks")
    c.add_argument("--target-processes", default="all", choices=("all", "application-only"))
    c.add_argument("--replay-mode", default="kernel", choices=("kernel", "application"))
    c.add_argument("--graph-profiling", default="node", choices=("node", "graph"))
    c.add_argument("--profile-from-start", default="on", choices=("on", "off"))
    _local_capture_options(c)

    o = _sub(sub, "op", "single-op harness + capture of its main kernel", cmd_op)
    add_op_arguments(o)
    o.add_argument("--kernel", dest="op_kernel", help="override the op's kernel filter")
    _local_capture_options(o)

    la = _sub(sub, "launch", "start PROGRAM (after --) under ncu so that `capture --attach` can profile it",
              cmd_launch)
    la.add_argument("--port", type=T.port, help="base port (ncu default 49152)")
    la.add_argument("--ncu", type=T.path)
    la.add_argument("--dry-run", action="store_true", help="print the ncu command and run nothing")

    ce = _sub(sub, "ceilings", "ceilings files", lambda _: 2)
    m = ce.add_subparsers(dest="ceilings_command", required=True).add_parser(
        "measure", help="measure achievable copy bandwidth and matmul peaks on this GPU")
    m.add_argument("--out", default="measured-ceilings.yaml", type=T.path)
    m.add_argument("--hw", help="key for the measured entry (default: from the GPU name)")
    m.set_defaults(func=cmd_measure)
    return p


def _campaign_parser(sub: argparse._SubParsersAction[T.Parser]) -> None:
    cp = _sub(sub, "campaign", "campaigns of cells stored as plain files", cmd_campaign)
    cp_sub = cp.add_subparsers(dest="campaign_command", required=True)
    for name, text in (("import-ncu", "import a bundle/.ncu-rep/CSV as a cell (idempotent)"),
                       ("render", "the campaign's HTML report"), ("check", "gates; --strict exits 1 on failure"),
                       ("export", "one kernels table as Parquet")):
        sp = cp_sub.add_parser(name, help=text)
        sp.add_argument("--campaign", required=True)
        sp.add_argument("--root", default="campaigns", type=T.path,
                        help="directory holding campaigns (default ./campaigns)")
        sp.set_defaults(func=cmd_campaign)
        if name == "import-ncu":
            sp.add_argument("--cell-id", required=True)
            sp.add_argument("--bundle", action="append", type=T.path,
                            help="bundle dir, .ncu-rep or CSV export (repeatable)")
            sp.add_argument("--hw")
        elif name == "render":
            sp.add_argument("--out", type=T.path, help="default: <root>/<campaign>/report.html")
        elif name == "check":
            sp.add_argument("--strict", action="store_true")
        else:
            sp.add_argument("--parquet", required=True, type=T.path, help="output directory")


def _k8s_parser(sub: argparse._SubParsersAction[T.Parser]) -> None:
    from .k8s.sister import DEFAULT_NCU_HOME, DEFAULT_TOOLS_IMAGE

    k8 = _sub(sub, "k8s", "capture from a Kubernetes deployment through a sister pod", cmd_k8s)
    k8_sub = k8.add_subparsers(dest="k8s_command", required=True)
    for name, text in (("inspect", "which strategy is possible, what the run needs, and why"),
                       ("capture", "plan, then run: sister -> capture -> copy out -> cleanup"),
                       ("cleanup", "remove kernelscope sisters: one release, the expired ones, or all of ours")):
        kp = k8_sub.add_parser(name, help=text, description=text)
        kp.set_defaults(func=cmd_k8s)
        kp.add_argument("-n", "--namespace", default="default")
        kp.add_argument("--timeout", type=T.seconds, default=600.0, help="seconds for every wait (default 600)")
        if name == "cleanup":
            kp.add_argument("--release", help="one sister release (refused unless kernelscope made it)")
            kp.add_argument("--expired", action="store_true", help="only sisters past their expiry")
            continue
        kp.add_argument("deployment", help="deploy/NAME")
        kp.add_argument("--tools-image", default=DEFAULT_TOOLS_IMAGE,
                        help="image holding ncu (e.g. an NGC PyTorch image for a newer ncu)")
        kp.add_argument("--container", help="the GPU container (default: the one requesting nvidia.com/gpu)")
        kp.add_argument("--strategy", choices=("wrap", "attach", "direct"),
                        help="wrap (default): run the server under a scoped ncu; attach: single-process servers "
                             "only; direct: the production pod, if already attachable")
        kp.add_argument("--grant-profiling-cap", action="store_true",
                        help="add CAP_SYS_ADMIN to the sister's GPU container (counter access; opt-in)")
        if name == "capture":
            _window(kp)
            _capture_options(kp)
            kp.add_argument("--dry-run", action="store_true", help="list every kubectl/helm step, change nothing")
            kp.add_argument("--ncu-home", default=DEFAULT_NCU_HOME, help="where ncu lives inside the tools image")
            kp.add_argument("--ncu-in-image", help="an ncu path already in the serving and tools images (no copy)")
            kp.add_argument("--pull-secret", help="imagePullSecret for the tools image's registry")
            kp.add_argument("--release", help="sister release name (default ks-NAME-<capture id>)")
            kp.add_argument("--entrypoint", help="the image's ENTRYPOINT, for a container that sets only args")
            kp.add_argument("--pod-per-kernel", action="store_true",
                            help="one sister per kernel (a model load each) instead of one filter covering all")
            kp.add_argument("--warmup-requests", type=T.count, default=0,
                            help="OpenAI-style requests sent to the sister itself once Ready, so the kernels run")
            kp.add_argument("--warmup-path", default="/v1/completions")
            kp.add_argument("--warmup-port", type=T.port,
                            help="the server's port (default: its --port or containerPort)")
            kp.add_argument("--warmup-body", help="JSON body (default: a short completion for the served model)")
            kp.add_argument("--ttl", type=T.positive, default=3600,
                            help="the sister's hard expiry, seconds (default 3600)")


def split_target(argv: list[str]) -> tuple[list[str], list[str]]:
    """Everything after the first `--` is the program, never parsed as our options."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def main(argv: Sequence[str] | None = None) -> int:
    raw, target = split_target(list(sys.argv[1:] if argv is None else argv))
    try:
        args = parser().parse_args(raw)
        args.target = target
        return int(args.func(args))
    except KernelscopeError as exc:
        print(f"kernelscope: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kernelscope: interrupted", file=sys.stderr)
        return 130
    except Interrupted as exc:  # SIGTERM/SIGHUP (or SIGINT during a k8s capture), after cleanup
        print(f"kernelscope: stopped by {exc}", file=sys.stderr)
        return 128 + exc.signum


if __name__ == "__main__":
    sys.exit(main())
