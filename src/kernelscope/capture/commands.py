"""What `kernelscope capture`, `op` and `launch` do, between argument parsing and ncu."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..errors import KernelscopeError
from ..ncu.argv import capture_argv, launch_argv
from ..ncu.version import NcuInfo, probe
from .bundle import report_stem
from .harness import KERNELS
from .plan import CapturePlan, merge_for_attach, validate
from .preflight import Finding, lint
from .run import capture


def find_ncu(explicit: str | None) -> str:
    for candidate in (explicit, shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if candidate and Path(candidate).exists():
            return candidate
    raise KernelscopeError("ncu not found: put it on PATH or pass --ncu PATH")


def prepare(plan: CapturePlan, allow_unscoped: bool, force: bool) -> tuple[CapturePlan, list[Finding]]:
    plan, findings = lint(plan)
    return merge_for_attach(validate(plan, allow_unscoped=allow_unscoped, force=force)), findings


def dry_run_lines(plan: CapturePlan, out: Path, ncu: str) -> list[str]:
    """The exact argv of every ncu run, one per line, shell-quoted for reading only."""
    import shlex

    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in plan.env)
    kernels = list(plan.kernels) or [None]
    lines = []
    for i, k in enumerate(kernels, 1):
        argv = capture_argv(plan, k, str(out / f"{report_stem(k, i)}.ncu-rep"), ncu)
        lines.append((f"env {env} " if env else "") + shlex.join(argv))
    return lines


def run_plan(plan: CapturePlan, out: Path, ncu_path: str | None, command: list[str], dry_run: bool,
             findings: list[Finding], analytic_file: Path | None = None) -> int:
    for f in findings:
        print(f"kernelscope: {f.level}: {f.message}", file=sys.stderr)
    if dry_run:
        ncu = ncu_path or shutil.which("ncu") or "ncu"
        for line in dry_run_lines(plan, out, ncu):
            print(line)
        return 0
    info: NcuInfo = probe(find_ncu(ncu_path))
    capture(plan, out, info, command, analytic_file=analytic_file)
    print(f"kernelscope: bundle written to {out} (ncu {info.version}); next: kernelscope analyze {out}",
          file=sys.stderr)
    return 0


def op_plan(op: str, harness_args: list[str], kernel: str | None, metric_set: str, addons: tuple[str, ...],
            warmup: int, analytic_file: Path) -> CapturePlan:
    """The harness as the target program; the capture skips its warm-up launches."""
    if op == "callable" and not kernel:
        raise KernelscopeError("op callable needs --kernel (the name or regex:PART of the kernel it launches)")
    target = (sys.executable, "-m", "kernelscope.capture.harness", op, *harness_args,
              "--analytic-out", str(analytic_file))
    return CapturePlan(kernels=(kernel or KERNELS[op],), metric_set=metric_set, addons=addons,
                       launch_skip=warmup, launch_count=1, target=target)


def op_analytic_file() -> Path:
    return Path(tempfile.mkdtemp(prefix="kernelscope-op-")) / "analytic.json"


def launch(target: list[str], port: int | None, ncu_path: str | None) -> int:
    """Become `ncu --mode launch TARGET` (exec, so signals reach ncu, which forwards them to the
    target). The target waits at its first CUDA call until an attach arrives."""
    if not target:
        raise KernelscopeError("give the program to launch after --")
    argv = launch_argv(target, port, find_ncu(ncu_path))
    print(f"kernelscope: {' '.join(argv[:4])} ... ; attach with: kernelscope capture --attach "
          f"127.0.0.1:{port or 49152} --kernel NAME --out DIR", file=sys.stderr)
    sys.stderr.flush()
    os.execvp(argv[0], argv)
    return 127  # not reached
