"""Ingest + analysis speed on a real 300-launch report (bench/data/many.ncu-rep.gz).

Prints kernels per second for kernelscope (ingest + derive + verdict), best of N runs, and
optionally the time `ncu --import --csv --page raw` takes on the same file (needs ncu; on the GPU
machine pass --ncu ncu). Pin to 2 cores with `taskset -c 0,1` to match the issue's setting.

    taskset -c 0,1 python3 bench/ingest.py [--runs 5] [--ncu /usr/local/cuda/bin/ncu]
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import tempfile
import time
from pathlib import Path

from kernelscope import analyze

DATA = Path(__file__).parent / "data" / "many.ncu-rep.gz"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ncu", help="ncu binary: also time `ncu --import FILE --csv --page raw`")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "many.ncu-rep"
        report.write_bytes(gzip.decompress(DATA.read_bytes()))
        best = float("inf")
        n = 0
        for _ in range(args.runs):
            t0 = time.perf_counter()
            items, _ = analyze(str(report))
            best = min(best, time.perf_counter() - t0)
            n = len(items)
        cores = len(os.sched_getaffinity(0))
        print(f"kernelscope analyze: {n} launches in {best * 1e3:.0f} ms = {n / best:,.0f} kernels/s "
              f"(best of {args.runs}, {cores} cores, report {report.stat().st_size / 1e6:.1f} MB)")
        if args.ncu:
            best_ncu = float("inf")
            for _ in range(args.runs):
                t0 = time.perf_counter()
                subprocess.run([args.ncu, "--import", str(report), "--csv", "--page", "raw"],
                               check=True, stdout=subprocess.DEVNULL)
                best_ncu = min(best_ncu, time.perf_counter() - t0)
            print(f"ncu --import --csv --page raw: {best_ncu * 1e3:.0f} ms = {n / best_ncu:,.0f} kernels/s "
                  f"(best of {args.runs}); kernelscope is {best_ncu / best:.1f}x faster")


if __name__ == "__main__":
    main()
