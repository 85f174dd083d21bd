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
import io
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from . import __version__
from . import argtypes as T
from .errors import Interrupted, KernelscopeError, UsageError, signals_interrupt
from .report.text import clean

if TYPE_CHECKING:  # imported where used: `kernelscope --help` starts without them
    from .app import CaptureRequest, CaptureResult
    from .k8s.findings import Inspection
    from .ncu.plan import CapturePlan

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


def say(line: str) -> None:
    """A line to stderr (progress, what was written, an error), inert: file names and names from
    reports or clusters in it are data, so their escape sequences never reach the terminal."""
    print(f"kernelscope: {clean(line)}", file=sys.stderr, flush=True)


def show(line: str) -> None:
    """A line of a verb's report to stdout, inert as say's."""
    print(clean(line))


def emit(text: str | bytes) -> None:
    """Print to stdout (bytes only where it has a byte buffer: see emit_file). A reader that stopped
    reading (`| head`) ends the output quietly; a closed or full stdout is an error of one line."""
    out = sys.stdout
    if out is None:
        raise KernelscopeError("stdout is closed; redirect it to a file, or use --out where the verb has it")
    try:
        if isinstance(text, bytes):
            out.flush()
            out.buffer.write(text)
            out.buffer.flush()
        else:
            out.write(text)
            out.flush()
    except BrokenPipeError:
        _silence_stdout()
    except OSError as exc:
        raise KernelscopeError(f"cannot write to stdout ({exc.strerror or exc})") from exc


def emit_file(spool: IO[bytes]) -> None:
    """A spooled UTF-8 document to stdout, a megabyte at a time: as bytes, or as text where stdout
    is a text stream only (a test's, an embedding host's)."""
    if getattr(sys.stdout, "buffer", None) is not None:
        for block in iter(lambda: spool.read(1 << 20), b""):
            emit(block)
    else:
        text = io.TextIOWrapper(spool, encoding="utf-8", newline="")  # as written: CRLF rows, a \r in a name
        for chunk in iter(lambda: text.read(1 << 20), ""):
            emit(chunk)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that nothing (not even the exit-time flush) writes to a pipe
    whose reader has gone."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


def _width() -> int | None:
    """The width to fit: $COLUMNS, else the terminal's; piped with no $COLUMNS, no limit."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    if sys.stdout is not None and sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size().columns
    return None


def _colour() -> bool:
    return sys.stdout is not None and sys.stdout.isatty() and "NO_COLOR" not in os.environ


def _ticker() -> Any:
    from .report.progress import Ticker

    return Ticker(sys.stderr)


def _show(table: Any, fmt: str, doc: Any = None) -> str:
    """A table model in the asked format (json: `doc`, the verb's own document)."""
    from .report.table import render_csv, render_markdown, render_text

    if fmt == "json":
        import json

        return json.dumps(doc, indent=1, allow_nan=False) + "\n"
    if fmt == "csv":
        return str(render_csv(table))
    if fmt == "markdown":
        return str(render_markdown(table))
    return str(render_text(table, _width(), _colour()))


def _file_out(raw: str) -> Path:
    """--out of a verb that writes one file: a name ending in / is a directory, not a file name."""
    if raw.endswith(("/", os.sep)):
        raise KernelscopeError(f"--out {raw}: names a directory; --out takes the file to write (e.g. "
                               f"{raw}report.html)")
    return Path(raw)


def _analyze_request(a: argparse.Namespace) -> Any:
    """The inputs and selection of a verb whose parser called _reading: positional inputs, then
    those given by the alias (join's --ncu, bundle kernel-internals' --bundle)."""
    from .app import AnalyzeRequest

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


def _streamed(a: argparse.Namespace) -> bool:
    """analyze writes documents (json, csv, or --out-dir's two), streamed whatever the size."""
    return a.format in ("json", "csv") or bool(a.out_dir and not a.format)


def _check_analyze(a: argparse.Namespace) -> None:
    """analyze's format-bound options: --details and --per-launch shape the table (json and csv hold
    every launch with every figure), --jobs the streamed documents."""
    streamed = _streamed(a)
    holds = {"json": "--format json holds every launch (one object each)", "csv": "--format csv holds every launch "
             "(one row each)"}.get(a.format, "--out-dir alone writes kernels.json and kernels.csv, which hold every "
                                              "launch")
    _refuse("analyze", (
        (a.details and streamed, "--details", f"{holds} with its verdict, limiters and levers; the details are "
                                              "the table's (--format table)"),
        (a.details and a.format == "markdown", "--details", "the markdown is the table and next levers for a PR "
                                                            "comment; the details are the table's (--format table)"),
        (a.per_launch and streamed, "--per-launch", f"{holds} already; --per-launch is the table's and markdown's"),
        (a.jobs and not streamed, "--jobs", f"the {a.format or 'table'} is built in this process; --jobs reads a "
                                            "large input in parts for --format json or csv and --out-dir"),
    ))


def _analysis_text(an: Any, fmt: str, per_launch: bool = False, details: bool = False) -> str:
    """The table or markdown view (json and csv are streamed by app.stream_results)."""
    from .report import markdown, terminal

    if fmt == "markdown":
        return markdown.analysis(an.items, an.headline(), an.labels(), per_launch)
    return terminal.render(an.items, an.headline(), an.labels(), _width(), _colour(), details, per_launch)


def _warn(line: str) -> None:
    say(f"warning: {line}")


def cmd_analyze(a: argparse.Namespace) -> int:
    from . import app
    from .report.stream import default_jobs

    _check_analyze(a)
    if _streamed(a):
        with _ticker() as tick:
            written, spool = app.stream_results(_analyze_request(a), Path(a.out_dir) if a.out_dir else None,
                                                a.format, a.jobs or default_jobs(), tick.step, _warn)
        if written:
            say("wrote " + ", ".join(str(p) for p in written))
        if spool is not None:
            with spool:
                emit_file(spool)
        return 0
    with _ticker() as tick:
        an = app.analyze(_analyze_request(a), tick.step)
    for line in an.warnings():
        _warn(line)
    if a.out_dir:
        say("wrote " + ", ".join(str(p) for p in app.write_results(an, Path(a.out_dir))))
    emit(_analysis_text(an, a.format or "table", a.per_launch, a.details))
    return 0


def _output(a: argparse.Namespace) -> Any:
    from .app import Output

    return Output(a.title, a.per_launch, Path(a.campaign_config) if getattr(a, "campaign_config", None) else None)


def cmd_report(a: argparse.Namespace) -> int:
    from . import app

    with _ticker() as tick:
        out = app.report(_analyze_request(a), _file_out(a.out), _output(a), tick.step)
    say(f"wrote {out}")
    return 0


def cmd_roofline(a: argparse.Namespace) -> int:
    from . import app

    _refuse("roofline", ((a.achievable, "--achievable", "the plot draws the roofs of one ceilings file; to draw "
                                                        "measured ones, give that file as --ceilings"),))
    with _ticker() as tick:
        out = app.roofline(_analyze_request(a), _file_out(a.out), _output(a), tick.step)
    say(f"wrote {out}")
    return 0


def cmd_campaign(a: argparse.Namespace) -> int:
    from . import app

    root = Path(a.root)
    if a.campaign_command == "import-ncu":
        inputs = [Path(p) for p in [*a.inputs, *(a.bundle or [])]]
        say(f"wrote {app.campaign_import(root, a.campaign, a.cell_id, inputs, a.hw)}")
    elif a.campaign_command == "check":
        from .report.listing import check_table

        n, failures, notes = app.campaign_check(root, a.campaign)
        if a.format in (None, "table"):
            emit("".join(f"FAIL: {x}\n" for x in failures) + "".join(f"note: {x}\n" for x in notes)
                 + f"{n} cell(s), {len(failures)} failure(s)\n")
        else:
            emit(_show(check_table(n, failures, notes), a.format,
                       {"cells": n, "passed": not failures, "failures": failures, "notes": notes}))
        return 1 if failures and a.strict else 0
    elif a.campaign_command == "export":
        say(f"wrote {app.campaign_export(root, a.campaign, Path(a.parquet))}")
    else:
        with _ticker() as tick:
            out = app.campaign_render(root, a.campaign, _file_out(a.out) if a.out else None, tick.step)
        say(f"wrote {out}")
    return 0


def cmd_kernel_internals(a: argparse.Namespace) -> int:
    from . import app

    _refuse("bundle kernel-internals", ((a.achievable, "--achievable", "inference_perfbench_v1's kernel_internals "
                                         "has no figure against measured ceilings; to hold pct_sol to them, give "
                                         "that file as --ceilings"),))
    say("wrote " + ", ".join(str(p) for p in app.kernel_internals(_analyze_request(a))))
    return 0


def cmd_join(a: argparse.Namespace) -> int:
    from . import app
    from .report import join, markdown, terminal

    with _ticker() as tick:
        joined = app.join(_analyze_request(a), Path(a.nsys) if a.nsys else None,
                          Path(a.zymtrace) if a.zymtrace else None, tick.step)
    fmt = a.format or "table"
    if fmt == "csv":
        emit(join.to_csv(joined))
        return 0
    text = _show(join.table(joined), fmt, join.document(joined))
    unmatched = join.unmatched_table(joined)
    if unmatched is not None and fmt in ("table", "markdown"):
        text += "\n" + _show(unmatched, fmt)
    if fmt == "markdown":
        text += markdown.frontier(joined.frontier)
    elif fmt == "table" and joined.frontier:
        text += "\n" + "\n".join(terminal.frontier_lines(joined.frontier, _width())) + "\n"
    emit(text)
    return 0


def cmd_diff(a: argparse.Namespace) -> int:
    from . import app
    from .report import diff

    with _ticker() as tick:
        cmp = app.diff(Path(a.baseline), Path(a.candidate), _analyze_request(a), a.allow_mismatch, a.fail_on or (),
                       tick.step)
    title = f"diff: baseline {Path(a.baseline).name} → candidate {Path(a.candidate).name}"
    if a.format == "csv":
        emit(diff.to_csv(cmp))
    else:
        emit(_show(diff.table(cmp, title), a.format, diff.document(cmp, a.baseline, a.candidate)))
    return 0 if cmp.passed else 1


def _kernels(a: argparse.Namespace) -> tuple[str, ...]:
    from .capture.kernel_sets import kernels

    return tuple(a.kernel or ()) + (kernels(a.kernel_set) if getattr(a, "kernel_set", None) else ())


def _plan(a: argparse.Namespace, target: Sequence[str] = ()) -> CapturePlan:
    from .ncu.plan import CapturePlan, parse_attach

    return CapturePlan(
        kernels=_kernels(a), metric_set=a.set, addons=tuple(a.add or ()), launch_skip=a.launch_skip,
        launch_count=a.launch_count, target=tuple(target),
        attach=parse_attach(a.attach) if getattr(a, "attach", None) else None,
        clock_control=getattr(a, "clock_control", "none"), target_processes=getattr(a, "target_processes", "all"),
        replay_mode=getattr(a, "replay_mode", "kernel"), graph_profiling=getattr(a, "graph_profiling", "node"),
        profile_from_start=getattr(a, "profile_from_start", "on") == "on",
        window="start" if getattr(a, "profile_from_start", "on") == "on" else "profiler-range",
        name_base=getattr(a, "kernel_base", "demangled"))


def _capture_request(a: argparse.Namespace, plan: CapturePlan) -> CaptureRequest:
    from .app import CaptureRequest, parse_context

    return CaptureRequest(plan=plan, out=Path(a.out), command=("kernelscope", *sys.argv[1:]), ncu=a.ncu,
                          dry_run=a.dry_run, allow_unscoped=getattr(a, "allow_unscoped", False),
                          force=getattr(a, "force", False), timeout=a.timeout, context=parse_context(a.context or []))


def _print_capture(result: CaptureResult) -> int:
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
    from . import app
    from .ncu.plan import one_session

    plan = _plan(a, a.target)
    if a.one_run:
        plan = one_session(plan, "--one-run")
    return _print_capture(app.capture(_capture_request(a, plan), say))


def cmd_op(a: argparse.Namespace) -> int:
    from . import app
    from .capture.harness import settle

    settle(a)
    a.kernel = None
    a.launch_skip, a.launch_count = 0, 1
    req = app.OpRequest(harness=a, kernel=a.op_kernel, capture=_capture_request(a, _plan(a)))
    return _print_capture(app.op(req, say))


def cmd_kernels(a: argparse.Namespace) -> int:
    from . import app
    from .capture.inventory import kernels_table

    _refuse("kernels", ((a.dry_run and a.format, "--format", "--dry-run prints the ncu command that would list the "
                         "kernels, not a listing to format"),))
    result = app.kernels(a.target, a.ncu, a.timed, a.timeout, dry_run=a.dry_run, progress=say)
    if result.dry_run is not None:
        emit("".join(line + "\n" for line in result.dry_run))
        return 0
    table = kernels_table(result.rows, result.profiled, result.cap, a.target[0])
    doc = {"profiled_launches": result.profiled, "launch_cap": result.cap,
           "kernels": [{"name": r.name, "name_full": r.name_full, "launches": r.launches, "total_ns": r.total_ns,
                        "select": r.select, "select_matches": r.shared} for r in result.rows]}
    emit(_show(table, a.format or "table", doc))
    return 0


def cmd_launch(a: argparse.Namespace) -> int:
    import shlex

    from . import app, redact

    argv, code = app.launch(a.target, a.port, a.ncu, dry_run=a.dry_run, hold_timeout=a.hold_timeout, progress=say)
    if a.dry_run:
        emit(shlex.join(redact.argv(argv)) + "\n")
    return code


def cmd_measure(a: argparse.Namespace) -> int:
    from . import app

    emit(app.ceilings_measure(_file_out(a.out), a.hw))
    return 0


def cmd_ceilings_list(a: argparse.Namespace) -> int:
    from . import app
    from .report.listing import ceilings_rows, ceilings_table

    cf, devices, archs, title = app.ceilings_listing(Path(a.ceilings) if a.ceilings else None,
                                                     Path(a.for_report) if a.for_report else None, a.hw)
    rows = ceilings_rows(devices, archs)
    emit(_show(ceilings_table(rows, title), a.format, {"origin": cf.origin, "ceilings": rows}))
    return 0


def _print_inspection(ins: Inspection) -> None:
    show(f"{ins.kind.lower()} {ins.namespace}/{ins.deployment}: {ins.replicas} replica(s), "
          f"GPU container {ins.container}, image {ins.image}, node {ins.node or '?'}, pod {ins.pod or 'none'}, "
          f"{ins.tensor_parallel} GPU worker process(es)")
    for f in ins.findings:
        show(f"  [{f.level}] {f.name}: {f.message}")
        show(f"         evidence: {f.evidence}")
    show(f"strategy: {ins.strategy} — {ins.strategy_reason}")
    for f in ins.blocked():
        show(f"BLOCKED by {f.name}")


def cmd_k8s(a: argparse.Namespace) -> int:
    from . import app

    if a.k8s_command == "inspect":
        ins = app.k8s_inspect(a.namespace, a.deployment, a.tools_image, a.container, a.strategy,
                              a.grant_profiling_cap, a.vllm_version)
        _print_inspection(ins)
        return 1 if ins.blocked() else 0
    if a.k8s_command == "cleanup":
        from .k8s.dryrun import cleanup_lines

        for line in cleanup_lines(app.k8s_cleanup(a.namespace, a.release, a.expired, a.timeout, a.dry_run)):
            show(line)
        return 0
    return _k8s_capture(a)


def _k8s_capture(a: argparse.Namespace) -> int:
    from . import app
    from .k8s.capture import K8sCaptureRequest
    from .k8s.dryrun import capture_plan

    req = K8sCaptureRequest(
        namespace=a.namespace, target=a.deployment, plan=_plan(a), out=Path(a.out),
        command=("kernelscope", *sys.argv[1:]), tools_image=a.tools_image, ncu_home=a.ncu_home,
        ncu_in_image=a.ncu_in_image, pull_secret=a.pull_secret, release=a.release, container=a.container,
        entrypoint=a.entrypoint, strategy=a.strategy,
        pod_per_kernel=a.pod_per_kernel, grant_profiling_cap=a.grant_profiling_cap,
        warmup_requests=a.warmup_requests, warmup_path=a.warmup_path, warmup_body=a.warmup_body,
        warmup_port=a.warmup_port, window=a.window, vllm_version=a.vllm_version,
        dry_run=a.dry_run, manifest=Path(a.from_manifest) if a.from_manifest else None, timeout=a.timeout,
        ttl_s=a.ttl, context=app.parse_context(a.context or []))
    result = app.k8s_capture(req, say)
    _print_inspection(result.inspection)
    show(f"policy: {result.policy}; {len(result.plan.units())} capture unit(s); release {result.release}")
    for note in result.plan.notes:
        show(f"  note: {note}")
    if a.dry_run:
        for line in capture_plan(result, req.manifest):
            show(line)
        return 0
    for line in result.failed:
        say(f"not captured: {line}")
    say(f"bundle written to {result.out}; the sister is removed")
    emit(_analysis_text(app.analyze(app.AnalyzeRequest((Path(a.out),))), "table"))
    return 1 if result.failed else 0


# -- the parser ----------------------------------------------------------------------------------
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


def _figure_options(p: argparse.ArgumentParser, what: str) -> None:
    _reading(p)
    _per_launch(p)
    p.add_argument("--title", help="title (default: device, model and metric set from the context)")
    p.add_argument("--out", required=True, type=T.path, help=what)


def _capture_options(p: argparse.ArgumentParser) -> None:
    from .ncu.metric_sets import ADDONS, SETS

    p.add_argument("--set", default="roofline", choices=SETS,
                   help="roofline (ours: 12 passes on an H200), basic (10) or full (38)")
    p.add_argument("--add", action="append", choices=tuple(ADDONS),
                   help="add-on to --set roofline: " + "; ".join(f"{n}: {x.what}" for n, x in ADDONS.items()))
    p.add_argument("--context", action="append", metavar="KEY=VALUE",
                   help="context recorded in the bundle, e.g. model=llama-3-8b (repeatable)")
    p.add_argument("--out", required=True, type=T.path, help="the bundle directory to create")


def _local_capture_options(p: argparse.ArgumentParser) -> None:
    _capture_options(p)
    p.add_argument("--ncu", type=T.path, help="ncu binary (default: ncu on PATH, then /usr/local/cuda/bin/ncu)")
    p.add_argument("--dry-run", action="store_true", help="print the exact ncu argv and run nothing")
    p.add_argument("--timeout", type=T.seconds, default=600.0,
                   help="seconds the capture may take; with --attach, counting the wait for a held process to "
                        "listen (vLLM's EngineCore 20-60 s after the server starts; default 600)")


def _window(p: argparse.ArgumentParser) -> None:
    from .ncu.plan import POLICIES

    p.add_argument("--kernel", action="append", help="kernel name or regex:EXPR; repeat for several")
    p.add_argument("--kernel-set", help="a named list of hot kernels (capture/kernel_sets.yaml)")
    p.add_argument("--kernel-base", default="demangled", choices=("demangled", "function", "mangled"),
                   help="the name ncu matches --kernel against (its --kernel-name-base): demangled (default; a "
                        "CUTLASS wrapper's function name is device_kernel whatever it wraps), function, mangled")
    p.add_argument("--launch-skip", type=T.count, default=0, help="matching launches to skip first (warm-up)")
    p.add_argument("--launch-count", type=T.positive, default=1,
                   help=f"matching launches to profile (above {POLICIES['local'].max_launch_count} needs --force "
                        "locally; live pods allow 3 on one replica, 5 on several)")


def parser() -> argparse.ArgumentParser:
    from .capture.harness import add_op_arguments

    p = T.Parser(prog="kernelscope", description=__doc__, allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"kernelscope {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="VERB")

    a = _sub(sub, "analyze", "per-kernel bound, %SoL and next lever from ncu reports", cmd_analyze)
    _reading(a)
    _per_launch(a)
    _format(a, "; json and csv hold every launch with every figure (--details and --per-launch are the table's)")
    a.add_argument("--details", action="store_true", help="table format: each kernel's verdict, limiters and levers")
    a.add_argument("--out-dir", type=T.path, help="directory to write kernels.json and kernels.csv into")
    a.add_argument("--jobs", type=T.positive, help="json, csv and --out-dir: processes that read a large raw CSV "
                   "export or report in parts (default: the CPUs this process may use, within its CPU quota, "
                   "at most 16)")

    r = _sub(sub, "report", "self-contained HTML report (opens offline)", cmd_report)
    _figure_options(r, "the HTML file to write (e.g. report.html)")
    r.add_argument("--campaign-config", type=T.path, help="a campaign config.yaml whose context fills the header")

    ro = _sub(sub, "roofline", "static roofline plot (.png, .svg or .pdf)", cmd_roofline)
    _figure_options(ro, "the plot file to write: .png, .svg or .pdf")

    _campaign_parser(sub)
    bu = _sub(sub, "bundle", "bundle tools", None)
    ki = _sub(bu.add_subparsers(dest="bundle_command", required=True), "kernel-internals",
              "write kernel_internals into the bundle's inference_perfbench_v1.json", cmd_kernel_internals, "bundle")
    _reading(ki, "bundle directories", " (each gets its own kernel_internals)", alias="--bundle")

    jo = _sub(sub, "join", "ncu figures + nsys kernel totals + profiler sample shares, by name", cmd_join)
    _reading(jo, note=" (a source column tells them apart)", alias="--ncu")
    jo.add_argument("--nsys", type=T.path, help="nsys stats --report cuda_gpu_kern_sum --format csv output: ranks "
                                                "the kernels")
    jo.add_argument("--zymtrace", type=T.path, help="CSV of sample shares: name, share %% (ranks the kernels when "
                                                    "no --nsys is given)")
    _format(jo, "; json and csv name each kernel in full and list the profile rows that match none")

    di = _sub(sub, "diff", "compare a baseline and a candidate kernel by kernel, as a gate", cmd_diff,
              extra="Kernels are paired by name, as join pairs them: by full name, else by base name where the\n"
                    "template arguments changed (said in a note). Launches of a kernel together: mean time per\n"
                    "launch. Cells read `baseline → candidate (change)`: points (pt) for a percent figure, relative\n"
                    "(%) for the rest, and as each gate reads it. Columns show time, the gated figures and those\n"
                    "that moved by 1 % or more. The figures both sides measured are compared and those one side\n"
                    "lacks are listed; a different device, shapes or model is refused (--allow-mismatch).\n"
                    "A gate that could not be evaluated (a side did not measure its figure) has failed.\n"
                    + GATE_EXIT)
    di.add_argument("baseline", type=T.path, help="bundle, .ncu-rep or CSV export: the baseline")
    di.add_argument("candidate", type=T.path, help="bundle, .ncu-rep or CSV export: the candidate")
    _judging(di)
    di.add_argument("--fail-on", action="append", metavar="GATE",
                    help="FIGURE OP LIMIT UNIT, repeatable: e.g. 'duration_ns>+5%%' (a kernel over 5 %% slower per "
                         "launch fails), 'pct_sol<-3pt' (%%SoL down more than 3 points), 'warp_stalls.barrier>+2pt'; "
                         "UNIT %% (relative), pt (points: percent figures only) or none (the figure's own unit: "
                         "not on a percent figure); exit 1 if any kernel fails or a side did not measure the figure")
    di.add_argument("--allow-mismatch", action="store_true",
                    help="compare even when device/shapes/model differ")
    _format(di, "; csv: one row per kernel and figure")

    _k8s_parser(sub)

    c = _sub(sub, "capture", "scoped ncu capture(s) into a bundle: ... -- PROGRAM ARGS, or --attach", cmd_capture)
    _window(c)
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
    _local_capture_options(c)

    o = _sub(sub, "op", "single-op harness + capture of its main kernel", cmd_op)
    add_op_arguments(o)
    o.add_argument("--kernel", dest="op_kernel", help="override the op's kernel filter")
    _local_capture_options(o)

    ki = _sub(sub, "kernels", "list every kernel PROGRAM (after --) runs: launches, GPU time, the --kernel that "
              "selects each (one cheap ncu pass)", cmd_kernels)
    ki.add_argument("--timed", type=T.positive, metavar="N",
                    help="profile the first N launches with their duration, for launch counts and GPU time (each "
                         "costs ncu a serialised result: keep N small); default: names only, nothing profiled")
    ki.add_argument("--timeout", type=T.seconds, default=1800.0, help="seconds the program may run (default 1800)")
    ki.add_argument("--ncu", type=T.path, help="ncu binary (default: ncu on PATH, then /usr/local/cuda/bin/ncu)")
    ki.add_argument("--dry-run", action="store_true", help="print the ncu command and run nothing")
    _format(ki)

    la = _sub(sub, "launch", "start PROGRAM (after --) under ncu so that `capture --attach` can profile it",
              cmd_launch)
    la.add_argument("--port", type=T.port, help="base port (ncu default 49152)")
    la.add_argument("--hold-timeout", type=T.seconds, default=600.0,
                    help="seconds a process may stay held at its first CUDA call with no attach before the program "
                         "is stopped (default 600; counted from the hold, which for vLLM comes 20-60 s after start)")
    la.add_argument("--ncu", type=T.path, help="ncu binary (default: ncu on PATH)")
    la.add_argument("--dry-run", action="store_true", help="print the ncu command and run nothing")

    ce = _sub(sub, "ceilings", "the speed-of-light ceilings: list them, or measure this GPU's", None)
    ce_sub = ce.add_subparsers(dest="ceilings_command", required=True)
    ls = _sub(ce_sub, "list", "every ceiling key with its value, unit, devices and source", cmd_ceilings_list,
              "ceilings")
    ls.add_argument("--ceilings", type=T.path, help="a ceilings YAML file (default: the packaged datasheet one)")
    ls.add_argument("--for", dest="for_report", metavar="REPORT", type=T.path,
                    help="the ceilings a report's device is held to, each datasheet figure beside what the report's "
                         "own attributes derive")
    ls.add_argument("--hw", help="with --for: the ceilings key to hold the report to instead of its device's")
    _format(ls)
    m = _sub(ce_sub, "measure", "measure achievable copy bandwidth and matmul peaks on this GPU (needs torch)",
             cmd_measure, "ceilings")
    m.add_argument("--out", default="measured-ceilings.yaml", type=T.path, help="the YAML file to write")
    m.add_argument("--hw", help="key for the measured entry (default: from the GPU name)")
    return p


def _campaign_parser(sub: argparse._SubParsersAction[Any]) -> None:
    cp = _sub(sub, "campaign", "campaigns of cells stored as plain files", None)
    cp_sub = cp.add_subparsers(dest="campaign_command", required=True)
    for name, text in (("import-ncu", "import bundles/.ncu-rep/CSV exports as a cell (idempotent)"),
                       ("render", "the campaign's HTML report, with a cell column"),
                       ("check", "gates; --strict exits 1 on failure"),
                       ("export", "kernels as Parquet by campaign and cell")):
        sp = _sub(cp_sub, name, text, cmd_campaign, "campaign", GATE_EXIT if name == "check" else "")
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
            _format(sp)
        else:
            sp.add_argument("--parquet", required=True, type=T.path,
                            help="dataset directory: writes DIR/campaign=NAME/cell_id=ID/kernels.parquet")


def _k8s_parser(sub: argparse._SubParsersAction[Any]) -> None:
    from .k8s import DEFAULT_NCU_HOME, DEFAULT_TOOLS_IMAGE

    k8 = _sub(sub, "k8s", "capture from a Kubernetes deployment through a sister pod", None)
    k8_sub = k8.add_subparsers(dest="k8s_command", required=True)
    for name, text in (("inspect", "which strategy is possible, what the run needs, and why"),
                       ("capture", "plan, then run: sister -> capture -> copy out -> cleanup"),
                       ("cleanup", "remove kernelscope sisters: one release, the expired ones, or all of ours")):
        kp = _sub(k8_sub, name, text, cmd_k8s, "k8s",
                  "exit codes: 0 a strategy is possible, 1 blocked, 2 an error" if name == "inspect" else "")
        kp.add_argument("-n", "--namespace", default="default", help="the Kubernetes namespace (default: default)")
        kp.add_argument("--timeout", type=T.seconds, default=600.0, help="seconds for every wait (default 600)")
        if name == "cleanup":
            kp.add_argument("--release", help="one sister release (refused unless kernelscope made it)")
            kp.add_argument("--expired", action="store_true", help="only sisters past their expiry")
            kp.add_argument("--dry-run", action="store_true",
                            help="list what would be removed (found by kernelscope's owner label), remove nothing")
            continue
        kp.add_argument("deployment", help="deploy/NAME")
        kp.add_argument("--tools-image", default=DEFAULT_TOOLS_IMAGE,
                        help="image holding ncu (e.g. an NGC PyTorch image for a newer ncu)")
        kp.add_argument("--container", help="the GPU container (default: the one requesting nvidia.com/gpu)")
        kp.add_argument("--strategy", choices=("wrap", "attach", "direct"),
                        help="wrap (default): run the server under a scoped ncu; attach: single-process servers "
                             "only; direct: the production pod, if already attachable")
        kp.add_argument("--grant-profiling-cap", action="store_true",
                        help="add CAP_SYS_ADMIN to the sister's GPU container (counter access for a root "
                             "process; opt-in)")
        kp.add_argument("--vllm-version", metavar="X.Y.Z",
                        help="the server's vLLM release, when neither its running pod nor its image tag says "
                             "(decides how the serving window is opened)")
        if name == "capture":
            _window(kp)
            _capture_options(kp)
            kp.add_argument("--dry-run", action="store_true",
                            help="print the sister pod spec and every kubectl/helm step, change nothing")
            kp.add_argument("--from-manifest", metavar="FILE", type=T.path,
                            help="with --dry-run: plan from this file's deployment (`kubectl get deploy NAME -o "
                                 "yaml`, or an apply manifest) with no cluster at all")
            kp.add_argument("--ncu-home", default=DEFAULT_NCU_HOME, help="where ncu lives inside the tools image")
            kp.add_argument("--ncu-in-image", help="an ncu path already in the serving and tools images (no copy)")
            kp.add_argument("--pull-secret", help="imagePullSecret for the tools image's registry")
            kp.add_argument("--release", help="sister release name (default ks-NAME-<capture id>)")
            kp.add_argument("--entrypoint", type=T.words,
                            help="the image's ENTRYPOINT, for a container that sets only args")
            kp.add_argument("--pod-per-kernel", action="store_true",
                            help="one sister per kernel (a model load each) instead of one filter covering all")
            kp.add_argument("--warmup-requests", type=T.count, default=0,
                            help="OpenAI-style requests sent to the sister itself once Ready, so the kernels run")
            kp.add_argument("--warmup-path", default="/v1/completions",
                            help="the path warm-up requests go to (default /v1/completions)")
            kp.add_argument("--warmup-port", type=T.port,
                            help="the server's port (default: its --port or containerPort)")
            kp.add_argument("--warmup-body", help="JSON body (default: a short completion for the served model)")
            kp.add_argument("--window", choices=("serving", "start"),
                            help="where the captured launches come from: serving (default for a vLLM server: ncu "
                                 "--profile-from-start off, vLLM's CUDA profiler on, POST /start_profile after the "
                                 "warm-up requests) or start (counted from the process's start, --launch-skip: "
                                 "start-up's launches too)")
            kp.add_argument("--ttl", type=T.positive, default=3600,
                            help="the sister's hard expiry, seconds (default 3600)")


def split_target(argv: list[str]) -> tuple[list[str], list[str]]:
    """Everything after the first `--` is the program, never parsed as our options."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


RUN_A_PROGRAM = frozenset({cmd_capture, cmd_kernels, cmd_launch})  # the verbs whose `-- PROGRAM` is a program


def main(argv: Sequence[str] | None = None) -> int:
    raw, target = split_target(list(sys.argv[1:] if argv is None else argv))
    try:
        with signals_interrupt():  # SIGTERM and SIGHUP clean up as Ctrl-C does, in every verb
            args = parser().parse_args(raw)
            if target and args.func not in RUN_A_PROGRAM:  # no program to run: `--` only ends the options
                args = parser().parse_args([*raw, "--", *target])
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
        _silence_stdout()
        return 0
    except Interrupted as exc:  # SIGTERM/SIGHUP (or SIGINT during a k8s capture), after cleanup
        say(f"stopped by {exc}")
        return 128 + exc.signum


if __name__ == "__main__":
    sys.exit(main())
