"""What a capture costs (GPU machine, ncu on PATH; run from the repository root).

A. Passes and wall time of one scoped capture of one GEMM with --set basic, roofline,
   roofline + stalls, and full (through `kernelscope op`, so the numbers are the tool's own).
B. The slowdown of a serving-like loop (bench/workloads/serve_loop.py, a decode step of ~6 small kernels)
   under ncu: alone; attached with a kernel filter that matches nothing; during a scoped one-kernel
   `basic` capture; and the same with the step replayed as a CUDA graph, with ncu's default
   --graph-profiling node and with --graph-profiling graph.

    PYTHONPATH=src python3 bench/capture_cost.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NCU = ["ncu", "--clock-control", "none"]
LOOP = [sys.executable, "bench/workloads/serve_loop.py", "--seconds", "12"]


def part_a(tmp: Path) -> list[dict]:
    rows = []
    for name, extra in (("basic", ["--set", "basic"]), ("roofline", ["--set", "roofline"]),
                        ("roofline+stalls", ["--set", "roofline", "--add", "stalls"]), ("full", ["--set", "full"])):
        out = tmp / f"a-{name.replace('+', '-')}"
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-m", "kernelscope.cli", "op", "gemm", "--m", "4096", "--n", "4096",
                        "--k", "4096", "--out", str(out), *extra], check=True, capture_output=True)
        src = json.loads((out / "capture_sources.json").read_text())[0]
        rows.append({"set": name, "passes": src["passes"], "ncu_wall_s": src["wall_s"],
                     "command_wall_s": round(time.monotonic() - t0, 1)})
    return rows


def steps(output: str) -> list[dict]:
    return [r for r in map(_json, output.splitlines()) if r and "us_per_step" in r]


def _json(line: str) -> dict | None:
    try:
        return json.loads(line)
    except ValueError:
        return None


def part_b() -> list[dict]:
    scoped = ["--kernel-name", "regex:nvjet|gemm", "--launch-skip", "3000", "--launch-count", "1", "--set", "basic"]
    nomatch = ["--kernel-name", "kernelscope-matches-nothing"]
    cases = [
        ("alone, eager", [], []),
        ("ncu attached, filter matches nothing, eager", nomatch, []),
        ("ncu scoped basic capture of 1 kernel, eager", scoped, []),
        ("alone, CUDA graph", [], ["--graph"]),
        ("ncu attached, filter matches nothing, graph (--graph-profiling node)", nomatch, ["--graph"]),
        ("ncu attached, filter matches nothing, graph (--graph-profiling graph)",
         [*nomatch, "--graph-profiling", "graph"], ["--graph"]),
    ]
    rows = []
    for name, ncu_args, loop_args in cases:
        argv = ([*NCU, "-f", "-o", "/tmp/cc-report", *ncu_args] if ncu_args else []) + LOOP + loop_args
        out = subprocess.run(argv, capture_output=True, text=True, timeout=300).stdout
        s = steps(out)[1:]  # the first interval holds start-up
        per = [r["us_per_step"] for r in s]
        rows.append({"case": name, "median_us_per_step": statistics.median(per) if per else None,
                     "max_interval_us_per_step": max(per) if per else None, "intervals": len(per)})
    return rows


def main() -> None:
    os.environ.setdefault("PYTHONPATH", "src")
    with tempfile.TemporaryDirectory() as tmp:
        a = part_a(Path(tmp))
    print("A. one GEMM 4096^3 bf16, one scoped capture")
    for r in a:
        print(f"  {r['set']:<16} passes {r['passes']}  ncu wall {r['ncu_wall_s']:6.1f} s  "
              f"(command {r['command_wall_s']} s)")
    b = part_b()
    print("B. serving-like loop (bench/workloads/serve_loop.py)")
    for r in b:
        print(f"  {r['case']:<72} median {r['median_us_per_step']} us/step, worst interval "
              f"{r['max_interval_us_per_step']} us/step")
    print(json.dumps({"passes_and_wall": a, "serving": b}))


if __name__ == "__main__":
    main()
