"""Where ncu runs: the one thing that varies between captures. The engine (engine.py) drives the
same loop through any of these; a Kubernetes pod is one more transport (k8s/transport.py).

- LocalProcess: `ncu ... PROGRAM` here; done when ncu exits.
- AttachSession: `ncu --mode attach` to a process started with `kernelscope launch`; the session
  never ends by itself (ncu 2025.3.1), so it is done once the report on disk is whole and has
  stopped growing, then the client is ended (SIGTERM to its group). Ended that way, the process
  takes another session: several kernels are several sessions, each with its own launch count.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from ..errors import KernelscopeError
from ..ingest.detect import check_ncu_rep_framing
from ..manifest import Transport
from ..report_manifest import GpuFacts
from .bundle import parse_gpu_facts

Progress = Callable[[str], None]
STABLE_S = 3.0  # a report unchanged this long, and whole, is complete


@dataclass(frozen=True)
class Outcome:
    exit_code: int | None
    output: str  # ncu's own output (its ==PROF== lines, errors)
    complete: bool  # a whole report is at the local path
    wall_s: float


class CaptureTransport(Protocol):
    kind: Transport

    def report_path(self, local: Path) -> str:
        """Where ncu writes the report for this local file (the same path, or one in a pod)."""
        ...

    def capture(self, argv: list[str], remote: str, local: Path, env: Mapping[str, str], timeout: float,
                progress: Progress) -> Outcome:
        """Run one ncu capture and bring a complete report to `local` (or say why not)."""
        ...

    def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        """A quick command where ncu runs (ncu --import, nvidia-smi): exit code and stdout."""
        ...

    def gpu_facts(self) -> GpuFacts:
        ...

    def end_unit(self) -> None:
        """Release what this unit started (a sister pod) before the next unit."""
        ...


def complete_report(path: Path) -> bool:
    """A report file that ncu has finished writing (its framing is whole)."""
    try:
        with path.open("rb") as fh:
            check_ncu_rep_framing(fh, str(path))
    except (OSError, KernelscopeError):
        return False
    return True


def _stop(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """End a child and everything it started (its own process group): SIGTERM, then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


class LocalProcess:
    """ncu launches the program here and profiles it; the capture ends when ncu exits."""

    kind: Transport = "local"
    _gpu: GpuFacts | None = None

    def report_path(self, local: Path) -> str:
        return str(local)

    def _spawn(self, argv: list[str], env: Mapping[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(argv, env=dict(env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def capture(self, argv: list[str], remote: str, local: Path, env: Mapping[str, str], timeout: float,
                progress: Progress) -> Outcome:
        t0 = time.monotonic()
        log_path = local.with_suffix(".session.log")
        with log_path.open("wb") as log:
            proc = self._spawn(argv, env, log)
            try:
                done = self._wait(proc, local, t0 + timeout)
            finally:
                _stop(proc)
        output = log_path.read_text(errors="replace")
        log_path.unlink()
        if not done:
            output += f"\n(kernelscope: no complete report within {timeout:.0f} s)"
        return Outcome(proc.returncode, output, complete_report(local), time.monotonic() - t0)

    def _wait(self, proc: subprocess.Popen[bytes], local: Path, deadline: float) -> bool:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return True
            time.sleep(0.2)
        return False

    def run(self, argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None) -> tuple[int, str]:
        try:
            res = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return 127, str(exc)
        return res.returncode, res.stdout

    def end_unit(self) -> None:
        pass

    def gpu_facts(self) -> GpuFacts:
        """Read once: the engine asks after each failed unit and again for the manifest."""
        if self._gpu is None:
            _, query = self.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], 30)
            _, banner = self.run(["nvidia-smi"], 30)
            self._gpu = parse_gpu_facts(query, banner)
        return self._gpu


class AttachSession(LocalProcess):
    """`ncu --mode attach` to a process waiting under `ncu --mode launch` on host:port."""

    kind: Transport = "attach"

    def __init__(self, host: str, port: int, listen_wait: float = 30.0) -> None:
        self.host, self.port, self.listen_wait = host, port, listen_wait

    def listening(self, progress: Progress = lambda _: None) -> bool:
        """True once something accepts TCP connections on host:port (a launched process held at its
        first CUDA call, waiting for ncu), within `listen_wait` seconds, saying every 10 s what it waits
        for: a server's CUDA process may come late (vLLM spawns its EngineCore 20-60 s after start).
        A process that already had its attach session stops listening until that session ends."""
        t0 = time.monotonic()
        said = t0
        while time.monotonic() - t0 < self.listen_wait:
            try:
                with socket.create_connection((self.host, self.port), timeout=1.0):
                    return True
            except OSError:
                time.sleep(0.5)
            if time.monotonic() - said >= 10:
                said = time.monotonic()
                progress(f"waiting for a process held by `kernelscope launch` on {self.host}:{self.port} (a CUDA "
                         f"process listens once it makes its first CUDA call: vLLM's EngineCore 20-60 s after the "
                         f"server starts): {said - t0:.0f} s of {self.listen_wait:.0f} s")
        return False

    def capture(self, argv: list[str], remote: str, local: Path, env: Mapping[str, str], timeout: float,
                progress: Progress) -> Outcome:
        """One session; the process listens again once the previous session has ended cleanly."""
        if not self.listening():
            return Outcome(None, "==ERROR== No attachable process found (kernelscope: nothing listens on "
                                 f"{self.host}:{self.port})", False, 0.0)
        return super().capture(argv, remote, local, env, timeout, progress)

    def _wait(self, proc: subprocess.Popen[bytes], local: Path, deadline: float) -> bool:
        """The session stays connected after --launch-count (ncu 2025.3.1): done when the report is
        whole and has stopped growing (ncu appends each profiled launch as it goes)."""
        last, stable_since = -1, 0.0
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return True
            size = local.stat().st_size if local.exists() else -1
            if size != last:
                last, stable_since = size, time.monotonic()
            elif size > 0 and time.monotonic() - stable_since >= STABLE_S and complete_report(local):
                return True
            time.sleep(0.5)
        return False
