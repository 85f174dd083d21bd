"""Launch and grid levers: a kernel too small for the GPU. Its time is the launch itself (the host's
submission, the SMs' fill and drain: the measured launch-and-ramp floor for its bytes) or a grid
that leaves SMs idle (under one wave, a tail wave), not its work. These levers change how it is
launched (CUDA graphs, vLLM's graphs, fusing launches), how much work each launch carries, or the
grid's shape; a grid lever's unlock never goes past the launch-and-ramp floor for its bytes.
FlashAttention's split-KV combine kernel lands here too: it is judged with its attention kernel.
"""

from __future__ import annotations

import re

from ..rules import RAMP_FLOOR_NS, Facts, ramp_floor_ns
from .common import NSYS, ROOFLINE, TORCH_FAMILIES, LeverRule, at_ramp_floor, took, torch_fuses, unsized, vllm_flag

GRAPH_WORTH_NS = 10_000.0  # past this, host launch gaps (3.3 µs each) are a small part of a launch-and-ramp kernel

SPLIT_K = re.compile(r"splitK|split_?k", re.IGNORECASE)
SPLIT_COMBINE = re.compile(r"FlashAttnFwdCombine|splitkv_combine|flash_fwd_splitkv_combine")
COMBINE = ("FlashAttention's split-KV combine: the price of splitting the KV sequence so the attention kernel "
           "fills the SMs; judge it with that kernel (their times add): fewer splits remove it only where the "
           "attention kernel keeps its SMs busy without them (not at long context)")


def _graph_worth(f: Facts) -> bool:
    return f.limiter.kind == "launch" and (not at_ramp_floor(f) or f.lt(f.rec.duration_ns, GRAPH_WORTH_NS))


def _graph_expected(f: Facts) -> str:
    launch = ("a host launch (3.3 µs back to back on an H200, docs/hopper-measurements.md §8"
              + ("" if f.hw_key in RAMP_FLOOR_NS else "; not measured on this GPU") + ")")
    if at_ramp_floor(f):
        return f"{took(f)} on the GPU, about {launch}: in a graph the GPU no longer waits on the host between kernels"
    return (f"{took(f)} on the GPU at about an empty kernel's time: {launch} sets its cost; in a graph the host "
            "submits the whole graph once, so that per-launch cost goes and the GPU time stays")


def _ramp_amortised(f: Facts) -> str:
    """What 4x the bytes a launch costs against the measured floor, so the ramp is paid once."""
    moved = f.rec.dram_bytes or 0.0
    now, more = ramp_floor_ns(f.rec.dram_bytes, f.hw_key), ramp_floor_ns(4 * moved, f.hw_key)
    if now is None or more is None:
        return "the fill-and-drain of the SMs is paid once a launch, so more work a launch spreads it"
    said = (f"{moved / 1e6:.1f} MB a launch take {now / 1e3:.1f} µs on this GPU, {4 * moved / 1e6:.1f} MB "
            f"{more / 1e3:.1f} µs (measured ramp, rules.RAMP_FLOOR_NS): 4x the bytes for {more / now:.1f}x the time")
    # a GEMM's larger M adds activations, not weights: its bytes grow slower than its work
    return said + ("; a larger M adds fewer bytes than work, so the work a launch gains at least this"
                   if f.gemm_like else "")


def _ramp_unlock(f: Facts) -> float | None:
    """Work per second at 4x the bytes a launch, at the measured floor, against now."""
    more = ramp_floor_ns(4 * (f.rec.dram_bytes or 0.0), f.hw_key)
    return None if more is None or not f.rec.duration_ns else max(4 * f.rec.duration_ns / more, 1.0)


def _grid_unlock(f: Facts) -> float | None:
    """Filling the idle block slots (a persistent grid: its idle SM cycles), but never past the
    launch-and-ramp floor for its bytes; None without that floor (no DRAM bytes, or a GPU whose floor
    is not measured): an empty grid's ratio alone (132x for one block) is no speed-up anyone gets."""
    if SPLIT_COMBINE.search(f.rec.name_full):  # its time is the split's price: judged with the attention kernel
        return None
    tiles = f.limiter.name == "tiles under the SMs" and f.rec.sm_active_pct
    x = 100 / f.rec.sm_active_pct if tiles and f.rec.sm_active_pct else 1 / (f.rec.waves_per_sm or 1)
    floor = ramp_floor_ns(f.rec.dram_bytes, f.hw_key)
    return None if floor is None or not f.rec.duration_ns else max(min(x, f.rec.duration_ns / floor), 1.0)


def _fill_action(f: Facts) -> str:
    """More work a launch, said as the kernel's owner does it."""
    if f.vllm and f.gemm_like:
        return ("its grid is set by N and the tile vLLM's dispatch picks for this M: no switch per kernel; more "
                f"sequences a step (--max-num-seqs, {vllm_flag(f, 'max_num_seqs')}) change M, not the grid")
    if f.vllm:
        return ("more sequences a decode step (the concurrency served, up to vLLM's --max-num-seqs, "
                f"{vllm_flag(f, 'max_num_seqs')}): its grid follows the tokens a step, so each launch does more work "
                "for about the same time: the cost per token falls, not this kernel's time")
    if f.prov.family in TORCH_FAMILIES:
        return "give each launch more work: batch the calls or fuse them (foreach ops, torch.compile)"
    return "give each launch more work: one launch over the batched inputs instead of many small ones"


def _filled(f: Facts) -> str:
    """What shows the grid filled: waves, or for a persistent grid the SMs' active share."""
    return "sm_active_pct nears 100" if f.limiter.name == "tiles under the SMs" else "waves_per_sm reaches 1"


def _idle_slots(f: Facts) -> str:
    x = _grid_unlock(f)
    if f.limiter.name == "tiles under the SMs":
        active = f.rec.sm_active_pct or 100.0
        said = f"the SMs had tiles {active:.0f} % of the time"
        full = 100 / active
    else:
        waves = f.rec.waves_per_sm or 1.0
        said = f"{waves:.2f} waves leave {100 * (1 - waves):.0f} % of the block slots empty"
        full = 1 / waves
    if x is None and SPLIT_COMBINE.search(f.rec.name_full):
        return (f"{said}; the gain is not sized: a split-KV combine's time is the price of the split, judged "
                "with the attention kernel it serves")
    if x is None:
        return (f"{said}; the gain is not sized: with no launch-and-ramp floor for its bytes on this GPU "
                "(DRAM bytes not captured, or the floor not measured here), the empty slots alone do not bound it")
    if x < full:
        return (f"{said}, but a launch moving its {(f.rec.dram_bytes or 0) / 1e3:.0f} KB takes at least "
                f"{(f.rec.duration_ns or 0) / x / 1e3:.1f} µs on this GPU (measured ramp): "
                f"up to {x:.2f}x, not {full:.0f}x")
    return f"{said}: up to {x:.1f}x if they took work"


VLLM_CUDA_GRAPHS = LeverRule(
    name="vllm-cuda-graphs",
    family="serving",
    when=lambda f: _graph_worth(f) and f.vllm and not f.in_cuda_graph,
    action=lambda f: "drop vLLM's --enforce-eager: vLLM then replays decode inside CUDA graphs (its default)",
    expected=lambda f: (f"{took(f)} on the GPU: eager, every launch pays the host's 3.3 µs "
                        "(docs/hopper-measurements.md §8); in a graph the host submits the step once, "
                        "and the GPU time stays"),
    unlock=unsized,
    confirm=f"the decode step's time falls (vLLM's own step time, or {NSYS})",
    gain=3,
    cost=1,
)

CUDA_GRAPH = LeverRule(
    name="cuda-graph",
    family="graphs",
    when=lambda f: _graph_worth(f) and f.serving is None,
    action=lambda f: ("launch it inside a CUDA graph (torch.cuda.graphs, torch.compile mode='reduce-overhead')"
                      if f.prov.family in TORCH_FAMILIES else
                      "capture its launches in a CUDA graph (from PyTorch: torch.cuda.graphs; in C++: "
                      "cudaStreamBeginCapture ... cudaGraphLaunch)" if f.prov.kind == "library" else
                      "capture its launches in a CUDA graph (cudaStreamBeginCapture ... cudaGraphLaunch), so the "
                      "host submits them once"),
    expected=_graph_expected,
    unlock=unsized,
    confirm=f"the gaps between its launches vanish: {NSYS}",
    gain=3,
    cost=1,
)

def _fuse_launch_action(f: Facts) -> str:
    if SPLIT_COMBINE.search(f.rec.name_full):
        return COMBINE
    if f.gemm_like:
        return ("fuse its neighbours into it: an activation or residual as the GEMM's epilogue (cuBLASLt "
                "epilogues, torch.compile), so their launches and ramps disappear")
    into = "a neighbouring kernel (torch.compile)" if torch_fuses(f) else "a neighbouring kernel of yours"
    return f"fuse it into {into}, so its launch and ramp disappear"


# under vLLM, what fuses its kernels is vLLM's own compilation: no per-kernel switch (the graph levers above)
FUSE_LAUNCH = LeverRule(
    name="fuse-launch",
    family="fusion",
    when=lambda f: f.limiter.kind == "launch" and (not f.vllm or bool(SPLIT_COMBINE.search(f.rec.name_full))),
    action=_fuse_launch_action,
    expected=lambda f: ("removes the neighbours' launches and their ramps (their own rows say how long)"
                        if f.gemm_like else f"removes a launch and its {took(f)}"),
    unlock=unsized,
    confirm=f"the kernel no longer appears in the step: {NSYS}",
    gain=2,
    cost=2,
)

MORE_WORK_A_LAUNCH = LeverRule(
    name="more-work-a-launch",
    family="batching",
    when=at_ramp_floor,
    action=lambda f: ("give each launch more work: more sequences a decode step (the concurrency reaching the "
                      "server, up to vLLM's --max-num-seqs), a larger M for the same weight read"
                      if f.gemm_like and f.vllm else
                      "give each launch more work: a larger M (more tokens a step), or one grouped GEMM for "
                      "several small ones" if f.gemm_like else
                      "give each launch more work: one launch over the batched tensors (foreach ops, torch.compile)"),
    expected=_ramp_amortised,
    unlock=_ramp_unlock,
    confirm=f"duration_ns grows slower than the work a launch: {NSYS}",
    gain=2,
    cost=2,
)

MORE_CTAS = LeverRule(  # the grid's author's side of an under-filled grid; fill-the-grid is its caller's
    name="more-ctas",
    family="source",
    when=lambda f: f.limiter.kind == "grid",
    action=lambda f: ("make more tiles: smaller ones, or split the work (split-K, split-KV)"
                      if f.limiter.name == "tiles under the SMs" else
                      "launch more CTAs: smaller tiles (it splits K already)" if SPLIT_K.search(f.rec.name_full)
                      else "launch more CTAs: split the work (split-K, split-KV) or use smaller tiles"),
    expected=_idle_slots,
    unlock=_grid_unlock,
    confirm=lambda f: f"{_filled(f)} and duration_ns falls: {ROOFLINE}",
    gain=2,
    cost=2,
)

FILL_THE_GRID = LeverRule(
    name="fill-the-grid",
    family="batching",
    when=lambda f: f.limiter.kind == "grid",
    action=lambda f: COMBINE if SPLIT_COMBINE.search(f.rec.name_full) else (
        _fill_action(f)),
    expected=_idle_slots,
    unlock=_grid_unlock,
    confirm=lambda f: f"{_filled(f)} and the step's time falls: {NSYS}",
    gain=2,
    cost=2,
)

def _tail_unlock(f: Facts) -> float:
    """Whole waves would give back the idle block slots, but no more than the time the SMs sat idle:
    blocks are scheduled as slots free, not in lock-step waves, so SM activity bounds the tail's cost."""
    slots = 100 / (100 - (f.tail_idle_pct or 0))
    active = f.rec.sm_active_pct
    return min(slots, 100 / active) if active else slots


def _tail_expected(f: Facts) -> str:
    active = f.rec.sm_active_pct
    bound = (f"; SMs active {active:.0f} % of elapsed cycles, so the tail costs at most the idle rest"
             if active and 100 / active < 100 / (100 - (f.tail_idle_pct or 0)) else "")
    return f"{f.tail_idle_pct:.0f} % of the block slots idle over its waves{bound}: up to {_tail_unlock(f):.2f}x"


FIX_TAIL = LeverRule(
    name="fix-tail",
    family="source",
    when=lambda f: f.tail_effect,
    action=lambda f: "size tiles or the grid so the number of waves is whole (or use a persistent / stream-K schedule)",
    expected=_tail_expected,
    unlock=_tail_unlock,
    confirm=f"waves_per_sm close to a whole number and duration_ns falls: {ROOFLINE}",
    gain=1,
    cost=2,
)
