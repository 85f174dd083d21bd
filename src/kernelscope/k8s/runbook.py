"""`kernelscope k8s capture`: the runbook, step by step, with cleanup on every exit.

install sister -> wait Running -> debug sidecar (tools image) -> attach session per kernel ->
(optional warm-up requests) -> wait for a complete report -> export CSVs -> kubectl cp out ->
delete the pod for a fresh process before the next kernel -> remove files -> uninstall.

The server starts under `ncu --mode launch`, which holds it at its first CUDA call until an attach
arrives (measured with ncu 2025.3.1), so the sister becomes Ready only after the attach: we wait
for Running, attach, then send warm-up requests. A launched process takes one attach session, so
each kernel gets a fresh process (the pod is deleted and its Deployment makes a new one).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..capture.bundle import report_stem, staging, write_manifest
from ..capture.plan import CapturePlan
from ..errors import KernelscopeError
from ..ingest.detect import check_ncu_rep_framing
from ..ncu.argv import capture_argv, import_argv
from .inspect import Inspection
from .kubectl import Kube, KubeError, Step
from .values import chart_path, sister_values

SIDECAR = "kernelscope-ncu"
POD_DIR = "/tmp/kernelscope"
SISTER_SELECTOR = "app.kubernetes.io/instance={release}"


class Runbook:
    def __init__(self, kube: Kube, ins: Inspection, plan: CapturePlan, release: str, tools_image: str,
                 pull_secret: str | None = None, ncu_home: str | None = None, wait_s: float = 600.0,
                 warmup: Callable[[Runbook, str], None] | None = None,
                 interrupt_after: str | None = None, direct: bool = False) -> None:
        self.kube, self.ins, self.plan, self.release = kube, ins, plan, release
        self.tools_image, self.pull_secret, self.ncu_home, self.wait_s = tools_image, pull_secret, ncu_home, wait_s
        self.warmup = warmup
        self.interrupt_after = interrupt_after  # tests: behave as if Ctrl-C came after this step
        self.direct = direct  # attach to the production pod itself (only when asked, see inspect)
        self.pod: str | None = ins.pod if direct else None
        self.installed = False
        self.values = sister_values(ins, tools_image, pull_secret, ncu_home)

    # -- steps -----------------------------------------------------------------------------------
    def _mark(self, step: str) -> None:
        if self.interrupt_after == step:
            raise KeyboardInterrupt(f"interrupted after {step}")

    def install(self, values_file: Path) -> None:
        if self.direct:
            return
        self.installed = True  # from here on, cleanup uninstalls (also if helm fails half-way)
        self.kube.h("upgrade", "--install", self.release, chart_path(), "-f", str(values_file), "--timeout",
                    f"{int(self.wait_s)}s", timeout=self.wait_s + 30)
        self._mark("install")

    def wait_running(self) -> str:
        if self.direct:
            assert self.pod
            return self.pod
        selector = SISTER_SELECTOR.format(release=self.release)
        if self.kube.dry_run:
            self.kube.k("wait", "--for=jsonpath={.status.phase}=Running", "pod", "-l", selector,
                        f"--timeout={int(self.wait_s)}s", defer=True)
            self.pod = "<sister-pod>"
            return self.pod
        deadline = time.monotonic() + self.wait_s
        while time.monotonic() < deadline:
            pods = self.kube.get_json("pods", "-l", selector).get("items", [])
            live = [p for p in pods if p.get("status", {}).get("phase") == "Running"
                    and not p["metadata"].get("deletionTimestamp")]
            if live:
                self.pod = live[0]["metadata"]["name"]
                self._mark("running")
                return self.pod
            time.sleep(1.0)
        raise KubeError(f"sister pod ({selector}) not Running within {self.wait_s:.0f} s")

    def sidecar(self) -> None:
        assert self.pod
        self.kube.k("debug", self.pod, f"--image={self.tools_image}", f"--target={self.ins.container}",
                    "--share-processes", f"--container={SIDECAR}", "--", "sleep", str(int(self.wait_s) * 4),
                    mutates=True)
        if not self.kube.dry_run:
            deadline = time.monotonic() + self.wait_s
            while time.monotonic() < deadline:
                pod = self.kube.get_json("pod", self.pod)
                statuses = pod.get("status", {}).get("ephemeralContainerStatuses", [])
                states = {s["name"]: s.get("state", {}) for s in statuses}
                if "running" in states.get(SIDECAR, {}):
                    break
                time.sleep(0.5)
            else:
                raise KubeError(f"debug sidecar {SIDECAR} not running in {self.pod} within {self.wait_s:.0f} s")
        self._mark("sidecar")

    def exec(self, *argv: str, mutates: bool = True, check: bool = True, timeout: float | None = None) -> str | None:
        assert self.pod
        return self.kube.k("exec", self.pod, "-c", SIDECAR, "--", *argv, mutates=mutates, defer=True,
                           check=check, timeout=timeout)

    def capture_one(self, index: int, kernel: str, stage: Path) -> dict[str, Any]:
        """One attach session in the sidecar, its report copied out; returns its sources record."""
        stem = report_stem(kernel, index)
        remote = f"{POD_DIR}/{Path(stem).name}.ncu-rep"
        self.exec("mkdir", "-p", POD_DIR)
        try:
            version = self.exec("ncu", "--version", mutates=False) or ""
        except KubeError as exc:
            raise KubeError(f"no working ncu in the sidecar ({self.tools_image}): {exc}; pass --tools-image with "
                            "ncu on its PATH") from exc
        argv = capture_argv(self.plan, kernel, remote, "ncu")
        window = str(int(self.wait_s))
        # the session never ends by itself (ncu 2025.3.1): `timeout` bounds it inside the pod
        cmd = self.kube.kubectl_argv("exec", self.pod or "", "-c", SIDECAR, "--", "timeout", window, *argv)
        step = Step(cmd, True)
        self.kube.steps.append(step)
        t0 = time.monotonic()
        session = None if self.kube.dry_run else subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                                                  stderr=subprocess.STDOUT, text=True)
        try:
            if self.warmup:
                self.warmup(self, kernel)
            local = stage / f"{stem}.ncu-rep"
            if self.kube.dry_run:
                self.kube.k("cp", f"{self.pod}:{remote}", str(local), "-c", SIDECAR, defer=True)
            else:
                self._wait_report(remote, local, session)
            raw = self.exec("ncu", *import_argv(remote, "raw")[1:], mutates=False, check=False)
            if raw:
                (stage / f"{stem}-raw.csv").write_text(raw)
        finally:
            if session and session.poll() is None:
                session.terminate()
            if session:
                step.exit_code, step.seconds = session.wait(), time.monotonic() - t0
        self._mark("capture")
        return {"kernel_filter": kernel, "report": f"{stem}.ncu-rep", "pod": self.pod,
                "ncu_version": version.strip().splitlines()[-1] if version.strip() else None,
                "ncu_argv": ["timeout", window, *argv], "wall_s": round(time.monotonic() - t0, 2)}

    def _wait_report(self, remote: str, local: Path, session: subprocess.Popen[str] | None) -> None:
        deadline = time.monotonic() + self.wait_s
        while time.monotonic() < deadline:
            size = (self.exec("wc", "-c", remote, mutates=False, check=False) or "").split()
            if size and size[0].isdigit() and int(size[0]) > 0:
                self.kube.k("cp", f"{self.pod}:{remote}", str(local), "-c", SIDECAR, check=False)
                if local.exists():
                    try:
                        check_ncu_rep_framing(local.read_bytes(), remote)
                        self._mark("copy-out")
                        return
                    except KernelscopeError:
                        local.unlink()
            if session is not None and session.poll() is not None:
                out = session.stdout.read() if session.stdout else ""
                raise KubeError(f"ncu in {self.pod}/{SIDECAR} ended without a report (exit {session.returncode}): "
                                + " | ".join(out.strip().splitlines()[-3:]))
            time.sleep(1.0)
        raise KubeError(f"no complete report at {self.pod}:{remote} within {self.wait_s:.0f} s")

    def recycle_pod(self) -> None:
        """A launched process takes one attach session: the next kernel needs a fresh process."""
        if self.pod:
            self.kube.k("delete", "pod", self.pod, "--wait=true", f"--timeout={int(self.wait_s)}s", mutates=True)
        self.pod = None

    def cleanup(self) -> list[str]:
        """Remove our files in the pod and uninstall the sister; each step tried even if one fails."""
        problems = []
        if self.pod and self.pod != "<sister-pod>":
            try:
                self.exec("rm", "-rf", POD_DIR, check=False, timeout=60)
            except KubeError as exc:
                problems.append(str(exc))
        if self.installed:
            try:
                self.kube.h("uninstall", self.release, "--wait", "--timeout", f"{int(self.wait_s)}s",
                            "--ignore-not-found", timeout=self.wait_s + 30)
                self.kube.k("wait", "--for=delete", "pod", "-l", SISTER_SELECTOR.format(release=self.release),
                            f"--timeout={int(self.wait_s)}s", mutates=True, check=False, timeout=self.wait_s + 30)
            except KubeError as exc:
                problems.append(str(exc))
        return problems

    # -- the whole run ---------------------------------------------------------------------------
    def run(self, out: Path, command: list[str]) -> Path | None:
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with tempfile.TemporaryDirectory() as tmp:
            values_file = Path(tmp) / "values.json"
            values_file.write_text(json.dumps(self.values, indent=2))
            if self.kube.dry_run:  # every step recorded, none that changes the cluster run
                self._capture_all(values_file, Path(tmp))
                self.pod = None
                self.cleanup()
                return None
            error: BaseException | None = None
            try:
                with staging(out) as stage:
                    (stage / "sister-values.json").write_text(json.dumps(self.values, indent=2))
                    sources = self._capture_all(values_file, stage)
                    problems = self.cleanup()
                    self.installed = False
                    write_manifest(stage, self._context(command, started, problems), sources)
                return out
            except BaseException as exc:  # Ctrl-C included: clean up, then re-raise
                error = exc
                raise
            finally:
                if self.installed:
                    problems = self.cleanup()
                    if error is not None and problems:
                        raise KubeError(f"{error}; cleanup also failed: {'; '.join(problems)}") from error

    def _capture_all(self, values_file: Path, stage: Path) -> list[dict[str, Any]]:
        """Install, then per kernel: a running pod, the sidecar, one capture, a fresh pod for the next."""
        self.install(values_file)
        sources = []
        for i, kernel in enumerate(self.plan.kernels, 1):
            self.wait_running()
            self.sidecar()
            sources.append(self.capture_one(i, kernel, stage))
            if i < len(self.plan.kernels):
                self.recycle_pod()
        return sources

    def _context(self, command: list[str], started: str, problems: list[str]) -> dict[str, Any]:
        return {
            "command": command, "target": self.ins.command,
            "kubernetes": {"namespace": self.ins.namespace, "deployment": self.ins.deployment,
                           "replicas": self.ins.replicas, "image": self.ins.image, "node": self.ins.node,
                           "production_pod": self.ins.pod, "path": self.ins.path, "release": self.release,
                           "tools_image": self.tools_image},
            "metric_set": self.plan.metric_set, "addons": list(self.plan.addons),
            "scoping": {"kernels": list(self.plan.kernels), "launch_skip": self.plan.launch_skip,
                        "launch_count": self.plan.launch_count, "clock_control": self.plan.clock_control,
                        "replay_mode": self.plan.replay_mode},
            "commands_run": self.kube.log(), "cleanup_problems": problems,
            "started_at": started, "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
