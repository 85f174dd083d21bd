"""Source levers: changes to the kernel's own code, for a kernel the user writes (CUDA or Triton;
PULLABLE keeps them off library kernels). They answer what the counters say the code does badly,
whatever the kernel computes: a pipe or the issue slots kept busy by instructions, warps waiting
on memory or at barriers, occupancy capped by registers or shared memory, register spills, bank
conflicts, uncoalesced or diverged accesses, a Triton config to retune. The levers on a GEMM's or a
stream's choice of kernel are in gemm.py and elementwise.py; on its grid, in launch.py.
"""

from __future__ import annotations

from ..rules import DOMINANT_STALL_PCT, Facts
from .common import ROOFLINE, STALLS, LeverRule, headroom, headroom_expected, is_triton, unsized


def _divergence_expected(f: Facts) -> str:
    eff = f.rec.simt_efficiency_pct
    if eff is None:
        return (f"{f.rec.branch_divergence_pct:.0f} % of branch targets diverge (SIMT efficiency not collected, so "
                "the lanes lost are not sized)")
    return (f"SIMT efficiency {eff:.0f} %: the busy pipe spends {100 - eff:.0f} % of its lanes masked off; "
            f"up to {100 / (eff or 100):.1f}x if the branches were uniform")


def _ncu_estimate(f: Facts, rule: str) -> str:
    r = f.ncu_finding(rule)
    if r is None:
        return ""
    est = (f"ncu estimates up to {r.speedup_pct:.1f} % of this kernel's time" if r.speedup_pct
           else "ncu gives no estimate")
    return f"{est}: {r.message.split('. ')[0].rstrip('.')}"


TRITON_RETUNE = LeverRule(
    name="triton-retune",
    family="config",
    when=lambda f: is_triton(f) and f.bound in ("compute", "memory", "latency") and not f.at_roof,
    action=lambda f: ("retune the Triton kernel: BLOCK_M/N/K, num_warps and num_stages over a triton.autotune "
                      "config list, GROUP_M for L2 reuse; on Hopper TMA descriptors (tl.make_tensor_descriptor), "
                      "a persistent grid and warp specialisation"),
    expected=headroom_expected,
    unlock=headroom,
    confirm=f"the config's duration_ns, then {ROOFLINE}",
    gain=2,
    cost=1,
)

FIX_SPILLS = LeverRule(
    name="fix-spills",
    family="source",
    when=lambda f: f.spills,
    action=lambda f: ("stop the register spills: fewer live values (smaller tiles, fewer accumulators, recompute "
                      "instead of keep), or let the compiler use more registers (__launch_bounds__ with fewer "
                      "threads; Triton: a smaller BLOCK or num_warps)"),
    expected=lambda f: (f"{f.rec.register_spill_pct:.1f} % of its instructions move registers to and from local "
                        "memory (L1/L2 traffic and latency)"),
    unlock=unsized,
    confirm="register_spill_pct reaches 0: kernelscope capture --set full",
    gain=2,
    cost=2,
)

FIX_BANK_CONFLICTS = LeverRule(
    name="fix-bank-conflicts",
    family="source",
    when=lambda f: f.ncu_finding("SharedMemoryConflicts") is not None,
    action=lambda f: ("Triton lays out shared memory itself: try another BLOCK_K or num_stages, or "
                      "tl.make_tensor_descriptor (TMA writes swizzled tiles)"
                      if is_triton(f) else
                      "pad or swizzle the shared-memory layout so a warp's accesses fall in distinct banks"),
    expected=lambda f: _ncu_estimate(f, "SharedMemoryConflicts"),
    unlock=unsized,
    confirm="l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum falls: kernelscope capture --set full",
    gain=1,
    cost=2,
)

COALESCE_GLOBAL = LeverRule(
    name="coalesce-global",
    family="source",
    when=lambda f: f.ncu_finding("UncoalescedGlobalAccess") is not None,
    action=lambda f: ("coalesce global accesses: make the block's last axis the tensor's contiguous one in "
                      "tl.load, or load through tl.make_tensor_descriptor (TMA)"
                      if is_triton(f) else
                      "coalesce global accesses: consecutive threads on consecutive addresses, 16-byte vector loads"),
    expected=lambda f: _ncu_estimate(f, "UncoalescedGlobalAccess"),
    unlock=unsized,
    confirm="ncu's UncoalescedGlobalAccess no longer fires: kernelscope capture --set full",
    gain=2,
    cost=2,
)

def _pipelined(f: Facts) -> str:
    """Asynchronous copies this chip has: cp.async from Ampere, TMA from Hopper (sm_90)."""
    arch = f.device.arch if f.device is not None else None
    if arch is None:
        return "cp.async pipelining (TMA on Hopper and later)"
    if float(arch.cc) >= 9.0:
        return "cp.async/TMA pipelining"
    return "cp.async pipelining" if float(arch.cc) >= 8.0 else "software pipelining (loads issued a stage ahead)"


BYTES_IN_FLIGHT = LeverRule(
    name="bytes-in-flight",
    family="source",
    when=lambda f: (f.bound == "memory" and not f.at_roof and f.top_stall == "long_scoreboard"
                    and f.ge(f.top_stall_pct, DOMINANT_STALL_PCT)),
    action=lambda f: ("keep more bytes in flight: 16-byte vector loads, several independent loads a thread, "
                      f"{_pipelined(f)}"),
    expected=lambda f: (f"the {f.limiter.name} is at {f.limiter.pct:.0f} %: "
                        f"up to {100 / (f.limiter.pct or 100):.1f}x to its roof"),
    unlock=lambda f: 100 / (f.limiter.pct or 100),
    confirm=f"warp_stalls.long_scoreboard falls and the HBM % rises: {STALLS}",
    gain=2,
    cost=2,
)

FIX_DIVERGENCE = LeverRule(
    name="fix-divergence",
    family="source",
    when=lambda f: f.diverged,
    action=lambda f: ("make branches warp-uniform: bucket or sort work by path, move the branch to block level, "
                      "predicate short paths"),
    expected=_divergence_expected,
    unlock=lambda f: None if f.rec.simt_efficiency_pct is None else 100 / (f.rec.simt_efficiency_pct or 100),
    confirm=f"simt_efficiency_pct near 100 and the pipe % per FLOP falls: {ROOFLINE}",
    gain=3,
    cost=2,
)

CUT_INSTRUCTIONS = LeverRule(
    name="cut-instructions",
    family="source",
    when=lambda f: f.limiter.kind in ("pipe", "issue"),
    action=lambda f: ("fewer instructions per result: fast-math intrinsics, fewer passes over the data, vector "
                      "loads, less index arithmetic"),
    expected=lambda f: f"{f.limiter.name} {f.limiter.pct:.0f} % busy: time follows the instructions it issues",
    unlock=unsized,
    confirm=f"issue_active_pct stays high while duration_ns falls: {ROOFLINE}",
    gain=2,
    cost=2,
)

HIDE_MEMORY_LATENCY = LeverRule(
    name="hide-memory-latency",
    family="source",
    when=lambda f: (f.limiter.kind == "latency" and f.top_stall == "long_scoreboard"
                    and f.ge(f.top_stall_pct, DOMINANT_STALL_PCT)),
    action=lambda f: (f"keep more loads in flight: vectorised 16-byte loads, {_pipelined(f)}, more "
                      "independent work a thread"),
    expected=headroom_expected,
    unlock=headroom,
    confirm=f"warp_stalls.long_scoreboard drops: {STALLS}",
    gain=2,
    cost=2,
)

RAISE_OCCUPANCY_REGISTERS = LeverRule(
    name="raise-occupancy-registers",
    family="compiler",
    when=lambda f: (f.bound in ("latency", "compute") and f.limiter.kind not in ("tensor", "simt", "grid")
                    and f.registers_limit_occupancy),
    action=lambda f: "cap registers to fit another block: __launch_bounds__(threads, minBlocks) or -maxrregcount",
    expected=lambda f: (f"theoretical occupancy {f.rec.theoretical_occupancy_pct:.0f} % rises if no spills appear: "
                        "more warps to hide latency"),
    unlock=unsized,
    confirm="theoretical_occupancy_pct rises and no local-memory traffic appears: kernelscope capture --set roofline",
    gain=2,
    cost=1,
)

RAISE_OCCUPANCY_SMEM = LeverRule(
    name="raise-occupancy-smem",
    family="source",
    when=lambda f: (f.bound in ("latency", "compute") and f.limiter.kind not in ("tensor", "simt")
                    and f.smem_limits_occupancy),
    action=lambda f: "use less shared memory a block (fewer pipeline stages, smaller tiles) so more blocks fit",
    expected=lambda f: f"theoretical occupancy {f.rec.theoretical_occupancy_pct:.0f} % rises with the blocks that fit",
    unlock=unsized,
    confirm="launch__occupancy_limit_shared_mem rises: kernelscope capture --set roofline",
    gain=1,
    cost=2,
)

BALANCE_BARRIERS = LeverRule(
    name="balance-barriers",
    family="source",
    when=lambda f: f.top_stall == "barrier" and f.ge(f.top_stall_pct, DOMINANT_STALL_PCT) and not f.designed_stall,
    action=lambda f: ("overlap loads with the MMA instead of waiting at barriers: more num_stages, or warp "
                      "specialisation (tl.range(..., warp_specialize=True) where your Triton has it)"
                      if is_triton(f) else
                      "balance the work between block-wide barriers (warp specialisation, fewer __syncthreads)"),
    expected=lambda f: f"barrier holds {f.top_stall_pct:.0f} % of stalled warp-cycles",
    unlock=unsized,
    confirm=f"warp_stalls.barrier drops: {STALLS}",
    gain=1,
    cost=2,
)
