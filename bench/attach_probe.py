"""Probe how ncu's launch/attach sessions behave on this machine (GPU machine, ncu on PATH).

Starts bench/serve_loop.py under `ncu --mode launch`, then makes two `--mode attach` sessions
one after the other, and records, with times: whether the attach port accepts connections (held,
during a session, after it), whether the app runs before any attach, whether
each attach session ends by itself after --launch-count, what SIGINT to it does, whether a
report is written, and the app's step time throughout. Prints one JSON document.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/attach-probe")
T0 = time.monotonic()
events: list[dict] = []


def ev(what: str, **kw: object) -> None:
    events.append({"t": round(time.monotonic() - T0, 2), "event": what, **kw})


def watch_port(port: int = 49152) -> None:
    """The launched process's attach port, accepting or not, every 0.5 s: its transitions are events
    (what `kernelscope launch` reads to know a process is held, and when a session took it)."""
    last = None
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                now = True
        except OSError:
            now = False
        if now != last:
            ev("port-accepting" if now else "port-refusing", port=port)
            last = now
        time.sleep(0.5)


def app_lines() -> list[dict]:
    rows = []
    for line in (OUT / "app.log").read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            rows.append({"text": line})
    return rows


def attach(name: str, settle: float, kernel: str = "regex:gemm|nvjet") -> None:
    rep = OUT / name
    argv = ["ncu", "--mode", "attach", "--hostname", "127.0.0.1", "--clock-control", "none",
            "--kernel-name", kernel, "--launch-count", "1", "--metrics", "gpu__time_duration.sum",
            "-f", "-o", str(rep)]
    log = (OUT / f"{name}.log").open("w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    ev(f"{name}-start")
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)
    ev(f"{name}-after-settle", alive=proc.poll() is None, report=Path(f"{rep}.ncu-rep").exists(),
       rc=proc.poll())
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        ev(f"{name}-sigint")
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            ev(f"{name}-killed")
    ev(f"{name}-end", rc=proc.returncode, report=Path(f"{rep}.ncu-rep").exists(),
       output=(OUT / f"{name}.log").read_text()[-1500:])


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    app = subprocess.Popen(["ncu", "--mode", "launch", "python3", "bench/serve_loop.py", "--seconds", "45"],
                           stdout=(OUT / "app.log").open("w"), stderr=subprocess.STDOUT)
    ev("app-launched")
    threading.Thread(target=watch_port, daemon=True).start()
    time.sleep(8)
    ev("before-attach", app_log_lines=len(app_lines()))
    attach("attach1", settle=10)
    time.sleep(4)
    attach("attach2", settle=10)
    time.sleep(4)
    ev("after-attaches", app_alive=app.poll() is None)
    try:
        app.wait(timeout=90)
    except subprocess.TimeoutExpired:
        app.kill()
    ev("app-end", rc=app.returncode)
    print(json.dumps({"events": events, "app": app_lines()}, indent=1))


if __name__ == "__main__":
    main()
