"""Plain data that flows one way: RawKernel (ingest) -> KernelRecord (derive) -> Assessment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

# The range of every number kernelscope reads or derives: 0, or a magnitude from 1e-30 to 1e30. No
# ncu counter comes near either end in base units (a uint64 counter stops at 1.8e19; the smallest
# nonzero counter in the fixtures is 1.6e-8), so a value outside is corruption. Held at every door
# (counters, ceilings, documents, derived figures), it keeps every figure's arithmetic finite: a
# ratio of two in-range values cannot overflow, nor a division by a subnormal reach infinity.
MAX_MAGNITUDE = 1e30
MIN_MAGNITUDE = 1e-30


OUT_OF_RANGE = "out of range (not 0, nor a magnitude from 1e-30 to 1e30), so not measured"


def in_range(value: float) -> bool:
    """A finite 0, or a magnitude within [MIN_MAGNITUDE, MAX_MAGNITUDE] (NaN fails every comparison)."""
    return value == 0 or MIN_MAGNITUDE <= abs(value) <= MAX_MAGNITUDE


def all_in_range(values: Sequence[float]) -> bool:
    """Every value in range, in C loops (the common case of a row of counters or a launch's figures);
    False can also mean they sum past MAX_MAGNITUDE: then check them one by one. A NaN or an
    infinity makes the sum one, which no comparison passes."""
    return sum(map(abs, values)) <= MAX_MAGNITUDE and min(filter(None, map(abs, values)), default=1.0) >= MIN_MAGNITUDE


Bound = Literal["compute", "memory", "latency", "unmeasured"]
# What limits a kernel: a roof (a precision's tensor or SIMT peak, HBM, L2, an SM pipe, the issue
# slots, or for a collective its NVLink), or none reached (latency; launch overhead; a grid smaller
# than one wave), or not measured.
LimiterKind = Literal["tensor", "simt", "hbm", "l2", "pipe", "issue", "nvlink", "latency", "launch", "grid",
                      "unmeasured"]
ProvenanceKind = Literal["library", "open", "user"]  # who can change the kernel: a vendor, a project, you
TensorPath = Literal["wgmma", "tcgen05", "mma.sync"]
Workload = Literal["kernel", "graph", "range", "cmdlist"]  # ncu_report's IAction.workload_type


@dataclass(frozen=True)
class RuleResult:
    """One of ncu's own rule results stored in the report (e.g. SOLBottleneck "High Throughput")."""

    rule: str
    section: str
    title: str
    message: str
    kind: str  # ncu's message type: ok, optimization, warning, error
    speedup_pct: float | None = None  # ncu's own estimate of the time it could save, % of the kernel's


@dataclass(frozen=True)
class Part:
    """One launch a multiplexed launch's counters came from (capture --multiplex: one counter group a
    launch of the same kernel, ingest/multiplexed.py merges them): which group, which launch, what it
    gave, and why it was not merged when it was not."""

    group: int  # the counter group (ncu/multiplex.py), 1-based
    launch_id: int
    report: str
    duration_ns: float | None
    counters: tuple[str, ...]  # the counters it holds besides those every launch holds
    passes: int | None  # ncu's passes for it: 1 is no replay; None: not recorded
    refused: str | None = None  # why its counters were left out: another grid, block or duration


@dataclass(frozen=True)
class RawKernel:
    """One profiled kernel launch as a reader found it: identity plus metrics in base units.

    `metrics` holds only what the file holds: a metric that was not collected is absent, never 0.
    Units are normalised on read (time in ns, sizes in bytes, percentages 0-100, clocks in Hz).
    """

    source: str
    launch_id: int
    name: str
    name_full: str
    device: str | None
    grid: str | None
    block: str | None
    metrics: Mapping[str, float] = field(default_factory=dict)
    rules: tuple[RuleResult, ...] = ()
    out_of_range: tuple[str, ...] = ()  # counters whose value was out of range (in_range): left out of metrics
    code_file: str | None = None  # the source file of its first instruction, where the report has line info
    workload: Workload = "kernel"  # what the result is: one kernel launch, or (--graph-profiling graph) a whole graph
    parts: tuple[Part, ...] = ()  # a multiplexed launch's launches, one counter group each; () for any other
    notes: tuple[str, ...] = ()  # what its reader knows that its counters do not say (a multiplexed merge's gaps)


@dataclass(frozen=True)
class KernelRecord:
    """Per-launch figures derived from counters. None means not measured (see `unmeasured`). Each
    figure's unit, doc and labels are declared in columns.py, its sources in catalogue.FIGURES; the
    comments here are reminders (a test holds each column's kind to the type here)."""

    source: str
    launch_id: int
    name: str
    name_full: str
    device: str | None
    grid: str | None
    block: str | None
    duration_ns: float | None
    flops: Mapping[str, float] | None  # precision class -> FLOP, for the classes collected; None: none were
    # their sum; None when none was collected, or when a class that may hold the kernel's work was not (no
    # tensor counter while the tensor cores may have run): then the classes above are not its work
    flops_total: float | None
    flops_missing: tuple[str, ...]  # precision classes whose counters were not collected
    flops_at_most: Mapping[str, float] | None  # for missing classes: the most FLOP they can hold, where known
    dominant_precision: str | None
    tensor_path: TensorPath | None  # the tensor instruction path, when tensor work was counted
    dram_bytes: float | None
    l2_bytes: float | None
    arithmetic_intensity: float | None  # FLOP / DRAM byte
    achieved_tflops: float | None
    achieved_dram_tbps: float | None
    sm_clock_hz: float | None  # the clocks the kernel actually ran at
    max_sm_clock_hz: float | None  # the device's maximum SM clock
    dram_clock_hz: float | None
    sm_busy_pct: float | None  # ncu "Compute (SM) Throughput", NOT a FLOP rate
    memory_busy_pct: float | None  # ncu "Memory Throughput"
    sm_active_pct: float | None  # SM cycles with work / elapsed cycles
    issue_active_pct: float | None  # ncu "Issue Slots Busy"
    dram_throughput_pct: float | None
    l2_throughput_pct: float | None  # ncu "L2 Cache Throughput": the busiest L2 sub-unit, not its bandwidth
    l2_sectors_pct: float | None  # L2 bandwidth: the busier of its tag and data stages' sectors, % of peak
    tensor_pipe_active_pct: float | None
    pipe_busy: Mapping[str, float] | None  # pipe -> % of peak while the SM was active
    achieved_occupancy_pct: float | None
    theoretical_occupancy_pct: float | None
    achieved_active_warps_per_sm: float | None
    registers_per_thread: float | None
    shared_mem_per_block_bytes: float | None  # static + dynamic + driver-reserved, as ncu reports it
    shared_mem_static_bytes: float | None
    shared_mem_dynamic_bytes: float | None
    shared_mem_driver_bytes: float | None
    occupancy_limiter: str | None
    block_limits: Mapping[str, float] | None
    waves_per_sm: float | None
    branch_divergence_pct: float | None
    simt_efficiency_pct: float | None
    warp_stalls: Mapping[str, float] | None  # reason -> % of stalled warp-cycles, sums to 100
    register_spill_pct: float | None  # instructions that spill or fill registers, % of all instructions executed
    nvlink_bytes_per_s: float | None  # NVLink bytes received + sent per second; None and not unmeasured: no NVLink
    nvlink_busier_way_bytes_per_s: float | None  # the larger of received and sent: what a direction's bandwidth bounds
    ncu_rules: tuple[RuleResult, ...] = ()
    code_file: str | None = None  # the kernel's source file (a .py one: a Triton kernel), where the report has it
    workload: Workload = "kernel"  # a whole CUDA graph gets its time and no kernel verdict
    unmeasured: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)  # figure -> how it was had, when not its first source
    metrics: Mapping[str, float] = field(default_factory=dict, repr=False)  # the raw counters it came from


@dataclass(frozen=True)
class Lever:
    """A next step: what to change, which way the figures should move and by how much, what it
    costs, and the metric and capture that confirm it."""

    rule: str
    family: str  # algorithm, kernel, config, precision, fusion, batching, graphs, source, compiler, capture
    action: str
    expected: str
    confirm: str
    gain: int  # 3 high, 2 medium, 1 low
    cost: int  # 1 low, 2 medium, 3 high
    unlock_x: float | None = None  # upper bound on this kernel's speed-up from the figures, x; None: not a time ratio


@dataclass(frozen=True)
class Limiter:
    """One roof a kernel is held to, read at the clock it ran at, or the latency story when no roof
    is reached. `pct` decides; `pct_datasheet` stands beside it for FLOP and HBM roofs."""

    kind: LimiterKind
    key: str  # the ceiling key (with @path for a tensor roof) or the counter it is read from
    name: str  # as a reader says it: "tensor bf16 roof (wgmma)", "FMA pipe", "HBM"
    pct: float | None  # % of the roof at the measured clock, over elapsed time; None for latency kinds
    pct_datasheet: float | None  # % of the datasheet figure at its own clock (FLOP and HBM roofs)
    clock_hz: float | None  # the measured clock pct is held at; None: the datasheet clock, or a per-cycle share
    reading: str  # the figures behind pct, with units


@dataclass(frozen=True)
class Provenance:
    """Who owns the kernel's code, which decides the levers one can pull."""

    kind: ProvenanceKind
    family: str  # cuBLAS, cuDNN, NCCL, FlashAttention, PyTorch ATen, Triton (torch.compile), your Triton, your CUDA
    warp_specialised: bool  # producer/consumer warpgroups: their barrier waits are the design
    evidence: str


@dataclass(frozen=True)
class NcuVerdict:
    """ncu's own rule results beside ours, and why they differ when they do."""

    bottleneck: str | None  # SOLBottleneck's title ("High Throughput", "Latency Issue", ...); None: not in the report
    rules: tuple[str, ...]  # ncu's launch, occupancy, pipe and issue rules that fired ("LaunchConfiguration: ...")
    agrees: bool | None  # None: nothing to compare (no ncu rules, or our verdict is unmeasured)
    why: str  # one line: how ncu reached its title, and why ours differs when it does


@dataclass(frozen=True)
class Capture:
    """The capture a launch came from, as its bundle's manifest or its bare report records it."""

    ncu_version: str | None  # None: not recorded
    metric_set: str  # "roofline+stalls", "basic", "detailed", "custom", ...
    clock_control: str | None  # ncu's --clock-control; None: not given (ncu's default) or not recorded
    graph_profiling: str | None = None  # ncu's --graph-profiling (graph: whole graphs, other launches' times unsound)
    multiplexed: bool | None = None  # capture --multiplex: its figures from several launches, none replayed


@dataclass(frozen=True)
class Assessment:
    """A KernelRecord placed against its device's ceilings, with a bound and ranked levers."""

    record: KernelRecord
    hw_key: str
    compute_ceiling_key: str | None
    memory_ceiling_key: str
    compute_ceiling_tflops: float | None
    memory_ceiling_tbps: float | None  # None: the device's memory bandwidth is not known
    ridge_flops_per_byte: float | None
    pct_sol_compute: float | None
    pct_sol_memory: float | None
    bound: Bound
    verdict: str
    limiter: Limiter  # what decided the bound
    runner_up: Limiter | None  # the next roof after the limiter, or the nearest one when latency is named
    evidence: tuple[str, ...]  # the figures that decided, with units
    provenance: Provenance
    ncu: NcuVerdict
    limiters: tuple[str, ...] = ()
    next_levers: tuple[Lever, ...] = field(default=())
    provisional: bool = False  # no roofline placement (no FLOP or DRAM byte counters): the busiest unit, no %SoL
    analytic: Mapping[str, float | str] | None = None  # the harness's analytic work, with counted/analytic
    achievable: Mapping[str, float | str | None] | None = None  # %SoL against measured ceilings
    capture: Capture | None = None  # None: its input records no capture (a CSV export)
