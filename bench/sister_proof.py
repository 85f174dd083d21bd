"""The k8s sister mechanism on one GPU machine (run from the repository root, ncu on PATH).

As the runbook does in a pod: per kernel, a fresh server-like process (bench/serve_loop.py)
started attachable with `kernelscope launch`, one `kernelscope capture --attach` session, then the
process is ended (the pod is recycled). Records the step time alone, and for each capture the steps
before the attach, during the session, and after it, and analyses both bundles.

    PYTHONPATH=src python3 bench/sister_proof.py OUTDIR
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

KS = [sys.executable, "-m", "kernelscope.cli"]
LOOP = [sys.executable, "bench/serve_loop.py"]


def steps(log: Path) -> list[dict]:
    out = []
    for line in log.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if "us_per_step" in row:
            out.append(row)
    return out


def window(rows: list[dict], t0: float, t1: float) -> dict:
    per = [r["us_per_step"] for r in rows if t0 <= r["wall"] < t1]
    return {"intervals": len(per), "median_us_per_step": statistics.median(per) if per else None}


def one(kernel: str, out: Path, tag: str) -> dict:
    log = out / f"{tag}-app.log"
    env = {**os.environ, "KS_WALL": "1"}
    app = subprocess.Popen([*KS, "launch", "--", *LOOP, "--seconds", "20", "--wall"], stdout=log.open("w"),
                           stderr=subprocess.STDOUT, start_new_session=True, env=env)
    t_launch = time.time()
    time.sleep(4)
    t_attach = time.time()
    cap = subprocess.run([*KS, "capture", "--attach", "127.0.0.1:49152", "--kernel", kernel, "--out",
                          str(out / tag)], capture_output=True, text=True)
    t_done = time.time()
    time.sleep(4)
    t_end = time.time()
    os.killpg(app.pid, signal.SIGKILL)
    app.wait()
    rows = steps(log)
    return {"kernel": kernel, "capture_exit": cap.returncode, "capture_s": round(t_done - t_attach, 1),
            "held_before_attach": window(rows, t_launch, t_attach),
            "during_session": window(rows, t_attach, t_done), "after_session": window(rows, t_done, t_end),
            "capture_stderr_tail": cap.stderr.strip().splitlines()[-2:]}


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/sister-proof")
    out.mkdir(parents=True, exist_ok=True)
    alone = subprocess.run([*LOOP, "--seconds", "6", "--wall"], capture_output=True, text=True).stdout
    (out / "alone.log").write_text(alone)
    base = [r["us_per_step"] for r in steps(out / "alone.log")[1:]]
    result = {"alone_median_us_per_step": statistics.median(base),
              "captures": [one("regex:nvjet|gemm", out, "c1"), one("regex:norm", out, "c2")]}
    print(json.dumps(result, indent=1))
    for tag in ("c1", "c2"):
        subprocess.run([*KS, "analyze", str(out / tag)], env={**os.environ, "COLUMNS": "160"})


if __name__ == "__main__":
    main()
