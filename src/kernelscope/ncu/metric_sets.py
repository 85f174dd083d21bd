"""What kernelscope asks ncu for, built from the metric catalogue: ncu's own `basic`/`full` sets,
or our `roofline` list plus add-ons. Each add-on costs replay passes, so it is asked for by name.

Measured on an H200 with ncu 2025.3.1, one bf16 GEMM (bench/capture_cost.py): `basic` 10 passes,
`full` 38, the first roofline list 9 (today's list: 12, as the H200 fixtures' manifests record a
launch); ncu's Occupancy and LaunchStats sections add no pass (and
bring ncu's occupancy and launch rules); SpeedOfLight adds 7 (its SM and memory throughput are
breakdown metrics), which is why it is the `sol` add-on.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from .. import catalogue

MetricSet = Literal["roofline", "basic", "full"]
AddonName = Literal["stalls", "sol", "nvlink"]
SETS: tuple[MetricSet, ...] = ("roofline", "basic", "full")


class Addon(NamedTuple):
    """A metric-set add-on: the counters and sections it asks ncu for, and what it is for."""

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
    # as ncu's sections, not --metrics: asked by name on a GPU with no NVLink peer, nvlrx/nvltx__bytes fail
    # the whole kernel ("Unable to access ... metrics", exit 9, H200 with ncu 2025.3.1); the sections
    # only warn, and the report then says there is no link (nvlink__count_logical 0)
    "nvlink": Addon("nvlink", (), ("Nvlink", "Nvlink_Tables"),
                    "ncu's Nvlink sections: NVLink bytes received and sent, a collective's link (1 pass on a GPU "
                    "with no link; not yet measured with peers)"),
}
ADDON_NAMES: tuple[AddonName, ...] = tuple(ADDONS)


# -- naming the set a report was captured with, from what it holds ---------------------------------
# ncu 2025.3.1's own sets (`ncu --list-sets`, tests/fixtures/sets.tar.xz: ncu-list-sets.txt), by the
# name a report's context gives them: ncu's `roofline` is not ours, so it is `ncu-roofline`
_SOL_CHARTS = tuple(f"SpeedOfLight_Hierarchical{p}RooflineChart" for p in ("Double", "Half", "Single", "Tensor"))
NCU_SETS: dict[str, frozenset[str]] = {
    "basic": frozenset({"LaunchStats", "Occupancy", "SpeedOfLight", "WorkloadDistribution"}),
    "detailed": frozenset({"ComputeWorkloadAnalysis", "LaunchStats", "MemoryWorkloadAnalysis",
                           "MemoryWorkloadAnalysis_Chart", "Occupancy", "SourceCounters", "SpeedOfLight",
                           "SpeedOfLight_RooflineChart", "WorkloadDistribution"}),
    "full": frozenset({"ComputeWorkloadAnalysis", "InstructionStats", "LaunchStats", "MemoryWorkloadAnalysis",
                       "MemoryWorkloadAnalysis_Chart", "MemoryWorkloadAnalysis_Tables", "NumaAffinity",
                       "Nvlink_Tables", "Nvlink_Topology", "Occupancy", "PmSampling", "SchedulerStats",
                       "SourceCounters", "SpeedOfLight", *_SOL_CHARTS, "SpeedOfLight_RooflineChart",
                       "WarpStateStats", "WorkloadDistribution"}),
    "ncu-roofline": frozenset({"SpeedOfLight", *_SOL_CHARTS, "SpeedOfLight_RooflineChart", "WorkloadDistribution"}),
    "nvlink": frozenset({"Nvlink", "Nvlink_Tables", "Nvlink_Topology"}),
    "pmsampling": frozenset({"PmSampling", "PmSampling_WarpStates"}),
}
# ncu's sets held other sections in other versions and on other chips (2020.3's full had Nvlink and no
# NumaAffinity, 2022.4's detailed had the warp-state and scheduler sections, Turing and Ampere reports of
# 2024's full lack the hierarchical roofline charts, 2022's default set was LaunchStats, Occupancy and
# SpeedOfLight): a report that matches no set exactly is named by the sections only a set of that
# depth holds, deepest first (reports in ../shared/reports-public, ncu 2020.3-2026.2)
_SIGNATURES: tuple[tuple[str, frozenset[str]], ...] = (
    ("full", frozenset({"WarpStateStats", "SchedulerStats", "InstructionStats", "MemoryWorkloadAnalysis_Tables"})),
    ("detailed", frozenset({"ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis", "SourceCounters"})),
    ("ncu-roofline", frozenset({"SpeedOfLight", *_SOL_CHARTS})),
    ("basic", frozenset({"LaunchStats", "Occupancy", "SpeedOfLight"})),
)
METRICS_SECTION = "section0"  # the section ncu makes of a `--metrics` list
# what makes our roofline list a roofline: its work and traffic counters (the list grows; a report
# captured before a counter joined it still holds these)
ROOFLINE_CORE: frozenset[str] = frozenset({
    *(n for by_arch in catalogue.TENSOR_FLOPS.values() for n in by_arch["hopper"]),
    *catalogue.SIMT_COUNT.values(), catalogue.DURATION, catalogue.DRAM_READ, catalogue.DRAM_WRITE})
CUSTOM = "custom"


def recognise(report_sections: tuple[str, ...], metrics: frozenset[str]) -> str:
    """The set a report's launch was captured with, named from what it holds: one of ncu's sets
    when its sections are exactly that set's, or hold what only that set holds in any version
    (_SIGNATURES), and no `--metrics` list came with them; our roofline
    list and its add-ons (`roofline+stalls+sol`) when its sections are theirs and its `--metrics`
    hold the list's work and traffic counters (and the stall counters, for stalls); else custom."""
    named = frozenset(report_sections) - {METRICS_SECTION}
    if METRICS_SECTION not in report_sections:
        exact = next((name for name, wanted in NCU_SETS.items() if named == wanted), None)
        return exact or next((name for name, needs in _SIGNATURES if needs <= named), CUSTOM)
    if not ROOFLINE_CORE <= metrics:
        return CUSTOM
    addons = [a for a in ADDON_NAMES if ADDONS[a].metrics and set(ADDONS[a].metrics) <= metrics]
    addons += [a for a in ADDON_NAMES if ADDONS[a].sections and set(ADDONS[a].sections) <= named]
    if named != set(sections(tuple(addons))):
        return CUSTOM
    return "+".join(["roofline", *(a for a in ADDON_NAMES if a in addons)])


def metric_list(addons: tuple[AddonName, ...] = ()) -> tuple[str, ...]:
    """The roofline list plus the named add-ons' metrics, in a stable order without repeats."""
    names = list(ROOFLINE)
    for addon in addons:
        names += [m for m in ADDONS[addon].metrics if m not in names]
    return tuple(names)


def sections(addons: tuple[AddonName, ...] = ()) -> tuple[str, ...]:
    return ROOFLINE_SECTIONS + tuple(s for a in addons for s in ADDONS[a].sections)


if __name__ == "__main__":  # the list for scripts: python3 -m kernelscope.ncu.metric_sets [stalls] [sol] [nvlink]
    import sys

    chosen = tuple(a for a in ADDON_NAMES if a in sys.argv[1:])
    print(",".join(metric_list(chosen)))
