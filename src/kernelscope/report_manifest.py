"""A capture's context as a bare `.ncu-rep` records it (ReportManifest), and the facts it shares with
a bundle's manifest (manifest.py): the GPU, the ncu binary, a harness op's analytic work. Apart
from the bundle manifest, whose records of runs, scoping and Kubernetes an analysis of a report
never builds: their dataclasses cost every analyze start-up ~5 ms."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GpuFacts:
    """From nvidia-smi where the capture ran (the pod's node for a Kubernetes capture)."""

    name: str | None = None
    driver_version: str | None = None
    driver_cuda_version: str | None = None


@dataclass(frozen=True)
class NcuFacts:
    """The ncu binary a capture ran: its path and its version."""

    path: str
    version: str


@dataclass(frozen=True)
class Analytic:
    """A harness op's analytic work: FLOP and the fewest DRAM bytes (inputs once, output once)."""

    op: str
    describe: str
    flops: float | None = None
    bytes: float | None = None
    warmup: int | None = None
    iters: int | None = None


REPORT_KIND = "ncu-report"


@dataclass(frozen=True)
class ReportManifest:
    """A bare `.ncu-rep`'s context, as the report itself records it (ingest.report_manifest reads
    it): the same facts a bundle's manifest gives its reports, where the report keeps them, and
    None or empty where it does not (a report records no driver version, model or --context)."""

    report: str  # the report, as the input named it
    ncu: NcuFacts | None  # the ncu binary as its command line ran it, and its version
    gpu: GpuFacts
    metric_set: str  # named from the sections and metrics it holds (ncu/metric_sets.recognise)
    sections: tuple[str, ...]  # ncu's sections in its launches (section0: a --metrics list)
    ncu_command: tuple[str, ...]  # ncu and its options, secrets redacted
    target: tuple[str, ...]  # the profiled program and its arguments, secrets redacted
    processes: tuple[str, ...]  # "pid 838 /tmp/sets/copy", one a profiled process
    host: str | None
    clock_control: str | None  # --clock-control as given; None: not given (ncu's default, base)
    clocks_hz: Mapping[str, float] = field(default_factory=dict)  # the device's maximum clocks (sm_max_hz, ...)
    created_at: str | None = None  # when ncu wrote it, ISO 8601 UTC
    kind: str = REPORT_KIND
    engine_evidence: str | None = None  # what in the report says whose kernels they are (serving.recognise)

    @property
    def metric_sets(self) -> str:
        return self.metric_set

    @property
    def shapes(self) -> str | None:
        return None  # a report records no shapes: its command line (target) may be any script's

    @property
    def multiplexed(self) -> bool:
        return False  # a bare report is one capture: its launches' counters are their own

    @property
    def graph_profiling(self) -> str | None:
        """ncu's --graph-profiling as its recorded command line gave it; None: not given or not recorded."""
        argv = list(self.ncu_command)
        for i, word in enumerate(argv):
            name, eq, value = word.partition("=")
            if name == "--graph-profiling":
                return value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
        return None

    @property
    def context(self) -> Mapping[str, str]:
        """What the recorded command says of the serving engine (serving.context_of): a vLLM report
        is read as vLLM's, its levers at the flag level; nobody told the report the model."""
        from .serving import context_of

        return context_of(self.target, self.engine_evidence)

    @property
    def analytic(self) -> Analytic | None:
        return None
