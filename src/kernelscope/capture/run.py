"""Run a validated CapturePlan: one scoped ncu capture per kernel, exports, and the bundle."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.progress import Progress

from ..errors import KernelscopeError
from ..ingest.detect import check_ncu_rep_framing
from ..ncu.argv import capture_argv, import_argv, listing_argv
from ..ncu.version import NcuInfo, unsupported_flags
from .bundle import gpu_facts, report_stem, staging, write_manifest
from .diagnose import Diagnosis, diagnose
from .plan import CapturePlan

PASSES = re.compile(r"- (\d+) pass(?:es)?")


class CaptureError(KernelscopeError):
    def __init__(self, message: str, diagnoses: list[Diagnosis]) -> None:
        lines = [message] + [f"  cause: {d.cause}: {d.explanation}\n  fix: {d.fix}" for d in diagnoses]
        super().__init__("\n".join(lines))
        self.diagnoses = diagnoses


def _run(argv: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, float]:
    t0 = time.monotonic()
    try:
        res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        head = " ".join(argv[:3])
        raise KernelscopeError(f"ncu did not finish within {timeout:.0f} s: {head} ...\n{out[-2000:]}") from exc
    return res.returncode, res.stdout + res.stderr, time.monotonic() - t0


def wait_for_listener(host: str, port: int, timeout: float) -> bool:
    """True once something accepts TCP connections on host:port (a launched process waiting for
    ncu). A process that already had its attach session stops listening."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return True
        except OSError:
            time.sleep(0.5)
    return False


def _run_attach(argv: list[str], report: Path, env: dict[str, str], timeout: float) -> tuple[int, str, float]:
    """An attach session never ends on its own with ncu 2025.3.1 (it stays connected until the
    application exits, even after --launch-count), so: wait until the report is complete on
    disk, then end the client (SIGTERM, then SIGKILL; it ignores SIGINT)."""
    t0 = time.monotonic()
    log = report.with_suffix(".attach.log")
    with log.open("w") as fh:
        proc = subprocess.Popen(argv, env=env, stdout=fh, stderr=subprocess.STDOUT)
        complete = False
        while time.monotonic() - t0 < timeout and proc.poll() is None and not complete:
            time.sleep(0.5)
            if report.exists():
                try:
                    check_ncu_rep_framing(report.read_bytes(), str(report))
                    complete = True
                except KernelscopeError:
                    pass
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    output = log.read_text()
    log.unlink()
    if not complete and proc.returncode == 0 and not report.exists():
        output += "\n(kernelscope: no report within the timeout)"
    return (0 if complete else proc.returncode or 1), output, time.monotonic() - t0


def check_flags(plan: CapturePlan, argv: list[str], ncu: NcuInfo) -> None:
    options = argv[: len(argv) - len(plan.target)] if plan.target else argv
    missing = unsupported_flags(options, ncu.help_text)
    if missing:
        raise KernelscopeError(f"{ncu.path} {ncu.version} lacks {', '.join(missing)}: refusing to run")


def capture(plan: CapturePlan, out: Path, ncu: NcuInfo, command: list[str], timeout: float = 600.0,
            analytic_file: Path | None = None, extra_context: dict[str, Any] | None = None,
            attach_wait: float = 30.0) -> Path:
    """Capture every kernel of the plan into the bundle `out`; nothing is left there on failure."""
    env = {**os.environ, **dict(plan.env)}
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    sources: list[dict[str, Any]] = []
    kernels: list[str | None] = list(plan.kernels) or [None]
    if plan.attach is not None and not wait_for_listener(plan.attach.host, plan.attach.port, attach_wait):
        raise CaptureError(f"nothing listens on {plan.attach.host}:{plan.attach.port} after {attach_wait:.0f} s",
                           diagnose("No attachable process found"))
    with staging(out) as stage, Progress(transient=True) as bar:
        task = bar.add_task("ncu capture", total=len(kernels))
        for i, kernel in enumerate(kernels, 1):
            stem = report_stem(kernel, i)
            rel = f"{stem}.ncu-rep"
            argv = capture_argv(plan, kernel, str(stage / rel), ncu.path)
            check_flags(plan, argv, ncu)
            bar.update(task, description=f"ncu {kernel or 'all kernels'} ({i}/{len(kernels)})")
            if plan.attach is not None:
                code, output, wall = _run_attach(argv, stage / rel, env, timeout)
            else:
                code, output, wall = _run(argv, env, timeout)
            (stage / f"{stem}.log").write_text(output)
            if not (stage / rel).exists() or "No kernels were profiled" in output:
                # the app's CUDA: NVIDIA's CUDA images set CUDA_VERSION; the driver's: nvidia-smi
                app_cuda = dict(plan.env).get("CUDA_VERSION") or os.environ.get("CUDA_VERSION")
                found = diagnose(output, plan.target, gpu_facts()["driver_cuda_version"], app_cuda)
                if plan.target and not any(d.cause == "filter-matched-nothing" for d in found):
                    _, listing, _ = _run(listing_argv(plan, ncu.path), env, timeout)
                    found += [d for d in diagnose(listing, plan.target) if d.cause == "filter-matched-nothing"]
                tail = "" if found else "; ncu said: " + " | ".join(output.strip().splitlines()[-4:])
                raise CaptureError(f"ncu profiled no kernel for --kernel {kernel!r} (exit {code}){tail}", found)
            exports = {}
            for page, section, suffix in (("raw", None, "raw"), ("details", "SpeedOfLight", "sol")):
                name = f"{stem}-{suffix}.csv"
                res = subprocess.run(import_argv(str(stage / rel), page, ncu.path, section),
                                     capture_output=True, text=True, timeout=timeout)
                if res.returncode == 0:
                    (stage / name).write_text(res.stdout)
                    exports[suffix] = name
            sources.append({
                "kernel_filter": kernel, "report": rel, "exports": exports,
                "ncu_argv": [arg.replace(str(stage), str(out)) for arg in argv],
                "exit_code": code, "passes": [int(p) for p in PASSES.findall(output)],
                "profiled": re.findall(r'Profiling "([^"]+)"', output), "wall_s": round(wall, 3),
            })
            bar.advance(task)
        context = {
            "command": command,
            "target": list(plan.target),
            "attach": None if plan.attach is None else {"host": plan.attach.host, "port": plan.attach.port},
            "ncu": {"path": ncu.path, "version": ncu.version},
            **gpu_facts(),
            "metric_set": plan.metric_set, "addons": list(plan.addons),
            "scoping": {"kernels": list(plan.kernels), "launch_skip": plan.launch_skip,
                        "launch_count": plan.launch_count, "replay_mode": plan.replay_mode,
                        "graph_profiling": plan.graph_profiling, "target_processes": plan.target_processes,
                        "clock_control": plan.clock_control},
            "env_keys_set": sorted(k for k, _ in plan.env),
            "started_at": started,
            "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "notes": list(plan.notes),
            "analytic": read_analytic(analytic_file) if analytic_file else None,
            **(extra_context or {}),
        }
        write_manifest(stage, context, sources)
    return out


def read_analytic(path: Path) -> dict[str, Any] | None:
    """The harness's analytic work for this capture (written while ncu ran it)."""
    return json.loads(path.read_text()) if path.exists() else None
