"""What a wrapped server pays under ncu, phase by phase (GPU machine, ncu on PATH, repo root).

A decode-like loop (bench/workloads/serve_loop.py, ~6 small kernels a step, one process) runs 14 s under
each setting; the median µs per step is taken over the last 8 s (after start-up):
  - alone;
  - ncu with a filter that matches nothing (the per-launch interception alone);
  - ncu matching the GEMM but skipping every launch (--launch-skip past the end): the skip phase;
  - the same skip done with --launch-skip-before-match (counts every launch, matches none);
  - after a one-launch capture, with the global filter mode and with --filter-mode per-gpu.

    PYTHONPATH=src python3 bench/wrap_cost.py
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

LOOP = [sys.executable, "bench/workloads/serve_loop.py", "--seconds", "14"]
NCU = ["ncu", "--clock-control", "none", "--target-processes", "all", "-f", "-o", "/tmp/wrap-cost",
       "--metrics", "gpu__time_duration.sum"]
CASES = (
    ("alone", []),
    ("filter matches nothing", ["--kernel-name", "kernelscope-matches-nothing"]),
    ("matching the GEMM, every launch skipped (--launch-skip)", ["--kernel-name", "regex:nvjet",
                                                                "--launch-skip", "100000000"]),
    ("matching the GEMM, skipped with --launch-skip-before-match", ["--kernel-name", "regex:nvjet",
                                                                   "--launch-skip-before-match", "100000000"]),
    ("after a 1-launch capture (global filter mode)", ["--kernel-name", "regex:nvjet", "--launch-skip", "50",
                                                       "--launch-count", "1"]),
    ("after a 1-launch capture (--filter-mode per-gpu)", ["--kernel-name", "regex:nvjet", "--launch-skip", "50",
                                                          "--launch-count", "1", "--filter-mode", "per-gpu"]),
)


def main() -> None:
    rows = []
    for name, args in CASES:
        argv = ([*NCU, *args] if args else []) + LOOP
        out = subprocess.run(argv, capture_output=True, text=True, timeout=300).stdout
        steps = [json.loads(line) for line in out.splitlines() if line.startswith("{") and "us_per_step" in line]
        late = [r["us_per_step"] for r in steps if r["t"] >= 6]
        rows.append({"case": name, "median_us_per_step": statistics.median(late) if late else None,
                     "intervals": len(late)})
    print(json.dumps(rows, indent=1))
    for r in rows:
        print(f"{r['case']:<62} {r['median_us_per_step'] or float('nan'):>12,.1f} µs/step")


if __name__ == "__main__":
    main()
