"""Replayed against multiplexed, side by side in one run: what a capture costs a serving process
(GPU machine, ncu on PATH, repo root, torch).

A serving-like loop (bench/workloads/serve_loop.py: a decode step of ~6 small kernels, one process)
runs held by `kernelscope launch`; kernelscope then captures its GEMM through attach sessions: the
roofline list replayed on one launch, then `--multiplex` (14 sessions of 3-5 passes: a held process
takes no session of one pass, ncu/multiplex.py), then replayed again (the process still takes a
session). For each it prints the passes a profiled launch took, the capture's wall time and its
runs, and the loop's step time while the capture ran (the served request's latency, as a decode
step stands for it) against the loop's own between captures. Measured on the H200, 2026-12-02:
docs/measurements.md, "Multiplexed capture".

    PYTHONPATH=src python3 bench/multiplex_cost.py
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KS = [sys.executable, "-m", "kernelscope.cli"]
LOOP = [sys.executable, "bench/workloads/serve_loop.py", "--seconds", "400", "--every", "0.25", "--wall"]


def main() -> None:
    out = Path(tempfile.mkdtemp(prefix="mux-cost-"))
    log = (out / "loop.log").open("w")
    server = subprocess.Popen([*KS, "launch", "--", *LOOP], stdout=log, stderr=subprocess.STDOUT)
    windows = {}
    try:
        time.sleep(5)
        for mode in ("replayed", "multiplexed", "replayed again"):
            time.sleep(8)  # the loop between captures: its own step time
            flag = ["--multiplex"] if mode == "multiplexed" else []
            t0 = time.time()
            done = subprocess.run([*KS, "capture", "--attach", "127.0.0.1:49152", "--kernel", "regex:nvjet",
                                   "--launch-skip", "20", *flag, "--timeout", "300",
                                   "--out", str(out / mode.replace(" ", "-"))], capture_output=True, text=True)
            windows[mode] = (t0, time.time(), done.returncode, done.stderr.strip().splitlines()[-1:])
        time.sleep(8)
    finally:
        server.terminate()
        server.wait(30)
        log.close()
    rows = [json.loads(line) for line in (out / "loop.log").read_text().splitlines()
            if line.startswith("{") and "us_per_step" in line]
    between = [r["us_per_step"] for r in rows if not any(a - 1 <= r["wall"] <= b + 1 for a, b, *_ in windows.values())
               and r["t"] > 5]
    print(f"loop between captures: median {statistics.median(between):,.0f} µs/step ({len(between)} samples)")
    for mode, (a, b, code, said) in windows.items():
        during = [r["us_per_step"] for r in rows if a <= r["wall"] <= b]
        manifest = out / mode.replace(" ", "-") / "manifest.json"
        runs = json.loads(manifest.read_text())["captures"] if manifest.exists() else []
        passes = sorted({p for r in runs for p in r["passes"]})
        launches = sum(len(r["passes"]) for r in runs)
        each = f"{(b - a) / launches:.1f} s a profiled launch" if launches else "no launch profiled"
        print(f"{mode:<15} exit {code}  {b - a:6.1f} s ({each})  {len(runs)} ncu run(s)  "
              f"passes a profiled launch {passes}  "
              f"step during capture: median {statistics.median(during) if during else float('nan'):,.0f} µs, "
              f"max {max(during) if during else float('nan'):,.0f} µs  {said}")


if __name__ == "__main__":
    main()
