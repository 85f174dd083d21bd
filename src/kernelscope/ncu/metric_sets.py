"""What kernelscope asks ncu for, built from the metric catalogue: ncu's own `basic`/`full` sets,
or our `roofline` list plus add-ons. Each add-on costs replay passes, so it is asked for by name.

Measured on an H200 with ncu 2025.3.1, one bf16 GEMM (bench/capture_cost.py): `basic` 10 passes,
`full` 38, the first roofline list 9; ncu's Occupancy and LaunchStats sections add no pass (and
bring ncu's occupancy and launch rules); SpeedOfLight adds 7 (its SM and memory throughput are
breakdown metrics), which is why it is the `sol` add-on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .. import catalogue

MetricSet = Literal["roofline", "basic", "full"]
AddonName = Literal["stalls", "sol"]
SETS: tuple[MetricSet, ...] = ("roofline", "basic", "full")


@dataclass(frozen=True)
class Addon:
    name: AddonName
    metrics: tuple[str, ...]
    sections: tuple[str, ...]
    what: str


ROOFLINE: tuple[str, ...] = catalogue.group("roofline")
ROOFLINE_SECTIONS: tuple[str, ...] = ("Occupancy", "LaunchStats")  # no extra pass; ncu's rules come with them
ADDONS: dict[AddonName, Addon] = {
    "stalls": Addon("stalls", catalogue.group("stalls"), (), "warp-stall reasons (about +6 passes)"),
    "sol": Addon("sol", (), ("SpeedOfLight",),
                 "ncu's SpeedOfLight section: SM and memory throughput and ncu's bottleneck rule (+7 passes)"),
}
ADDON_NAMES: tuple[AddonName, ...] = tuple(ADDONS)


def metric_list(addons: tuple[AddonName, ...] = ()) -> tuple[str, ...]:
    """The roofline list plus the named add-ons' metrics, in a stable order without repeats."""
    names = list(ROOFLINE)
    for addon in addons:
        names += [m for m in ADDONS[addon].metrics if m not in names]
    return tuple(names)


def sections(addons: tuple[AddonName, ...] = ()) -> tuple[str, ...]:
    return ROOFLINE_SECTIONS + tuple(s for a in addons for s in ADDONS[a].sections)


if __name__ == "__main__":  # the list for scripts: python3 -m kernelscope.ncu.metric_sets [stalls] [sol]
    import sys

    chosen = tuple(a for a in ADDON_NAMES if a in sys.argv[1:])
    print(",".join(metric_list(chosen)))
