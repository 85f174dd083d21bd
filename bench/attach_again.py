"""Several attach sessions against one launched process (GPU machine, ncu on PATH, repo root).

`kernelscope launch` a serving loop, then three `kernelscope capture --attach` in a row (each ends
its ncu client with SIGTERM once its report is whole), and record each one's exit code and
wall time, and the loop's step time before, between and after the sessions.

    PYTHONPATH=src python3 bench/attach_again.py
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KS = [sys.executable, "-m", "kernelscope.cli"]


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    log = tmp / "app.log"
    app = subprocess.Popen([*KS, "launch", "--", sys.executable, "bench/serve_loop.py", "--seconds", "70", "--wall"],
                           stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    sessions = []
    try:
        for i, kernel in enumerate(("regex:norm", "regex:nvjet|gemm", "regex:norm"), 1):
            t0 = time.time()
            res = subprocess.run([*KS, "capture", "--attach", "127.0.0.1:49152", "--kernel", kernel,
                                  "--out", str(tmp / f"s{i}")], capture_output=True, text=True, timeout=200)
            sessions.append({"session": i, "kernel": kernel, "exit": res.returncode, "start": t0, "end": time.time(),
                             "said": res.stderr.strip().splitlines()[-1:]})
            time.sleep(4)
        alive = app.poll() is None
    finally:
        if app.poll() is None:
            os.killpg(app.pid, signal.SIGTERM)
            app.wait(30)
    rows = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{") and "us_per_step" in x]

    def window(a: float, b: float) -> float | None:
        v = [r["us_per_step"] for r in rows if a <= r["wall"] < b]
        return round(statistics.median(v), 1) if v else None

    for s in sessions:
        s["us_per_step_during"] = window(s["start"], s["end"])
    gaps = [window(a["end"] + 0.5, b["start"]) for a, b in zip(sessions, sessions[1:], strict=False)]
    out = {"sessions": [{k: v for k, v in s.items() if k not in ("start", "end")} for s in sessions],
           "us_per_step_between_sessions": gaps,
           "us_per_step_after_last": window(sessions[-1]["end"] + 0.5, sessions[-1]["end"] + 4),
           "app_alive_after_sessions": alive}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
