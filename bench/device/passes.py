"""Which of kernelscope's counters fit in one ncu pass together: the groups `capture --multiplex`
collects one a launch. Measured, not guessed: ncu prints the passes each profiled launch took.

For the roofline list and the stall add-on, it cuts the counters of each unit (the prefix of their
name) into runs of six and halves a run until each part takes one pass with `gpu__time_duration.sum`
and ncu's Occupancy and LaunchStats sections, on bench/workloads/toy.cu's FMA kernel (the pass count
is the chip's and ncu's, not the kernel's). Then it times a profiled
launch with the whole list (replayed) and with each group alone. On the GPU machine, from the root:

    nvcc -O3 -arch=sm_90 -o /tmp/toy bench/workloads/toy.cu
    PYTHONPATH=src python3 bench/device/passes.py /tmp/toy > groups.json
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

from kernelscope import catalogue
from kernelscope.ncu.metric_sets import ROOFLINE_SECTIONS, metric_list

NCU = os.environ.get("NCU", "ncu")
PASSES = re.compile(r"- (\d+) pass(?:es)?")
BASE = catalogue.DURATION


def ncu(toy: str, metrics: list[str], kernel: str = "fma_loop", count: int = 1, steps: int = 2
        ) -> tuple[list[int], float]:
    argv = [NCU, "--clock-control", "none", "--metrics", ",".join(metrics),
            *(a for s in ROOFLINE_SECTIONS for a in ("--section", s)), "--kernel-name", kernel,
            "--launch-count", str(count), toy, str(steps)]
    t = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - t
    found = [int(p) for p in PASSES.findall(out.stdout + out.stderr)]
    if out.returncode != 0 or not found:
        raise SystemExit(f"ncu failed ({out.returncode}): {(out.stdout + out.stderr)[-800:]}")
    return found, wall


def one_pass(toy: str, members: list[str]) -> bool:
    took = max(ncu(toy, [BASE, *members])[0])
    print(f"{took} pass(es): {len(members)} counters from {members[0]}", file=sys.stderr, flush=True)
    return took == 1


def settle(toy: str, members: list[str]) -> list[list[str]]:
    """`members` as groups of one pass each: whole if it fits, else each half settled (a lone counter
    that takes more than one pass is a group of its own)."""
    if len(members) == 1 or one_pass(toy, members):
        return [[BASE, *members]]
    half = len(members) // 2
    return settle(toy, members[:half]) + settle(toy, members[half:])


def groups(toy: str, metrics: list[str], size: int = 6) -> list[list[str]]:
    """Counters of one unit (their name's prefix) in runs of `size`, each settled, four at a time
    (ncu serialises only the profiled launch itself)."""
    from concurrent.futures import ThreadPoolExecutor

    left = sorted((m for m in metrics if m != BASE), key=lambda m: (m.split("__")[0], m))
    units: dict[str, list[str]] = {}
    for m in left:
        units.setdefault(m.split("__")[0], []).append(m)
    runs = [ms[i:i + size] for ms in units.values() for i in range(0, len(ms), size)]
    with ThreadPoolExecutor(4) as pool:
        return [g for found in pool.map(lambda r: settle(toy, r), runs) for g in found]


def main() -> int:
    toy = sys.argv[1]
    metrics = list(metric_list(("stalls",)))
    found = groups(toy, metrics)

    bare = time.perf_counter()
    subprocess.run([toy, "30"], check=True)
    bare = time.perf_counter() - bare
    timing = {}
    for label, ms in (("whole list", metrics), ("roofline list", list(metric_list()))):
        p, wall = ncu(toy, ms, "regex:.", 60, 30)
        timing[label] = {"passes": max(p), "s_per_profiled_launch": round((wall - bare) / 60, 4)}
    p, wall = ncu(toy, found[0], "regex:.", 60, 30)
    timing["group 1"] = {"passes": max(p), "s_per_profiled_launch": round((wall - bare) / 60, 4)}
    version = subprocess.run([NCU, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    json.dump({"ncu": version, "metrics": len(metrics), "groups": found,
               "bare_s_30_steps": round(bare, 3), "timing": timing}, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
