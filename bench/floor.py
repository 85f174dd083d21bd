"""The launch-and-ramp floor of this GPU, from tests/fixtures/floor-raw.csv (tests/fixtures/make/floor.sh)
bench/data/many.ncu-rep.gz (300 launches of ATen's in-place elementwise kernels, 1 KiB-4 MiB) and the
capture sets' ramp.ncu-rep (ATen's in-place multiply over 2**8..2**26 elements):
each launch's DRAM bytes and duration, and the lower envelope of them all (for a byte count, the least
time any launch moving at least as many DRAM bytes took), printed as the points analysis/rules.py keeps
in RAMP_FLOOR_NS, with each point's kernel and bandwidth.

    PYTHONPATH=src python3 bench/floor.py [REPORT ...]
"""

from __future__ import annotations

import math
import sys
import tarfile
import tempfile
from pathlib import Path

import kernelscope


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(p) for p in sys.argv[1:]] or [Path("tests/fixtures/floor-raw.csv"),
                                                     Path("bench/data/many.ncu-rep.gz"), _ramp(Path(tmp))]
        points = sorted((r.dram_bytes or 0.0, r.duration_ns or 0.0, r.name) for path in paths
                        for r in kernelscope.load(path) if r.duration_ns is not None and r.dram_bytes is not None)
    print(f"{len(points)} launches from {', '.join(map(str, paths))}")
    print(f"{'kernel':<14} {'DRAM bytes':>14} {'µs':>10} {'TB/s':>6}")
    for moved, ns, name in points:
        print(f"{name:<14} {moved:>14,.0f} {ns / 1e3:>10.2f} {moved / ns / 1e3:>6.2f}")
    print("\nfloor (the lower convex hull in log-log of the fastest launch at each byte count: between two")
    print("measured points a kernel moving as many bytes is held to the straight line joining them, so a slower")
    print("kind of kernel -- a write or a copy -- never raises the floor; RAMP_FLOOR_NS points, DRAM bytes -> ns):")
    hull = lower_hull(points)
    print("    (" + ", ".join(f"({round(m):_}, {round(t):_})" for m, t, _ in hull) + ")")
    for moved, ns, name in hull:
        print(f"  {name[:30]:<30} {moved:>14,.0f} B  {ns / 1e3:>9.2f} µs  {moved / ns / 1e3:5.2f} TB/s")


def _ramp(tmp: Path) -> Path:
    """ramp.ncu-rep of the capture-set fixtures: ATen's in-place multiply over 2**8..2**26 elements."""
    with tarfile.open("tests/fixtures/sets.tar.xz") as tar:
        tar.extractall(tmp, members=[m for m in tar if m.name == "ramp.ncu-rep"])  # our own fixture archive
    return tmp / "ramp.ncu-rep"


def lower_hull(points: list[tuple[float, float, str]]) -> list[tuple[float, float, str]]:
    """The lower convex hull of (log bytes, log ns), left to right (Andrew's monotone chain); launches
    within 1 % of each other's bytes are one point, the fastest."""
    merged: list[tuple[float, float, str]] = []
    for p in sorted(x for x in points if x[0] > 0):
        if merged and p[0] <= merged[-1][0] * 1.01:
            merged[-1] = min(merged[-1], p, key=lambda q: q[1])
        else:
            merged.append(p)
    hull: list[tuple[float, float, str]] = []
    for p in merged:
        while len(hull) >= 2 and _cross(hull[-2], hull[-1], p) <= 0:
            hull.pop()
        hull.append(p)
    return hull


def _cross(o: tuple[float, float, str], a: tuple[float, float, str], b: tuple[float, float, str]) -> float:
    ox, oy, ax, ay, bx, by = (math.log(v) for v in (o[0], o[1], a[0], a[1], b[0], b[1]))
    return (ax - ox) * (by - oy) - (ay - oy) * (bx - ox)


if __name__ == "__main__":
    main()
