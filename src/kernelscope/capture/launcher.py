"""`kernelscope launch -- PROGRAM`: PROGRAM under `ncu --mode launch`, which holds each CUDA process
at its first CUDA call until `ncu --mode attach` (`kernelscope capture --attach`) connects. A server
held with no client never serves, so this watches the attach port: it says when a process is held
and how to attach, says when a session took it, and stops the program if no session came within
the hold timeout, rather than leave it held for ever (vLLM's EngineCore is held 20-60 s after the
server starts: the timeout counts from the hold, not from the start).

The port is read by connecting to it and closing at once, as `capture --attach` does before it
attaches (bench/attach_probe.py records what the port does before, during and after a session).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence

DEFAULT_PORT = 49152  # ncu's first attach port
POLL_S = 1.0


def accepting(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def run(argv: Sequence[str], program: str, port: int | None, hold_timeout: float, say: Callable[[str], None],
        probe: Callable[[str, int], bool] = accepting) -> int:
    """Run the launch command to its end; its exit code, or 3 when it was stopped for want of an
    attach. Ctrl-C and SIGTERM reach the program through ncu (--forward-signals); ours stop it too."""
    port = port or DEFAULT_PORT
    program = program.rsplit("/", 1)[-1]
    proc = subprocess.Popen(list(argv))
    held_at: float | None = None
    taken = False
    try:
        while proc.poll() is None:
            now_accepting = probe("127.0.0.1", port)
            if now_accepting and held_at is None:
                held_at = time.monotonic()
                say(f"{program} is held at its first CUDA call, waiting for an "
                    f"attach on 127.0.0.1:{port}: kernelscope capture --attach 127.0.0.1:{port} --kernel ... --out "
                    f"DIR (stopped if none comes within {hold_timeout:.0f} s: --hold-timeout)")
            elif held_at is not None and not taken and not now_accepting:
                taken = True
                say(f"an attach session took the process on port {port}: it runs")
            elif held_at is not None and not taken and time.monotonic() - held_at > hold_timeout:
                say(f"no attach within {hold_timeout:.0f} s of the hold: stopping {program} rather than leave "
                    "it held at its first CUDA call (it would never serve)")
                _end(proc)
                return 3
            time.sleep(POLL_S)
    except BaseException:
        _end(proc)
        raise
    return proc.returncode


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
