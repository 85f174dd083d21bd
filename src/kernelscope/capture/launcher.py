"""`kernelscope launch -- PROGRAM`: PROGRAM under `ncu --mode launch`, which holds each CUDA process
at its first CUDA call until `ncu --mode attach` (`kernelscope capture --attach`) connects. A server
held with no client never serves, so this watches it: it says when a process is held and how to
attach, and stops the program if it stayed held, with no attach, for the hold timeout (vLLM's
EngineCore is held 20-60 s after the server starts: the timeout counts from the hold).

Held is read from two signs together, since neither alone is certain: the attach port accepts
connections (a probe connects and closes at once, as `capture --attach` does before it attaches),
and the program's processes use almost no CPU (a process blocked at its first CUDA call does
nothing; one released to run loads its model, compiles, serves). Seen on the H200 with vLLM 0.26:
ncu printed "==PROF== Waiting for profiler to attach on ports 49152-49215" and the port accepted
while the EngineCore was held.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence

DEFAULT_PORT = 49152  # ncu's first attach port
POLL_S = 1.0
IDLE_CPU_SHARE = 0.05  # under this share of one core over the idle window, the processes are doing nothing
IDLE_WINDOW_S = 30.0


def accepting(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def group_cpu_s(pgid: int) -> float:
    """CPU seconds (user + system) of every process in the process group: ncu and all it started."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        if int(fields[2]) == pgid:  # fields after the name: state ppid pgrp ... utime(11) stime(12)
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def run(argv: Sequence[str], program: str, port: int | None, hold_timeout: float, say: Callable[[str], None],
        probe: Callable[[str, int], bool] = accepting, cpu: Callable[[int], float] = group_cpu_s) -> int:
    """Run the launch command to its end; its exit code, or 3 when it was stopped for want of an
    attach. Its own process group, so that its CPU can be read; a signal to us stops it too."""
    port = port or DEFAULT_PORT
    program = program.rsplit("/", 1)[-1]
    proc = subprocess.Popen(list(argv), start_new_session=True)
    said = False
    stuck_since: float | None = None
    samples: list[tuple[float, float]] = []  # (time, the group's CPU seconds)
    try:
        while proc.poll() is None:
            now = time.monotonic()
            samples = [s for s in samples if now - s[0] <= IDLE_WINDOW_S + POLL_S] + [(now, cpu(proc.pid))]
            idle = now - samples[0][0] >= IDLE_WINDOW_S * 0.9 and \
                samples[-1][1] - samples[0][1] < IDLE_CPU_SHARE * (now - samples[0][0])
            listening = probe("127.0.0.1", port)
            if listening and not said:
                said = True
                say(f"{program} is held at its first CUDA call, waiting for an attach on 127.0.0.1:{port}: "
                    f"kernelscope capture --attach 127.0.0.1:{port} --kernel ... --out DIR (stopped if it stays "
                    f"held with no attach for {hold_timeout:.0f} s: --hold-timeout)")
            stuck_since = (stuck_since or now) if listening and idle else None  # running or attached: not held
            if stuck_since is not None and now - stuck_since > hold_timeout:
                say(f"{program} stayed held at its first CUDA call with no attach for {hold_timeout:.0f} s "
                    "(its port open, its processes idle): stopping it rather than leave it held for ever")
                _end(proc)
                return 3
            time.sleep(POLL_S)
    except BaseException:
        _end(proc)
        raise
    return proc.returncode


def _end(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to its whole group (ncu forwards it), then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass
