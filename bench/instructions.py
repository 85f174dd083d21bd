"""Instructions a launch: analyze's CPU cost counted, not timed, so a change can be judged on a machine
whose speed moves more than the change (this 2-core one varies by a third from hour to hour).

Runs `analyze --format json --jobs 1` under valgrind's cachegrind (no cache simulation) on a raw CSV
of 1 launch and of N launches (bench/scale.py's replicated fixture rows) and prints the instructions
of start-up and of each launch after it. The count is the same run to run to a few parts in 10,000;
at ~4-5 instructions a nanosecond on this machine, 3 M instructions a launch is ~650 µs. Needs
valgrind on PATH (about a minute for N = 1,000). To count another tree (the before column), point
PYTHONPATH at its src/.

    PYTHONPATH=src python3 bench/instructions.py [--launches 1000]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from scale import raw_csv

COUNT = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(csv: Path, cache: Path) -> int:
    """The instructions one analyze of `csv` runs, start-up included."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPYCACHEPREFIX": str(cache)}
    argv = [sys.executable, "-m", "kernelscope.cli", "analyze", str(csv), "--format", "json", "--jobs", "1"]
    subprocess.run(argv, env=env, check=True, capture_output=True)  # compile the bytecode once, as installed
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           *argv], env=env, check=True, capture_output=True, text=True)
    found = COUNT.search(done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=1000)
    n = ap.parse_args().launches
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        raw_csv(1, d / "one.csv")
        raw_csv(n, d / "many.csv")
        one, many = instructions(d / "one.csv", d / "pycache"), instructions(d / "many.csv", d / "pycache")
    print(f"analyze --jobs 1, raw CSV -> JSON: start-up and 1 launch {one / 1e6:,.0f} M instructions; "
          f"{(many - one) / (n - 1) / 1e6:.2f} M a launch after it ({n:,} launches)")


if __name__ == "__main__":
    main()
