"""Use cases: typed requests in, results out. The CLI turns options into these requests (a
capture's ncu plan among them), calls them (a capture verb then the analysis of what it wrote) and
prints what comes back; nothing below the CLI takes its options or knows it exists.

    analyze -> Analysis        report / roofline -> Path        capture / op -> CaptureResult
    k8s_inspect / k8s_capture / k8s_cleanup                     campaign_* / kernel_internals / join / diff
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn

from . import __version__, redact
from .analysis.overshoot import Overshoots
from .analysis.pipeline import Judge, judge_for
from .analysis.pipeline import load as load_records
from .ceilings import Arch, CeilingsFile, DeviceCeilings, DeviceFacts, described
from .errors import InputError, KernelscopeError, PlanError
from .files import check_output_path, staged, write_file, write_files
from .model import Assessment
from .report.progress import Steps, metered, quiet
from .report_manifest import NcuFacts, ReportManifest
from .typed import plain

if TYPE_CHECKING:  # the capture and comparison stacks load with the verbs that use them (start-up time)
    from .capture.harness import OpSpec
    from .capture.inventory import Listed
    from .capture.preflight import Finding
    from .capture.transport import Progress
    from .k8s.capture import Cleanup, K8sCaptureRequest, K8sCaptureResult
    from .k8s.findings import Inspection, Strategy
    from .manifest import BundleManifest, Recorded
    from .ncu.plan import CapturePlan
    from .ncu.version import NcuInfo
    from .report import diff as diffing
    from .report import join as joining
    from .report_manifest import Analytic


# -- analysis ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AnalyzeRequest:
    """What to analyse (the inputs) and against what: --kernel, --hw, --ceilings, --achievable."""

    inputs: tuple[Path, ...]
    kernel: str | None = None
    hw: str | None = None
    ceilings: Path | None = None
    achievable: Path | None = None


def _context(r: AnalyzeRequest, ceilings: CeilingsFile, manifests: Mapping[Path, Recorded]) -> dict[str, Any]:
    """The JSON document's context block: what was analysed, how, each bundle's capture (its
    manifest) and each bare report's (what the report records of it)."""
    return {
        "tool": f"kernelscope {__version__}",
        "analyzed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "inputs": [str(p) for p in r.inputs],
        "kernel_filter": r.kernel,
        "ceilings_file": ceilings.origin,
        "hw_override": r.hw,
        "achievable_file": _measured(r),
        "bundles": {str(d): plain(m) for d, m in manifests.items() if not isinstance(m, ReportManifest)},
        "reports": {str(d): plain(m) for d, m in manifests.items() if isinstance(m, ReportManifest)},
    }


@dataclass(frozen=True)
class Analysis:
    """Every launch judged, the ceilings they were held to and each input's capture context."""

    request: AnalyzeRequest
    items: list[Assessment]
    ceilings: CeilingsFile
    manifests: Mapping[Path, Recorded]  # each input's capture context (analysis.pipeline.contexts)

    def context(self) -> dict[str, Any]:
        return _context(self.request, self.ceilings, self.manifests)

    def labels(self) -> dict[str, str]:
        """Report path -> the input it came from, as the reader named it (a file or bundle dir)."""
        from .report.kernels import origin_labels

        return origin_labels(self.request.inputs, sorted({a.record.source for a in self.items}))

    def headline(self) -> str:
        """One line saying what was judged, on what device, against which ceilings."""
        from .analysis.groups import group
        from .report.context import NOT_RECORDED, summary

        devices = sorted({a.record.device for a in self.items if a.record.device}) or ["device unknown"]
        kernels = len(group(self.items))
        lines = {home: summary(m) for home, m in self.manifests.items()}
        if len(set(lines.values())) > 1:  # say whose is whose
            lines = {home: f"{home.name}: {line}" for home, line in lines.items()}
        captures = list(dict.fromkeys(lines.values())) + [f"{Path(s).name}: {NOT_RECORDED}" for s in self.unrecorded()]
        return (f"{kernels} kernel(s), {len(self.items)} launch(es) from {len(self.request.inputs)} input(s); "
                f"{', '.join(devices)}; ceilings {self.ceilings_said()}; "
                f"capture: {' | '.join(captures)}")

    def devices(self) -> list[DeviceCeilings]:
        """The ceilings each device judged was held to (one a device, in the order first met)."""
        found: dict[str, DeviceCeilings] = {}
        for a in self.items:
            rec = a.record
            dev = self.ceilings.pick(rec.device, self.request.hw, DeviceFacts.of(rec.device, rec.metrics))
            found.setdefault(dev.hw_key, dev)
        return list(found.values())

    def ceilings_said(self) -> str:
        """Which ceilings, and how each device's were had: a datasheet file, or derived from the report."""
        return " | ".join(f"{d.hw_key} ({described(d, Path(self.ceilings.origin).name)})" for d in self.devices())

    def unrecorded(self) -> list[str]:
        """The sources that record no capture context (CSV exports), in the order read."""
        homes = list(self.manifests)
        sources = dict.fromkeys(a.record.source for a in self.items)
        return [s for s in sources if not any(Path(s).is_relative_to(h) for h in homes)]

    def warnings(self) -> list[str]:
        """A line a kernel whose figures pass 100 % of a ceiling (analysis/overshoot.py)."""
        found = Overshoots()
        for a in self.items:
            found.add(a)
        return found.lines(self.ceilings.origin, _measured(self.request))


def ceilings_listing(ceilings: Path | None, report: Path | None, hw: str | None
                     ) -> tuple[CeilingsFile, list[DeviceCeilings], list[Arch], str]:
    """`ceilings list`: every entry of the file and every architecture's rates; with a report, the
    ceilings its device is held to, checked against what its own attributes derive."""
    from .ceilings import architectures
    from .ceilings import load as load_ceilings
    from .ingest import iter_inputs

    cf = load_ceilings(ceilings)
    if report is None:
        if hw:
            raise KernelscopeError("ceilings list: --hw goes with --for REPORT")
        return cf, list(cf.devices.values()), list(architectures().values()), f"ceilings in {cf.origin}"
    raw = next(iter(iter_inputs([report])))
    dev = cf.pick(raw.device, hw, DeviceFacts.of(raw.device, raw.metrics))
    said = described(dev, Path(cf.origin).name)
    return cf, [dev], [], f"ceilings of {raw.device or 'an unnamed device'} in {report.name}: {dev.hw_key} ({said})"


def _measured(r: AnalyzeRequest) -> str | None:
    return None if r.achievable is None else str(r.achievable)  # as ceilings.load names its origin


def _opened(req: AnalyzeRequest, progress: Steps) -> tuple[Judge, dict[Path, Recorded]]:
    """The one setup of the in-memory and the streamed analysis: the ceilings and every input's
    context read (and refused) before the first launch."""
    progress(f"reading and judging {len(req.inputs)} input(s)")
    return judge_for(list(req.inputs), kernel=req.kernel, hw=req.hw, ceilings=req.ceilings, achievable=req.achievable)


def analyze(req: AnalyzeRequest, progress: Steps = quiet) -> Analysis:
    """Every launch in the inputs, judged; a --kernel that matches nothing is an error (with the
    regex that would have matched, when the exact name is part of a kernel's name)."""
    judge, manifests = _opened(req, progress)
    items = list(judge(metered(list(req.inputs), progress)))
    if not items:
        _no_match(req)
    return Analysis(req, items, judge.table, manifests)


def _no_match(req: AnalyzeRequest) -> NoReturn:
    raise KernelscopeError(f"no kernel launch matches --kernel {req.kernel!r} in "
                           f"{', '.join(map(str, req.inputs))}{_kernel_hint(req)}")


RESULT_FILES = {"json": "kernels.json", "csv": "kernels.csv"}


def stream_results(req: AnalyzeRequest, out_dir: Path | None, fmt: str | None, jobs: int = 1,
                   progress: Steps = quiet, warn: Callable[[str], None] = lambda _: None
                   ) -> tuple[list[Path], IO[bytes] | None]:
    """Judge and write as the launches stream past, keeping none of them: kernels.json and
    kernels.csv into `out_dir` (when given), and `fmt` (json or csv, when given) into a spool for
    stdout, returned at its start; `jobs`: processes that may read a large raw CSV in parts; `warn`:
    told of each kernel past 100 % of a ceiling (Analysis.warnings) once all are written. Each
    output appears whole or not at all: on an error nothing is left in `out_dir` and the spool is
    dropped unread."""
    from .report.stream import chunks
    from .report.writers import CsvSink, JsonSink, Sink, drain

    judge, manifests = _opened(req, progress)
    context = _context(req, judge.table, manifests)
    names = list(RESULT_FILES.values()) if out_dir is not None else []
    with ExitStack() as stack:
        files = stack.enter_context(staged(names, out_dir)) if out_dir is not None else {}
        spool = tempfile.TemporaryFile() if fmt else None
        outs: list[tuple[str, IO[bytes]]] = [(kind, files[name]) for kind, name in RESULT_FILES.items()
                                             if name in files]
        outs += [(fmt, spool)] if fmt and spool is not None else []
        sinks: list[Sink] = [JsonSink(out, context) if kind == "json" else CsvSink(out) for kind, out in outs]
        rows, found = any(kind == "csv" for kind, _ in outs), Overshoots()
        try:
            if not drain(chunks(list(req.inputs), judge, jobs, rows, progress), sinks, found):
                _no_match(req)
        except BaseException:
            if spool is not None:
                spool.close()
            raise
    if spool is not None:
        spool.seek(0)
    for line in found.lines(judge.table.origin, _measured(req)):
        warn(line)
    return [out_dir / name for name in names] if out_dir is not None else [], spool


def _kernel_hint(req: AnalyzeRequest) -> str:
    from .capture.diagnose import suggest_regex

    names = sorted({r.name for r in load_records(list(req.inputs))})
    hint = suggest_regex(req.kernel, names)
    if hint:
        return f"; --kernel is an exact name unless it starts with regex: (as in ncu): did you mean --kernel {hint}?"
    return f"; kernels there: {', '.join(names[:8])}{' …' if len(names) > 8 else ''}"


def write_results(an: Analysis, out_dir: Path) -> list[Path]:
    from .report.writers import to_json_and_csv

    as_json, as_csv = to_json_and_csv(an.items, an.context())
    return write_files({"kernels.json": as_json, "kernels.csv": as_csv}, out_dir)


def _header(an: Analysis, campaign: dict[str, Any] | None) -> dict[str, str]:
    from .report.context import header

    return header(an.manifests.values(), campaign, {a.record.device for a in an.items if a.record.device},
                  {"ceilings": an.ceilings_said(),
                   "tool": f"kernelscope {__version__}", "inputs": ", ".join(p.name for p in an.request.inputs)})


def figure_title(an: Analysis, model: str = "unknown") -> str:
    """What a figure is of, from its context: device, model, metric set and ncu."""
    devices = ", ".join(sorted({a.record.device for a in an.items if a.record.device})) or "device unknown"
    unrecorded = ["not recorded"] if an.unrecorded() else []  # a CSV export records neither
    sets = sorted({m.metric_sets for m in an.manifests.values()}) + unrecorded
    ncus = sorted({m.ncu.version for m in an.manifests.values() if m.ncu}) or unrecorded
    return f"{devices} · model {model} · set {', '.join(sets)} · ncu {', '.join(ncus) or 'not recorded'}"


@dataclass(frozen=True)
class Output:
    """How a report or plot is made: what it says it is, and how its kernels are listed."""

    title: str | None = None  # default: from the context (device, model, metric set)
    per_launch: bool = False
    campaign_config: Path | None = None  # its context fills the header
    cells: tuple[Path, ...] = ()  # campaign cell directories: the origin column names the cell


def report(req: AnalyzeRequest, out: Path, how: Output = Output(), progress: Steps = quiet) -> Path:
    """The self-contained HTML report."""
    from .campaign.store import read_config

    check_output_path(out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise KernelscopeError(f"{out}: the report is HTML; give a file name ending in .html")
    an = analyze(req, progress)
    campaign = read_config(how.campaign_config) if how.campaign_config else None
    return _render_report(an, out, how, campaign, an.labels(), "source", progress)


def _render_report(an: Analysis, out: Path, how: Output, campaign: dict[str, Any] | None, labels: dict[str, str],
                   origin: str, progress: Progress) -> Path:
    """The HTML report of assessed kernels, from a fresh analysis or from campaign cells."""
    from .report import roofline_data
    from .report.html import Page, render_html
    from .report.kernels import ranked

    ctx = _header(an, campaign)
    rows = ranked(an.items, how.per_launch)
    page = Page(how.title or figure_title(an, ctx["model"]), an.headline(), ctx, labels, origin, how.per_launch)
    progress("drawing the roofline and writing HTML")
    return write_file(render_html(rows, roofline_data.build(rows, an.ceilings, an.request.hw, labels), page), out)


def roofline(req: AnalyzeRequest, out: Path, how: Output = Output(), progress: Steps = quiet) -> Path:
    from .report import roofline_data, roofline_plot
    from .report.kernels import ranked

    check_output_path(out)
    roofline_plot.check_format(out)
    an = analyze(req, progress)
    rows = ranked(an.items, how.per_launch)
    progress("drawing the roofline")
    return roofline_plot.write(roofline_data.build(rows, an.ceilings, req.hw, an.labels()),
                               how.title or figure_title(an, _header(an, None)["model"]), out, an.headline())


def kernel_internals(req: AnalyzeRequest) -> list[Path]:
    """Each input bundle's kernel_internals block, from its own kernels; every bundle is read and
    judged before any file is written."""
    from .report.internals import prepare

    for bundle in req.inputs:
        if not bundle.is_dir():
            raise InputError(bundle, "not a bundle directory (kernel_internals is written into a bundle's "
                                     "inference_perfbench_v1.json)")
    judged = [(bundle, analyze(replace(req, inputs=(bundle,))).items) for bundle in req.inputs]
    made = [prepare(bundle, items, "ncu via kernelscope", f"kernelscope {__version__}") for bundle, items in judged]
    return [write_file(text, path) for path, text in made]  # every bundle's checked and made before any is written


def join(req: AnalyzeRequest, nsys: Path | None, shares: Path | None,
         progress: Steps = quiet) -> joining.Joined:
    """ncu figures of every input (a source column tells them apart) beside nsys totals and sample
    shares, matched by name, ranked by the joined profile; the frontier weighted by it."""
    from .report import join as joining

    totals, samples = joining.read_nsys(nsys) if nsys else {}, joining.read_shares(shares) if shares else {}
    an = analyze(req, progress)  # the profiles first: they are quick to refuse
    return joining.join(an.items, totals, samples, an.labels())


def diff(baseline: Path, candidate: Path, judging: AnalyzeRequest | None = None, allow_mismatch: bool = False,
         fail_on: Sequence[str] = (), progress: Steps = quiet) -> diffing.Comparison:
    """Kernel-by-kernel comparison on the figures both sides measured, each side judged as
    `judging` says (its --kernel, --hw, --ceilings, --achievable); refused when the two captures
    differ in device, shapes or model unless allow_mismatch; `fail_on` gates mark failures."""
    from .report import diff as diffing
    from .report.gates import parse

    gates = [parse(expr) for expr in fail_on]
    judging = judging or AnalyzeRequest(())
    a = analyze(replace(judging, inputs=(baseline,)), progress)
    b = analyze(replace(judging, inputs=(candidate,)), progress)
    ours = diffing.bundle_context(a.manifests.get(baseline), a.items, a.ceilings)
    theirs = diffing.bundle_context(b.manifests.get(candidate), b.items, b.ceilings)
    problems = diffing.mismatches(ours, theirs)
    if problems and not allow_mismatch:
        raise KernelscopeError("contexts differ, refusing to compare (" + "; ".join(problems)
                               + "); pass --allow-mismatch to compare anyway")
    said = problems + diffing.unchecked(ours, theirs)
    return diffing.compare(a.items, b.items, gates, said, (ours["metric_set"], theirs["metric_set"]))


# -- campaigns -----------------------------------------------------------------------------------
def campaign_import(root: Path, slug: str, cell_id: str, inputs: Sequence[Path], hw: str | None = None) -> Path:
    from .campaign.cells import import_ncu

    return import_ncu(root, slug, cell_id, [str(p) for p in inputs], hw=hw)


def campaign_check(root: Path, slug: str) -> tuple[int, list[str], list[str]]:
    """(cells, failures, notes)"""
    from .campaign import check, store

    cells = store.cells(root, slug)
    failures, notes = check.check(store.load_config(root, slug), cells)
    return len(cells), failures, notes


def campaign_export(root: Path, slug: str, out_dir: Path) -> Path:
    from .campaign.export import export_parquet

    return export_parquet(root, slug, out_dir)


def campaign_render(root: Path, slug: str, out: Path | None = None, progress: Progress = lambda _: None) -> Path:
    """The campaign's HTML report, with a cell column, drawn from its cells' ncu_kernels.json (no
    source is read again) against the packaged ceilings that import placed them with."""
    from .campaign import check, store
    from .ceilings import load as load_ceilings

    cells = store.cells(root, slug)
    if not cells:
        raise KernelscopeError(f"campaign {slug!r} has no cells to render")
    items, labels, manifests = [], {}, {}
    for cid, cell in cells.items():
        home = store.cell_dir(root, slug, cid)
        for a in cell["items"]:  # a cell's sources are named inside the cell: make them unique across cells
            source = f"{cid}/{a.record.source}"
            items.append(replace(a, record=replace(a.record, source=source)))
            labels[source] = cid
        for i, m in enumerate(check.cell_manifests(cell, cid)):
            manifests[home / f"manifest-{i}"] = m
    if not items:
        raise KernelscopeError(f"campaign {slug!r}: its cells hold no kernels")
    home = store.campaign_dir(root, slug)
    an = Analysis(AnalyzeRequest(tuple(store.cell_dir(root, slug, cid) for cid in cells)), items, load_ceilings(),
                  manifests)
    how = Output(f"campaign {slug}: {len(cells)} cell(s)")
    target = out or home / "report.html"
    check_output_path(target)
    return _render_report(an, target, how, store.load_config(root, slug), labels, "cell", progress)


# -- capture -------------------------------------------------------------------------------------
def shown_ncu(explicit: str | None) -> str:
    """The ncu a dry run prints (nothing runs, so it need not exist): the given one, else PATH's."""
    return explicit or shutil.which("ncu") or "ncu"


def find_ncu(explicit: str | None) -> str:
    for candidate in (explicit, shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if candidate and Path(candidate).is_file():
            return candidate
    raise KernelscopeError("ncu not found: put it on PATH or pass --ncu PATH")


@dataclass(frozen=True)
class CaptureRequest:
    """A capture to run: its plan, where the bundle goes, and how ncu runs."""

    plan: CapturePlan
    out: Path
    command: tuple[str, ...]
    ncu: str | None = None
    dry_run: bool = False
    allow_unscoped: bool = False
    force: bool = False
    timeout: float = 600.0
    context: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CaptureResult:
    """What a capture found and made: its findings, its bundle's manifest, or the dry run's command lines."""

    findings: list[Finding]
    dry_run: list[str] | None = None  # the exact ncu command lines, when nothing ran
    manifest: BundleManifest | None = None
    out: Path | None = None
    analytic: Analytic | None = None  # a harness op's analytic work


def prepare(plan: CapturePlan, allow_unscoped: bool, force: bool) -> tuple[CapturePlan, list[Finding]]:
    from .capture.preflight import lint
    from .ncu.plan import POLICIES, validate

    plan, findings = lint(plan)
    plan = validate(plan, POLICIES["local"], allow_unscoped=allow_unscoped, force=force)
    if plan.attach is None and not plan.target:
        raise PlanError("give either a program after -- or --attach HOST:PORT")
    if plan.attach is not None and plan.target:
        raise PlanError("give a program after -- or --attach HOST:PORT, not both")
    return plan, findings


def multiplex_line(plan: CapturePlan) -> str:
    """What a multiplexed capture costs, as a dry run shows it before the argv."""
    from .ncu import multiplex

    groups = multiplex.groups(plan.addons)
    runs = len(plan.units())
    whole = multiplex.WHOLE_LIST_PASSES.get(plan.addons)
    than = f" (the whole list replayed: {whole} passes on one launch)" if whole else ""
    held = plan.attach is not None
    line = (f"# multiplexed: {len(groups)} counter groups (measured on {multiplex.MEASURED_ON}), "
            + ("in attach sessions" if held else "one ncu run a group")
            + f" for {len(plan.kernels)} kernel(s), {plan.launch_count} launch(es) each: {runs} "
            + ("sessions" if held else "runs") + f", {runs * plan.launch_count * len(plan.kernels)} profiled launches")
    if held:
        return (line + ", each session a counter that takes several passes alone with the one-pass groups dealt "
                f"over them: every launch replayed, for fewer passes{than}; after a session of one pass a held "
                "process cannot be profiled again (ncu 2025.3.1)")
    more = multiplex.replayed(groups)
    return (line + f", each of one pass but {len(more)} group(s) of a counter that takes "
            + (f"{min(more)}-{max(more)}" if more and min(more) != max(more) else str(max(more, default=0)))
            + " passes even alone"
            + (f", {alone} of a counter whose passes alone are not measured" if (alone := multiplex.unmeasured(groups))
               else "")
            + than)


def dry_run_lines(plan: CapturePlan, out: Path, ncu: str) -> list[str]:
    """The exact argv of every ncu run, one per line, shell-quoted for reading only (secrets masked)."""
    from .capture.bundle import report_stem
    from .ncu.argv import capture_argv

    env = " ".join(shlex.quote(a) for a in redact.argv([f"{k}={v}" for k, v in plan.env]))
    lines = [multiplex_line(plan)] if plan.multiplex else []
    for unit in plan.units():
        argv = capture_argv(plan, unit, str(out / f"{report_stem(unit.label, unit.index)}.ncu-rep"), ncu)
        lines.append((f"env {env} " if env else "") + shlex.join(redact.argv(argv)))
    return lines


def _check_flags(plan: CapturePlan, info: NcuInfo) -> None:
    from .ncu.argv import capture_argv
    from .ncu.version import unsupported_flags

    unit = plan.units()[0]
    argv = capture_argv(plan, unit, "r.ncu-rep", info.path)
    options = argv[: len(argv) - len(plan.target)] if plan.target else argv
    missing = unsupported_flags(options, info.help_text)
    if missing:
        raise KernelscopeError(f"{info.path} {info.version} lacks {', '.join(missing)}: refusing to run")


def capture(req: CaptureRequest, progress: Progress = lambda _: None,
            analytic: Analytic | None = None) -> CaptureResult:
    from .capture import engine
    from .capture.diagnose import diagnose
    from .capture.launcher import held_program
    from .capture.transport import AttachSession, LocalProcess
    from .ncu.version import probe

    plan, findings = prepare(req.plan, req.allow_unscoped, req.force)
    if req.dry_run:
        return CaptureResult(findings, dry_run=dry_run_lines(plan, req.out, shown_ncu(req.ncu)),
                             analytic=analytic)
    info = probe(find_ncu(req.ncu))
    _check_flags(plan, info)
    transport = LocalProcess() if plan.attach is None else \
        AttachSession(plan.attach.host, plan.attach.port, listen_wait=req.timeout)
    if isinstance(transport, AttachSession) and not transport.listening(progress):
        raise engine.CaptureError(f"nothing listens on {transport.host}:{transport.port} after "
                                  f"{transport.listen_wait:.0f} s (--timeout)", diagnose("No attachable process found"))
    app_cuda = dict(plan.env).get("CUDA_VERSION") or os.environ.get("CUDA_VERSION")  # set by NVIDIA's images
    program = () if plan.attach is None else held_program(plan.attach.host, plan.attach.port)
    ctx = engine.Context(command=req.command, ncu=NcuFacts(info.path, info.version), analytic=analytic,
                         user=req.context, app_cuda=app_cuda, program=program)
    manifest = engine.run(plan, req.out, transport, ctx, req.timeout, progress)
    return CaptureResult(findings, manifest=manifest, out=req.out, analytic=analytic)


@dataclass(frozen=True)
class OpRequest:
    """A single-op harness capture: the op's call, the kernel to keep and the capture around it."""

    harness: OpSpec  # the op's call, settled (capture.harness.settle)
    kernel: str | None
    capture: CaptureRequest  # its plan's kernels, window and target are filled in here


def op(req: OpRequest, progress: Progress = lambda _: None) -> CaptureResult:
    """The single-op harness as the program; the capture skips exactly its warm-up launches."""
    from .capture.harness import KERNELS, harness_argv, work

    h = req.harness
    if h.op == "callable" and not req.kernel:
        raise PlanError("op callable needs --kernel (the name or regex:PART of the kernel it launches)")
    target = (sys.executable, "-m", "kernelscope.capture.harness", *harness_argv(h))
    plan = replace(req.capture.plan, kernels=(req.kernel or KERNELS[h.op],), launch_skip=h.warmup, launch_count=1,
                   target=target)
    return capture(replace(req.capture, plan=plan), progress, analytic=work(h))


@dataclass(frozen=True)
class KernelsResult:
    """The program's kernels as ncu listed them, and how many launches the listing profiled."""

    rows: list[Listed]
    profiled: int
    cap: int | None  # the timed listing's launch cap; None: the untimed listing
    dry_run: list[str] | None = None


def kernels(target: Sequence[str], ncu: str | None, timed: int | None, timeout: float, dry_run: bool = False,
            progress: Progress = lambda _: None) -> KernelsResult:
    """Every kernel the program runs (capture/inventory.py): by name, or with `timed` its first launches
    counted and timed; or the ncu command that would list them."""
    from .capture import inventory

    if not target:
        raise PlanError("give the program to list after --")
    tool = shown_ncu(ncu) if dry_run else find_ncu(ncu)
    if dry_run:
        argv = inventory.names_argv(tool, target) if timed is None else \
            inventory.inventory_argv(tool, target, "<tmp>/kernels.ncu-rep", timed)
        return KernelsResult([], 0, timed, dry_run=[shlex.join(redact.argv(argv))])
    if timed is None:
        return KernelsResult(inventory.names(tool, target, dict(os.environ), timeout, progress), 0, None)
    rows, profiled, _ = inventory.run(tool, target, dict(os.environ), timed, timeout, progress)
    return KernelsResult(rows, profiled, timed)


def launch(target: Sequence[str], port: int | None, ncu: str | None, dry_run: bool = False,
           hold_timeout: float = 600.0, progress: Progress = lambda _: None) -> tuple[list[str], int]:
    """The `ncu --mode launch` command, and (unless dry_run) its exit code once run to its end under
    capture/launcher.py's watch: a process held with no attach is stopped after `hold_timeout` s."""
    from .capture import launcher
    from .ncu.argv import launch_argv

    if not target:
        raise PlanError("give the program to launch after --")
    argv = launch_argv(list(target), port, shown_ncu(ncu) if dry_run else find_ncu(ncu))
    return argv, 0 if dry_run else launcher.run(argv, target[0], port, hold_timeout, progress)


def ceilings_measure(out: Path, hw: str | None) -> str:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise KernelscopeError("ceilings measure needs PyTorch with CUDA on this machine (torch is not installed)")
    from .capture.measure import measure

    text = measure(hw)
    write_file(text, out)
    return text


def parse_context(pairs: Sequence[str]) -> dict[str, str]:
    """--context model=llama-3-8b --context parallelism=tp2 -> {model: ..., parallelism: ...}"""
    out = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise InputError(pair, "--context takes KEY=VALUE (e.g. model=llama-3-8b)")
        out[key.strip()] = value
    return out



# -- Kubernetes ----------------------------------------------------------------------------------
def k8s_inspect(namespace: str, target: str, tools_image: str, container: str | None = None,
                strategy: Strategy | None = None, grant_cap: bool = False,
                vllm_version: str | None = None) -> Inspection:
    from .k8s.inspect import inspect
    from .k8s.kubectl import Kube

    return inspect(Kube(namespace), target, tools_image, container, strategy, grant_cap, vllm_version=vllm_version)


def k8s_capture(req: K8sCaptureRequest, say: Progress) -> K8sCaptureResult:
    from .k8s.capture import capture as run_k8s

    return run_k8s(req, say)


def k8s_cleanup(namespace: str, release: str | None, expired: bool, timeout: float,
                dry_run: bool = False) -> Cleanup:
    import time

    from .k8s.capture import cleanup

    return cleanup(namespace, release, expired, timeout, time.time(), dry_run)
