"""The one capture engine: plan -> run -> wait for a complete report -> export -> record, the same
for a local program, an attach session and a Kubernetes pod (the transport is the only variation).

Each capture unit (one ncu run) is recorded whether it worked or not. The bundle keeps the units
that produced a report and says why the others failed; it is written only if at least one worked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from .. import __version__, redact, serving
from ..errors import InputError, KernelscopeError
from ..ingest import read_file
from ..ingest.ncu_rep import first_launch
from ..manifest import BundleManifest, CaptureRecord, CommandRun, KubeContext, Scoping, redacted
from ..ncu.argv import capture_argv, import_argv, listing_argv
from ..ncu.multiplex import needs_replay
from ..ncu.plan import CapturePlan, CaptureUnit
from ..report_manifest import Analytic, NcuFacts
from .bundle import publish, report_stem, staging
from .diagnose import Diagnosis, diagnose, unmatched_kernels
from .transport import CaptureTransport, LocalProcess, Progress

PASSES = re.compile(r"- (\d+) pass(?:es)?")
PROFILED = re.compile(r'Profiling (?:on device \d+ : )?"([^"]+)"')
EXPORTS = (("raw", None, "raw"), ("details", "SpeedOfLight", "sol"))


class CaptureError(KernelscopeError):
    """No unit produced a report: nothing was written; the causes say why."""

    def __init__(self, message: str, diagnoses: Sequence[Diagnosis]) -> None:
        lines = [message] + [f"  cause: {d.cause}: {d.explanation}\n  fix: {d.fix}" for d in diagnoses]
        super().__init__("\n".join(lines))
        self.diagnoses = list(diagnoses)


@dataclass(frozen=True)
class Context:
    """What the engine records besides the plan: who asked, for what, where."""

    command: tuple[str, ...]
    ncu: NcuFacts
    analytic: Analytic | None = None
    kubernetes: KubeContext | None = None
    user: Mapping[str, str] = field(default_factory=dict)  # --context model=... etc.
    app_cuda: str | None = None  # the application's CUDA version, when known (skew diagnosis)
    commands_run: Callable[[], Sequence[CommandRun]] = tuple  # the commands so far: called when the bundle is written
    extras: Callable[[], Mapping[str, str]] | None = None  # more files for the bundle (e.g. the sister's values)
    secrets: tuple[str, ...] = ()  # secret values known to the transport (the pod's env), masked in its logs
    program: tuple[str, ...] = ()  # an attached process's program as `kernelscope launch` was given it: its target


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _secrets(plan: CapturePlan, ctx: Context) -> tuple[str, ...]:
    """The secret values the program was given (argv, or env ours or the plan's, or the pod's): the
    program's output passes through ncu's log, and each is masked there."""
    env = {**os.environ, **dict(plan.env)}
    return (*redact.secret_values([*ctx.command, *plan.target, *ctx.program, *(f"{k}={v}" for k, v in env.items())]),
            *ctx.secrets)


def _unit(plan: CapturePlan, unit: CaptureUnit, stage: Path, transport: CaptureTransport, ctx: Context,
          timeout: float, progress: Progress, secrets: Sequence[str]) -> tuple[CaptureRecord, list[Diagnosis]]:
    stem = report_stem(unit.label, unit.index)
    local = stage / f"{stem}.ncu-rep"
    remote = transport.report_path(local)
    argv = capture_argv(plan, unit, remote, ctx.ncu.path)
    shown = [a.replace(str(stage), "<bundle>") for a in argv]  # redacted with the manifest
    env = {**os.environ, **dict(plan.env)}
    group = f", counter group {unit.group}" if unit.group is not None else ""
    progress(f"ncu {unit.kernel_filter or 'all kernels'}{group} ({unit.index}/{len(plan.units())})")
    outcome = transport.capture(argv, remote, local, env, timeout, progress)
    (stage / f"{stem}.log").write_text(redact.text(outcome.output, secrets))
    profiled = tuple(PROFILED.findall(outcome.output))
    base = CaptureRecord(kernel_filter=unit.kernel_filter, kernels=unit.kernels, report=None, ncu_argv=tuple(shown),
                         exit_code=outcome.exit_code, passes=tuple(int(p) for p in PASSES.findall(outcome.output)),
                         profiled=profiled, wall_s=round(outcome.wall_s, 2), window=plan.window, group=unit.group)
    if not outcome.complete:
        found = diagnose(outcome.output, plan.target, transport.gpu_facts().driver_cuda_version, ctx.app_cuda,
                         unit.kernel_filter, plan.launch_skip, attached=plan.attach is not None)
        causes = {d.cause for d in found}
        # ncu lists only the kernels its filter did not match, so "matched nothing" may really be "every match
        # was skipped": a listing pass (profiles nothing, reruns the program) tells them apart
        if isinstance(transport, LocalProcess) and plan.target and (
                not causes & {"filter-matched-nothing", "skipped-by-launch-skip", "replay-failed"}
                or ("filter-matched-nothing" in causes and plan.launch_skip > 0)):
            _, listing = transport.run(listing_argv(plan, ctx.ncu.path), timeout, env)  # as the program ran
            listed = [d for d in diagnose(listing, plan.target, kernel_filter=unit.kernel_filter,
                                          launch_skip=plan.launch_skip)
                      if d.cause in ("filter-matched-nothing", "skipped-by-launch-skip")]
            if listed:
                found = [d for d in found if d.cause != "filter-matched-nothing"] + listed
        lines = outcome.output.splitlines()
        errors = list(dict.fromkeys(line.strip() for line in lines if line.startswith("==ERROR==")))
        said = errors[:3] or ([] if found else [line for line in lines if line.strip()][-4:])
        tail = "; ncu said: " + " | ".join(said) if said else ""
        error = f"ncu profiled no kernel for --kernel {unit.kernel_filter!r} (exit {outcome.exit_code}){tail}"
        return replace(base, error=redact.text(error, secrets), causes=tuple(d.cause for d in found)), found
    try:  # a report seen whole can be gone when ncu ends (seen once, an attach session that failed next to it)
        profiled = tuple(k.name for k in read_file(local))  # what the report holds, not what ncu printed
    except InputError as exc:
        return replace(base, error=redact.text(f"the report ncu wrote could not be read after it ended: {exc}",
                                               secrets)), []
    exports = {}
    for page, section, suffix in EXPORTS:
        code, text = transport.run(import_argv(remote, page, ctx.ncu.path, section), timeout)
        if code == 0 and text.strip():
            name = f"{stem}-{suffix}.csv"
            (stage / name).write_text(text)
            exports[page if section is None else f"{page}:{section}"] = name
    missing = unmatched_kernels(unit.kernels, profiled)
    found = []
    if missing:
        found = [Diagnosis("launch-count-used-up",
                           f"one session covered {len(unit.kernels)} kernels and its {unit.launch_count} launches "
                           f"went to others; not captured: {', '.join(missing)}",
                           "raise --launch-count, or capture these kernels on their own")]
    return replace(base, report=f"{stem}.ncu-rep", exports=exports, profiled=profiled,
                   causes=tuple(d.cause for d in found), error=found[0].explanation if found else None), found


def _not_replayed(unit: CaptureUnit, failed: CaptureRecord) -> CaptureRecord:
    """A multiplexed group left out because an earlier group's replayed launch failed: its counter
    takes several passes even alone, so its launch would be replayed and fail the same way (each such
    failure cost 72 s on the H200); its figures stay unmeasured and the one-pass groups still run."""
    return CaptureRecord(kernel_filter=unit.kernel_filter, kernels=unit.kernels, report=None, group=unit.group,
                         causes=("replay-failed",),
                         error=f"not run: counter group {failed.group}'s launch failed under kernel replay, and this "
                               "group's counter takes several passes even alone, so it would be replayed too")


def _recognised(stage: Path, records: list[CaptureRecord], ctx: Context) -> str | None:
    """What in the captured reports (their kernels) or the pod (its image) says they are vLLM's."""
    kernels = [k for r in records if r.report for k in first_launch(stage / r.report).kernels]
    image = ctx.kubernetes.image if ctx.kubernetes is not None else None
    return serving.recognise(kernels, image)


def run(plan: CapturePlan, out: Path, transport: CaptureTransport, ctx: Context, timeout: float = 600.0,
        progress: Progress = lambda _: None) -> BundleManifest:
    """Capture every unit of the plan into the bundle `out`. Returns its manifest (whose `failed`
    lists the units that did not work); raises CaptureError, writing nothing, if none worked."""
    started = _now()
    secrets = _secrets(plan, ctx)
    with staging(out) as stage:
        records: list[CaptureRecord] = []
        causes: list[Diagnosis] = []
        for unit in plan.units():
            failed = next((r for r in records if "replay-failed" in r.causes), None)
            if plan.multiplex and failed is not None and needs_replay(unit.metrics):
                records.append(_not_replayed(unit, failed))
                continue
            try:
                record, found = _unit(plan, unit, stage, transport, ctx, timeout, progress, secrets)
            finally:
                transport.end_unit()
            records.append(record)
            causes += found
        if not any(r.report for r in records):
            raise CaptureError("; ".join(r.error or "no report" for r in records), causes)
        target = plan.target or ctx.program
        manifest = redacted(BundleManifest(
            tool=f"kernelscope {__version__}",
            command=ctx.command,
            target=target,
            transport=transport.kind,
            ncu=ctx.ncu,
            gpu=transport.gpu_facts(),
            metric_set=plan.metric_set,
            addons=tuple(plan.addons),
            scoping=Scoping(kernels=plan.kernels, launch_skip=plan.launch_skip, launch_count=plan.launch_count,
                            replay_mode=plan.replay_mode, graph_profiling=plan.graph_profiling,
                            target_processes=plan.target_processes, clock_control=plan.clock_control,
                            filter_mode=plan.filter_mode, name_base=plan.name_base, window=plan.window,
                            multiplex=plan.multiplex),
            env_keys_set=tuple(sorted(k for k, _ in plan.env)),
            started_at=started,
            finished_at=_now(),
            captures=tuple(records),
            notes=plan.notes,
            analytic=ctx.analytic,
            kubernetes=ctx.kubernetes,
            commands_run=tuple(ctx.commands_run()),
            context={**serving.context_of(target, _recognised(stage, records, ctx)), **ctx.user},  # the user wins
        ), secrets)
        for name, text in (ctx.extras() if ctx.extras else {}).items():
            (stage / name).write_text(text)
        publish(stage, manifest, out)
    return manifest
