"""The metric catalogue: every ncu counter kernelscope reads, the figure it feeds, and which capture
set collects it; then every figure with the sources that can give it, in order. The capture metric
lists (ncu/metric_sets.py) are built from the counters and the readers keep exactly these names,
so a counter is named once, collected only if read, and read only if some set collects it
(tests/test_architecture.py checks both directions).

A figure has one definition and several sources because each of ncu's sets stores it its own way:
our roofline list asks for the counts, `--set full` keeps some only as rates per elapsed cycle,
`--set basic` and the SpeedOfLight section hold per-unit throughputs over elapsed cycles, ncu's own
`--set roofline` keeps DRAM traffic as bytes per second. The first source whose counters are all
in the report gives the figure, and the record says which one did (analysis/derive.py), so a
figure is unmeasured only when no source is in the report, and never guessed.

Groups: `roofline` is our default `--metrics` list; `stalls` is the stalls add-on; `sol` comes
with ncu's SpeedOfLight section (the `sol` add-on, or `--set basic/full`); `full` only with ncu's
`--set full` (or `detailed`, or ncu's own `--set roofline`); `nvlink` comes with ncu's Nvlink
sections (the nvlink add-on) and
with ncu's MemoryWorkloadAnalysis_Chart section too (`--set detailed/full`); `launch` is recorded by
ncu with every profiled launch (no pass, no request needed);
`foreign` names are read when a report holds them (another tool's or a user's `--metrics` list, an
older ncu's set) but never asked for, since another counter of ours gives the same figure;
`blackwell` names exist only on Blackwell chips (ncu 2025.3.1 `--query-metrics --chip gb100`,
docs/hopper-measurements.md §1-2): read when a Blackwell report holds them, never asked for by our Hopper lists
(ncu refuses a metric name the chip lacks).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any, Literal, NamedTuple

Group = Literal["roofline", "stalls", "sol", "full", "nvlink", "launch", "blackwell", "foreign"]
Arch = Literal["hopper", "blackwell"]


class Counter(NamedTuple):
    """One ncu counter kernelscope reads: its group and the figure (or figures) it feeds."""

    name: str
    group: Group
    feeds: str  # the figure (or figures) it is read for


_TABLE: list[Counter] = []


def _c(name: str, group: Group, feeds: str) -> str:
    _TABLE.append(Counter(name, group, feeds))
    return name


# -- work: FLOP by precision class --------------------------------------------------------------
# Tensor-core work: precision class -> the counters (summed) holding it on each architecture, already
# in FLOP (an FMA counts as 2). `hopper` is ncu's gh100 naming (also read for older chips); Blackwell
# renames fp16, folds fp8/fp6 (and fp4 operands of the f8f6f4 kind, UTCQMMA) into one name and adds
# the fp4 kind (UTCOMMA: NVFP4/MXFP4). An empty tuple: the class does not exist on that architecture.
_OPS = "sm__ops_path_tensor_src_"
_TENSOR_ROWS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    # class          Hopper (gh100)                 Blackwell (gb100)
    ("tensor_bf16", ("bf16_dst_fp32",), ("bf16_dst_fp32",)),
    ("tensor_fp16", ("fp16",), ("fp16_dst_fp16", "fp16_dst_fp32")),
    ("tensor_tf32", ("tf32_dst_fp32",), ("tf32_dst_fp32",)),
    ("tensor_fp8", ("fp8_sparsity_off",), ("fp4_fp6_fp8_dst_fp16", "fp4_fp6_fp8_dst_fp32")),
    ("tensor_int8", ("int8",), ("int8",)),
    ("tensor_fp64", ("fp64",), ("fp64",)),
    ("tensor_fp4", (), ("fp4_dst_fp32",)),
)
_HOPPER_OPS = {op for _, hopper, _ in _TENSOR_ROWS for op in hopper}
TENSOR_OPS: dict[str, str] = {  # short op name -> counter, each named once
    op: _c(f"{_OPS}{op}.sum", "roofline" if op in _HOPPER_OPS else "blackwell", "flops (tensor)")
    for op in dict.fromkeys(op for _, hopper, blackwell in _TENSOR_ROWS for op in hopper + blackwell)
}
TENSOR_FLOPS: dict[str, dict[Arch, tuple[str, ...]]] = {
    cls: {"hopper": tuple(TENSOR_OPS[o] for o in hopper), "blackwell": tuple(TENSOR_OPS[o] for o in blackwell)}
    for cls, hopper, blackwell in _TENSOR_ROWS
}
# Turing and Ampere count fp16, bf16 and tf32 with fp32 accumulate on one path: read as fp16 work (the
# only kind Turing has; on Ampere its fp16 and bf16 peaks are one, and tf32's is half: the roof said so)
TENSOR_16BIT_FP32 = _c(f"{_OPS}fp16_bf16_tf32_dst_fp32.sum", "foreign",
                       "flops.tensor_fp16 (Turing/Ampere: fp16, bf16 and tf32 with fp32 accumulate together)")
# Non-tensor work: thread-level SASS instruction counts times FLOP per instruction.
# fp64/fp32: add and mul count 1, fma 2. fp16 SASS ops are packed half2 (HADD2/HMUL2/HFMA2), so
# ncu's own roofline counts them 2/2/4; we follow ncu there.
SIMT_FLOPS: dict[str, tuple[tuple[str, int], ...]] = {
    "fp64": (("dadd", 1), ("dmul", 1), ("dfma", 2)),
    "fp32": (("fadd", 1), ("fmul", 1), ("ffma", 2)),
    "fp16": (("hadd", 2), ("hmul", 2), ("hfma", 4)),
}
SIMT_OPS = tuple(op for ops in SIMT_FLOPS.values() for op, _ in ops)
SIMT_COUNT = {op: _c(f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum", "roofline", "flops (SIMT)")
              for op in SIMT_OPS}
# `--set full` stores the same counts only as per-elapsed-cycle rates on the SMSPs.
SIMT_RATE = {op: _c(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed", "full",
                    "flops (SIMT, from --set full)") for op in SIMT_OPS}
SMSP_CYCLES = _c("smsp__cycles_elapsed.avg", "full", "flops (SIMT rate x cycles)")
# ncu 2020-2023's `--set full` kept the rates without the cycle count: its clock x the duration gives it
SMSP_CLOCK = _c("smsp__cycles_elapsed.avg.per_second", "foreign", "flops (SIMT rate x clock x duration)")
# HFMA2.MMA: the compiler moves registers with HFMA2 on the tensor pipe; ncu's hfma count includes
# them (seen in SASS: every HFMA2 of the softmax and randn fixtures is HFMA2.MMA). Real fp16 math
# runs on the FMA pipe, which this counter measures.
HFMA2_MMA = _c("sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum", "roofline", "flops.fp16 (moves excluded)")
FP16_FMA_PIPE = _c("sm__thread_inst_executed_pipe_fma_type_fp16_pred_on.sum", "roofline",
                   "flops.fp16 (moves excluded)")
# `--set full`/`detailed`: the FMA pipe's fp16 share; 0 % means no fp16 math ran (every HFMA2 was a move)
FP16_FMA_PIPE_PCT = _c("sm__inst_executed_pipe_fma_type_fp16.avg.pct_of_peak_sustained_active", "full",
                       "flops.fp16 (0 when the FMA pipe ran no fp16)")

# -- time, bytes, clocks -------------------------------------------------------------------------
DURATION = _c("gpu__time_duration.sum", "roofline", "duration_ns")
DRAM_READ = _c("dram__bytes_read.sum", "roofline", "dram_bytes")
DRAM_WRITE = _c("dram__bytes_write.sum", "roofline", "dram_bytes")
# ncu's sections store DRAM % as gpu__dram_throughput; our list asks for dram__throughput.
DRAM_PCT = (_c("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "sol", "dram_throughput_pct"),
            _c("dram__throughput.avg.pct_of_peak_sustained_elapsed", "roofline", "dram_throughput_pct"))
DRAM_SECTORS = (_c("dram__sectors_read.sum", "full", "dram_bytes (x 32)"),
                _c("dram__sectors_write.sum", "full", "dram_bytes (x 32)"))
DRAM_RATE = _c("dram__bytes.sum.per_second", "full", "dram_bytes (ncu's --set roofline: rate x duration)")
DRAM_SUM = _c("dram__bytes.sum", "foreign", "dram_bytes (a --metrics list's read + write total)")
L2_BYTES = _c("lts__t_bytes.sum", "roofline", "l2_bytes")
L2_SECTORS = _c("lts__t_sectors.sum", "full", "l2_bytes (x 32)")
L2_PCT = _c("lts__throughput.avg.pct_of_peak_sustained_elapsed", "roofline", "l2_throughput_pct")
# L2 bandwidth is judged on its data paths: the tag stage's and the data stage's sectors. lts__throughput
# is the busiest of every L2 sub-unit (its crossbar ports included), not bandwidth: 72.5 % on an fp8
# GEMM whose sectors ran at 45.8 % and 51.4 %.
L2_SECTOR_PCTS = (_c("lts__t_sectors.avg.pct_of_peak_sustained_elapsed", "roofline", "l2_sectors_pct"),
                  _c("lts__d_sectors.avg.pct_of_peak_sustained_elapsed", "roofline", "l2_sectors_pct"))
SM_CLOCK = _c("sm__cycles_elapsed.avg.per_second", "roofline", "sm_clock_hz")
GPC_CLOCK = _c("gpc__cycles_elapsed.avg.per_second", "sol", "sm_clock_hz (SpeedOfLight's SM frequency)")
GPC_CYCLES = _c("gpc__cycles_elapsed.avg", "sol", "sm_active_pct (SpeedOfLight's elapsed cycles)")
DRAM_CLOCK = _c("dram__cycles_elapsed.avg.per_second", "roofline", "dram_clock_hz")
GPC_CYCLES_MAX = _c("gpc__cycles_elapsed.max", "foreign", "sm_clock_hz (cycles over duration)")

# -- SM activity and pipes -----------------------------------------------------------------------
SM_BUSY = _c("sm__throughput.avg.pct_of_peak_sustained_elapsed", "sol", "sm_busy_pct")  # not a FLOP rate
MEM_BUSY = _c("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "sol", "memory_busy_pct")
SM_CYCLES_ACTIVE = _c("sm__cycles_active.avg", "roofline", "sm_active_pct")
SM_CYCLES_ELAPSED = _c("sm__cycles_elapsed.avg", "roofline", "sm_active_pct")
ISSUE_ACTIVE = _c("smsp__issue_active.avg.pct_of_peak_sustained_active", "roofline", "issue_active_pct")
ISSUE_ELAPSED = _c("sm__issue_active.avg.pct_of_peak_sustained_elapsed", "sol", "issue_active_pct (over elapsed)")
TENSOR_PIPE = _c("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "roofline",
                 "tensor_pipe_active_pct")
TENSOR_PIPE_ELAPSED = _c("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "sol",
                         "tensor_pipe_active_pct (over elapsed)")
# Which tensor instruction path: wgmma (Hopper's warpgroup MMA) or mma.sync (HMMA); ncu counts
# wgmma instructions in both counters, mma.sync only in the hmma one.
TENSOR_WGMMA_INST = _c("sm__inst_executed_pipe_tensor_op_gmma.sum", "roofline", "tensor_path")
TENSOR_HMMA_INST = _c("sm__inst_executed_pipe_tensor_op_hmma.sum", "roofline", "tensor_path")
# `--set full` and ncu's `--set roofline` split tensor FLOP by instruction: h/igmma is wgmma, h/imma mma.sync
_OP = "sm__ops_path_tensor_op_"
WGMMA_OPS = tuple(_c(f"{_OP}{op}.sum", "full", "tensor_path") for op in (
    "hgmma_src_bf16_dst_fp32_sparsity_off", "hgmma_src_bf16_dst_fp32_sparsity_on", "hgmma_src_fp16_sparsity_off",
    "hgmma_src_fp16_sparsity_on", "hgmma_src_tf32_dst_fp32_sparsity_off", "hgmma_src_tf32_dst_fp32_sparsity_on",
    "igmma_src_int8_sparsity_off", "igmma_src_int8_sparsity_on"))
MMA_SYNC_OPS = tuple(_c(f"{_OP}{op}.sum", "full", "tensor_path") for op in (
    "hmma_src_bf16_dst_fp32_sparsity_off", "hmma_src_bf16_dst_fp32_sparsity_on", "hmma_src_fp16_dst_fp16_sparsity_off",
    "hmma_src_fp16_dst_fp16_sparsity_on", "hmma_src_fp16_dst_fp32_sparsity_off", "hmma_src_fp16_dst_fp32_sparsity_on",
    "hmma_src_tf32_dst_fp32_sparsity_off", "hmma_src_tf32_dst_fp32_sparsity_on", "imma_src_int8_sparsity_off",
    "imma_src_int8_sparsity_on"))
# `--set full` and `detailed` count wgmma instructions in the SASS (any other Hopper tensor op is mma.sync)
WGMMA_SASS_INST = _c("smsp__sass_inst_executed_op_shared_gmma.sum", "full", "tensor_path")
# Blackwell: tcgen05 (UTC*MMA) runs on the TC pipe, legacy mma.sync on the tensor pipe's hmma subpipe.
TENSOR_TC_INST = _c("sm__inst_executed_pipe_tc.sum", "blackwell", "tensor_path")
TENSOR_SUBPIPE_HMMA_INST = _c("sm__inst_executed_pipe_tensor_subpipe_hmma.sum", "blackwell", "tensor_path")
_PIPE_METRICS = (("fma", "sm__pipe_fma_cycles_active"), ("alu", "sm__pipe_alu_cycles_active"),
                 ("fp64", "sm__pipe_fp64_cycles_active"), ("xu", "sm__inst_executed_pipe_xu"),
                 ("lsu", "sm__inst_executed_pipe_lsu"))
PIPES: dict[str, str] = {  # pipe -> % of its peak while the SM was active
    pipe: _c(f"{m}.avg.pct_of_peak_sustained_active", "roofline", f"pipe_busy.{pipe}") for pipe, m in _PIPE_METRICS}
PIPES_ELAPSED: dict[str, str] = {  # the same over elapsed cycles, as the SpeedOfLight breakdown holds them
    pipe: _c(f"{m}.avg.pct_of_peak_sustained_elapsed", "sol", f"pipe_busy.{pipe} (over elapsed)")
    for pipe, m in _PIPE_METRICS}

# -- occupancy and launch ------------------------------------------------------------------------
OCC_ACHIEVED = _c("sm__warps_active.avg.pct_of_peak_sustained_active", "roofline", "achieved_occupancy_pct")
OCC_ACHIEVED_SMSP = _c("smsp__warps_active.avg.pct_of_peak_sustained_active", "foreign",
                       "achieved_occupancy_pct (the same share over SM sub-partitions)")
OCC_THEORETICAL = _c("sm__maximum_warps_per_active_cycle_pct", "roofline", "theoretical_occupancy_pct")
WARPS_ACTIVE = _c("sm__warps_active.avg.per_cycle_active", "roofline", "achieved_active_warps_per_sm")
REGISTERS = _c("launch__registers_per_thread", "launch", "registers_per_thread")
SMEM_STATIC = _c("launch__shared_mem_per_block_static", "launch", "shared_mem")
SMEM_DYNAMIC = _c("launch__shared_mem_per_block_dynamic", "launch", "shared_mem")
SMEM_DRIVER = _c("launch__shared_mem_per_block_driver", "launch", "shared_mem")  # 1 KiB the driver reserves
WAVES = _c("launch__waves_per_multiprocessor", "launch", "waves_per_sm")
BLOCK_LIMITS: dict[str, str] = {
    limit: _c(f"launch__occupancy_limit_{limit}", "launch", "occupancy_limiter")
    for limit in ("registers", "shared_mem", "warps", "blocks")
}
GRID_DIMS = tuple(_c(f"launch__grid_dim_{a}", "launch", "grid") for a in "xyz")
BLOCK_DIMS = tuple(_c(f"launch__block_dim_{a}", "launch", "block") for a in "xyz")
DEVICE_NAME = _c("device__attribute_display_name", "launch", "device")
COMPUTE_CAPABILITY = _c("device__attribute_compute_capability_major", "launch", "flops (counter names by arch)")
MAX_SM_CLOCK_KHZ = _c("device__attribute_max_gpu_frequency_khz", "launch", "limiter (clock cap)")
MAX_MEM_CLOCK_KHZ = _c("device__attribute_max_mem_frequency_khz", "launch", "a bare report's context (memory clock)")
# The device as ncu records it with every launch: what ceilings/from_report.py turns into roofs for a GPU
# no datasheet entry names, and checks a datasheet entry against
_ATTR = "device__attribute_"
CC_MINOR = _c(f"{_ATTR}compute_capability_minor", "launch", "ceilings (architecture)")
SM_COUNT = _c(f"{_ATTR}multiprocessor_count", "launch", "ceilings (SMs)")
MEMORY_CLOCK_KHZ = _c(f"{_ATTR}memory_clock_rate", "launch", "ceilings (memory clock)")
BUS_WIDTH = _c(f"{_ATTR}global_memory_bus_width", "launch", "ceilings (memory bus width)")
# the report's own peaks, per cycle over the whole device, as ncu's roofline charts draw them
PEAK_DRAM_BYTES = _c("dram__bytes.sum.peak_sustained", "full", "ceilings (the report's own HBM peak)")
PEAK_OPS = {op: _c(f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum.peak_sustained", "full",
                   "ceilings (the report's own SIMT peaks)") for op in ("ffma", "dfma", "hfma")}

# -- NVLink: a collective's link ------------------------------------------------------------------
# Bytes received and sent over all the GPU's NVLinks, as rates over the launch (byte/s). ncu's
# MemoryWorkloadAnalysis_Chart section asks for them (its MemoryApertureUsage rule sums the two as
# the NVLink bandwidth), which is why `--set detailed/full` reports hold them: 0 on a lone H200.
NVL_RX = _c("nvlrx__bytes.sum.per_second", "nvlink", "nvlink_bytes_per_s")
NVL_TX = _c("nvltx__bytes.sum.per_second", "nvlink", "nvlink_bytes_per_s")
# The GPU's logical NVLink connections, in every report: 0 on a GPU with no NVLink to a peer
NVL_LINKS = _c("nvlink__count_logical", "launch", "nvlink_bytes_per_s (0: no NVLink on this device)")
NO_NVLINK = f"no NVLink on this device ({NVL_LINKS} 0)"

# -- divergence ----------------------------------------------------------------------------------
BRANCH_TARGETS = _c("smsp__sass_branch_targets.sum", "roofline", "branch_divergence_pct")
BRANCH_DIVERGENT = _c("smsp__sass_branch_targets_threads_divergent.sum", "roofline", "branch_divergence_pct")
BRANCH_UNIFORM_PCT = _c("smsp__sass_average_branch_targets_threads_uniform.pct", "full", "branch_divergence_pct")
THREADS_PER_INST = _c("smsp__thread_inst_executed_per_inst_executed.ratio", "roofline", "simt_efficiency_pct")

# -- register spills (--set full, detailed: SourceCounters) --------------------------------------
SPILL_INST = _c("sass__inst_executed_register_spilling", "full", "register_spill_pct")
INST_EXECUTED = _c("smsp__inst_executed.sum", "full", "register_spill_pct")

# -- warp stalls ---------------------------------------------------------------------------------
# "selected" is the issuing warp, not a stall: it is neither collected nor shown.
STALL_REASONS: tuple[str, ...] = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss", "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
    "not_selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
)
STALLS = {r: _c(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio", "stalls", "warp_stalls")
          for r in STALL_REASONS}

COUNTERS: tuple[Counter, ...] = tuple(_TABLE)
WANTED: frozenset[str] = frozenset(c.name for c in COUNTERS)
"""Every counter the analysis reads; readers keep only these."""
NUMERIC: frozenset[str] = WANTED - {DEVICE_NAME}
"""WANTED but the device name, which is text and read on its own."""


def group(name: Group) -> tuple[str, ...]:
    """The counters of one group, in table order."""
    return tuple(c.name for c in COUNTERS if c.group == name)


# -- figures: each with its sources, in order ---------------------------------------------------
NA = "not applicable"  # a formula's answer for a figure that does not apply (no branch ran: 0/0)


class Source(NamedTuple):
    """One way to have a figure: a formula over counters, or over figures above it in FIGURES."""

    label: str  # how the figure was had, as JSON and --details say it
    needs: tuple[str, ...]
    formula: Callable[..., Any]  # the needs' values, in order -> the figure; None: this source cannot tell; NA
    arch: Arch | None = None  # read only from reports of this architecture
    declines: bool = False  # it answers only in the case it covers (an idle pipe), else None: try the next


class Figure(NamedTuple):
    """One derived figure and its sources, in the order they are tried."""

    name: str
    sources: tuple[Source, ...]


def _one(name: str, label: str | None = None) -> Source:
    return Source(label or name, (name,), float)


def _per_active(elapsed: str) -> Source:
    """A share over elapsed cycles as a share of SM-active cycles, as ncu's per-active figures are."""
    return Source(f"100 x {elapsed} / sm_active_pct", (elapsed, "sm_active_pct"),
                  lambda e, a: None if not a else 100 * e / a)


def _pct(num: float, den: float) -> float | None:
    return None if not den else 100 * num / den


def _share(num: str, den: str) -> Source:
    """A percent of two counters, labelled as computed (the label is what JSON's `sources` shows)."""
    return Source(f"100 x {num} / {den}", (num, den), _pct)


def _from_uniform(uniform: float, divergent: float) -> float | str:
    """Divergent branch targets from `--set full`'s uniform share: it reads 0 when no branch ran."""
    return NA if divergent == 0 and uniform == 0 else 100 - uniform


def _path_from_ops(*ops: float) -> str | None:
    wgmma, sync = sum(ops[:len(WGMMA_OPS)]), sum(ops[len(WGMMA_OPS):])
    return "wgmma" if wgmma > 0 else "mma.sync" if sync > 0 else None


def _stall_shares(*ratios: float) -> dict[str, float] | None:
    total = sum(ratios)
    if total <= 0:
        return None
    by_share = sorted(zip(STALL_REASONS, ratios, strict=True), key=itemgetter(1), reverse=True)  # ties: table order
    return {r: 100 * v / total for r, v in by_share}


def _stall_shares_no_gmma(*ratios: float) -> dict[str, float] | None:
    return _stall_shares(*ratios[:STALL_REASONS.index("gmma")], 0.0, *ratios[STALL_REASONS.index("gmma"):])


def _tensor_sources(cls: str) -> tuple[Source, ...]:
    """Its counters in either naming, this architecture's first (ncu names them per chip, and Ampere
    and Ada reports may hold either: a report holds only its chip's, so one naming answers), then an
    idle tensor pipe: no tensor work at all."""
    out = []
    for arch in ("hopper", "blackwell"):
        names = TENSOR_FLOPS[cls][arch]
        other = TENSOR_FLOPS[cls]["blackwell" if arch == "hopper" else "hopper"]
        if names:
            out.append(Source(" + ".join(names), names, lambda *v: float(sum(v)), arch))
            if other and other != names:
                out.append(Source(" + ".join(other), other, lambda *v: float(sum(v)), arch))
            out.append(Source("tensor pipe idle (0 %): no tensor work", ("tensor_pipe_active_pct",),
                              lambda p: 0.0 if p == 0 else None, arch, declines=True))
    if cls == "tensor_fp16":  # before Hopper: fp16-accumulate on its own path, the fp32-accumulate kinds together
        f16 = TENSOR_OPS["fp16_dst_fp16"]
        out += [Source(f"{f16} + {TENSOR_16BIT_FP32}", (f16, TENSOR_16BIT_FP32), lambda a, b: float(a + b)),
                _one(TENSOR_16BIT_FP32)]
    return tuple(out)


def _simt_count(op: str) -> Figure:
    return Figure(f"simt.{op}", (_one(SIMT_COUNT[op]), Source(
        f"{SIMT_RATE[op]} x {SMSP_CYCLES}", (SIMT_RATE[op], SMSP_CYCLES), lambda r, c: float(round(r * c))), Source(
        f"{SIMT_RATE[op]} x {SMSP_CLOCK} x duration", (SIMT_RATE[op], SMSP_CLOCK, "duration_ns"),
        lambda r, hz, t: float(round(r * hz * t * 1e-9)))))


def _simt_flops(cls: str) -> Figure:
    ops = SIMT_FLOPS[cls]
    counts = tuple("hfma_math" if op == "hfma" else f"simt.{op}" for op, _ in ops)
    weights = tuple(w for _, w in ops)
    sources = [Source(" + ".join(f"{w} x {n}" for w, n in zip(weights, counts, strict=True)), counts,
                      lambda *c: float(sum(w * x for w, x in zip(weights, c, strict=True))))]
    if cls == "fp16":
        sources.append(Source("the FMA pipe ran no fp16 (0 %): no fp16 math", (FP16_FMA_PIPE_PCT,),
                              lambda p: 0.0 if p == 0 else None, declines=True))
    return Figure(f"flops.{cls}", tuple(sources))


FIGURES: tuple[Figure, ...] = (
    Figure("duration_ns", (_one(DURATION),)),
    Figure("sm_clock_hz", (_one(SM_CLOCK), _one(GPC_CLOCK), Source(
        f"{GPC_CYCLES_MAX} / duration", (GPC_CYCLES_MAX, "duration_ns"), lambda c, t: None if not t else c / t * 1e9))),
    Figure("max_sm_clock_hz", (Source(f"{MAX_SM_CLOCK_KHZ} x 1e3", (MAX_SM_CLOCK_KHZ,), lambda k: 1e3 * k),)),
    Figure("dram_clock_hz", (_one(DRAM_CLOCK),)),
    Figure("dram_bytes", (Source(f"{DRAM_READ} + {DRAM_WRITE}", (DRAM_READ, DRAM_WRITE), lambda r, w: r + w),
                          Source("(dram__sectors_read.sum + dram__sectors_write.sum) x 32", DRAM_SECTORS,
                                 lambda r, w: 32 * (r + w)),
                          _one(DRAM_SUM),
                          Source(f"{DRAM_RATE} x duration", (DRAM_RATE, "duration_ns"), lambda r, t: r * t * 1e-9))),
    Figure("l2_bytes", (_one(L2_BYTES), Source(f"{L2_SECTORS} x 32", (L2_SECTORS,), lambda n: 32 * n))),
    Figure("sm_busy_pct", (_one(SM_BUSY),)),
    Figure("memory_busy_pct", (_one(MEM_BUSY),)),
    Figure("sm_active_pct", (_share(SM_CYCLES_ACTIVE, SM_CYCLES_ELAPSED), _share(SM_CYCLES_ACTIVE, GPC_CYCLES),
                             Source(f"100 x {SM_CYCLES_ACTIVE} / ({SM_CLOCK} x duration)", (SM_CYCLES_ACTIVE,
                                    SM_CLOCK, "duration_ns"), lambda a, hz, t: _pct(a, hz * t * 1e-9)))),
    Figure("issue_active_pct", (_one(ISSUE_ACTIVE), _per_active(ISSUE_ELAPSED))),
    Figure("dram_throughput_pct", tuple(_one(n) for n in DRAM_PCT)),
    Figure("l2_throughput_pct", (_one(L2_PCT),)),
    Figure("l2_sectors_pct", (Source("max(lts__t_sectors, lts__d_sectors) % of peak over elapsed", L2_SECTOR_PCTS,
                                     max),)),
    Figure("tensor_pipe_active_pct", (_one(TENSOR_PIPE), _per_active(TENSOR_PIPE_ELAPSED))),
    *(Figure(f"pipe_busy.{p}", (_one(PIPES[p]), _per_active(PIPES_ELAPSED[p]))) for p in PIPES),
    Figure("achieved_occupancy_pct", (_one(OCC_ACHIEVED), _one(OCC_ACHIEVED_SMSP))),
    Figure("theoretical_occupancy_pct", (_one(OCC_THEORETICAL),)),
    Figure("achieved_active_warps_per_sm", (_one(WARPS_ACTIVE),)),
    Figure("registers_per_thread", (_one(REGISTERS),)),
    Figure("shared_mem_per_block_bytes", (Source("static + dynamic + driver-reserved", (
        SMEM_STATIC, SMEM_DYNAMIC, SMEM_DRIVER), lambda a, b, c: a + b + c),)),
    Figure("shared_mem_static_bytes", (_one(SMEM_STATIC),)),
    Figure("shared_mem_dynamic_bytes", (_one(SMEM_DYNAMIC),)),
    Figure("shared_mem_driver_bytes", (_one(SMEM_DRIVER),)),
    Figure("waves_per_sm", (_one(WAVES),)),
    Figure("branch_divergence_pct", (
        Source(f"100 x {BRANCH_DIVERGENT} / {BRANCH_TARGETS}", (BRANCH_DIVERGENT, BRANCH_TARGETS),
               lambda d, t: NA if t == 0 else 100 * d / t),
        Source(f"100 - {BRANCH_UNIFORM_PCT}", (BRANCH_UNIFORM_PCT, BRANCH_DIVERGENT), _from_uniform),
        # without the divergent count, a uniform share over 0 still says it (0 may mean no branch ran)
        Source(f"100 - {BRANCH_UNIFORM_PCT} (where over 0, without the divergent count)", (BRANCH_UNIFORM_PCT,),
               lambda u: 100 - u if u > 0 else None, declines=True))),
    Figure("simt_efficiency_pct", (Source(f"100 x {THREADS_PER_INST} / 32", (THREADS_PER_INST,),
                                          lambda r: 100 * r / 32),)),
    *(_simt_count(op) for op in SIMT_OPS),
    # HFMA2 thread-instructions that did fp16 math: ncu's hfma count also holds HFMA2.MMA register moves,
    # which run on the tensor pipe, while real fp16 math runs on the FMA pipe
    Figure("hfma_math", (
        Source("no HFMA2 ran", ("simt.hfma",), lambda h: 0.0 if h == 0 else None, declines=True),
        Source("no HFMA2.MMA moves: every HFMA2 is math", ("simt.hfma", HFMA2_MMA),
               lambda h, mv: h if mv == 0 else None, declines=True),
        Source("the FMA pipe's fp16 thread-instructions less HADD2 and HMUL2",
               ("simt.hfma", "simt.hadd", "simt.hmul", FP16_FMA_PIPE), lambda h, a, m, p: min(h, max(0.0, p - a - m))),
        Source("the FMA pipe ran no fp16 (0 %): every HFMA2 was a move", (FP16_FMA_PIPE_PCT,),
               lambda p: 0.0 if p == 0 else None, declines=True))),
    *(Figure(f"flops.{cls}", _tensor_sources(cls)) for cls in TENSOR_FLOPS),
    *(_simt_flops(cls) for cls in SIMT_FLOPS),
    # when HFMA2 math cannot be told from HFMA2.MMA moves, the most fp16 work there can be: enough to show
    # that the fp16 class cannot move a verdict (75 M HFMA2 of a softmax: under 1 % of the fp16 peak)
    Figure("flops_at_most.fp16", (Source(
        "2 x simt.hadd + 2 x simt.hmul + 4 x simt.hfma (moves counted as math)",
        ("simt.hadd", "simt.hmul", "simt.hfma"), lambda a, m, f: 2 * a + 2 * m + 4 * f),)),
    Figure("tensor_path", (  # read only when tensor work was counted (analysis/derive.py)
        Source("tcgen05 instructions ran", (TENSOR_TC_INST,), lambda n: "tcgen05" if n > 0 else None, "blackwell",
               declines=True),
        Source("mma.sync on the tensor pipe's hmma subpipe", (TENSOR_SUBPIPE_HMMA_INST,),
               lambda n: "mma.sync" if n > 0 else None, "blackwell", declines=True),
        Source("tensor FLOP by instruction (h/igmma: wgmma; h/imma: mma.sync)", WGMMA_OPS + MMA_SYNC_OPS,
               _path_from_ops, "hopper", declines=True),
        Source("wgmma / hmma instructions (HFMA2.MMA moves excluded)", (TENSOR_WGMMA_INST, TENSOR_HMMA_INST, HFMA2_MMA),
               lambda g, h, mv: "wgmma" if g > 0 else "mma.sync" if h - mv > 0 else None, "hopper", declines=True),
        Source("wgmma instructions in the SASS (any other Hopper tensor op is mma.sync)", (WGMMA_SASS_INST,),
               lambda n: "wgmma" if n > 0 else "mma.sync", "hopper"))),
    # a device with no link has no NVLink figure, not one of 0 bytes/s: it does not apply (NA)
    Figure("nvlink_bytes_per_s", (
        Source(f"{NVL_RX} + {NVL_TX}", (NVL_LINKS, NVL_RX, NVL_TX), lambda n, r, t: NA if n == 0 else r + t),
        Source(NO_NVLINK, (NVL_LINKS,), lambda n: NA if n == 0 else None, declines=True))),
    Figure("nvlink_busier_way_bytes_per_s", (
        Source(f"max({NVL_RX}, {NVL_TX})", (NVL_LINKS, NVL_RX, NVL_TX), lambda n, r, t: NA if n == 0 else max(r, t)),
        Source(NO_NVLINK, (NVL_LINKS,), lambda n: NA if n == 0 else None, declines=True))),
    Figure("register_spill_pct", (_share(SPILL_INST, INST_EXECUTED),)),
    Figure("warp_stalls", (Source("smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio, as shares",
                                  tuple(STALLS.values()), _stall_shares, declines=True),
                           # before Hopper there is no wgmma, and no gmma stall reason to count
                           Source("the same, every reason but gmma (a chip without wgmma)", tuple(
                               n for r, n in STALLS.items() if r != "gmma"), _stall_shares_no_gmma, declines=True))),
)
FIGURE_NAMES: tuple[str, ...] = tuple(f.name for f in FIGURES)
# the figures only other figures read (counted work that feeds flops.*): every other one is a column of
# the column spec (columns.py) or a key of one of its maps, which declares its unit, doc and label
STEPS: frozenset[str] = frozenset(("hfma_math", *(f"simt.{op}" for op in SIMT_OPS)))

