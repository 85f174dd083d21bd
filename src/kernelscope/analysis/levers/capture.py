"""Capture levers: measure again before changing anything. They fire when the report cannot say
what limits the kernel (no roofline counters, a provisional verdict, no stall sample) or when the
kernel ran inside a CUDA graph, where one kernel's time is not the step's. Cheap to pull, and the
verdict they unlock names the real lever.
"""

from __future__ import annotations

from ..rules import Facts
from .common import ROOFLINE, STALLS, LeverRule, unsized


def _recapture_action(f: Facts) -> str:
    """What this report lacks, and the capture that has it on this device: kernelscope's roofline list
    names Hopper's and Blackwell's counters; an older chip's tensor FLOP counters are its own."""
    if f.device is not None and f.device.how == "unidentified":
        return f"name the device, so its roofs are known: {f.device.notes[0] if f.device.notes else 'pass --hw'}"
    why = f.limiter.reading.removeprefix("unmeasured: ").split(", no roofline verdict")[0] if f.bound == "unmeasured" \
        else next((e.removeprefix("provisional: ") for e in f.evidence if e.startswith("provisional: ")), "")
    arch = f.device.arch if f.device is not None else None
    how = ROOFLINE
    if arch is not None and float(arch.cc) < 9.0 and f.tensor_work != "none" and f.tensor_cores:
        how = (f"ncu --set full (or {ROOFLINE}) on this {arch.name} GPU, adding its tensor FLOP counters where "
               "`ncu --query-metrics | grep sm__ops_path_tensor` lists them")
    return f"recapture with the counters this report lacks ({why or 'FLOP and DRAM bytes'}): {how}"


def _recapture_confirm(f: Facts) -> str:
    if f.device is not None and f.device.how == "unidentified":
        return f"analyze --hw KEY holds it to that device's roofs (its hw_key is no longer {f.hw_key})"
    flop = ("the FLOP counters (sm__sass_thread_inst_executed_op_*)"
            if f.device is not None and f.device.tensor_cores is False else "sm__ops_path_tensor_src_*")
    return f"the new report has {flop} and dram__bytes_{{read,write}}.sum"


RECAPTURE_ROOFLINE = LeverRule(
    name="recapture-roofline",
    family="capture",
    when=lambda f: f.bound == "unmeasured" or f.provisional,
    action=_recapture_action,
    expected=lambda f: f"turns '{'provisional' if f.provisional else 'unmeasured'}' into a limiter with its %SoL",
    unlock=unsized,
    confirm=_recapture_confirm,
    gain=3,
    cost=1,
)

PROFILE_THE_GRAPH = LeverRule(
    name="profile-the-graph",
    family="capture",
    when=lambda f: f.limiter.kind == "launch" and f.in_cuda_graph,
    action=lambda f: ("already inside vLLM's CUDA graph: profile the whole graph as one workload to see the step "
                      "it belongs to (kernelscope capture --graph-profiling graph)"),
    expected=lambda f: ("the graph's time against the sum of its kernels' says what launches and gaps cost "
                        "inside the step"),
    unlock=unsized,
    confirm="one result for the graph, its gpu__time_duration the step's",
    gain=1,
    cost=1,
)

RECAPTURE_STALLS = LeverRule(
    name="recapture-stalls",
    family="capture",
    # a launch-bound kernel's stalls do not set its time
    when=lambda f: f.bound == "latency" and f.limiter.kind != "launch" and f.rec.warp_stalls is None,
    action=lambda f: f"recapture with the stalls add-on to name what warps wait on: {STALLS}",
    expected=lambda f: "names the dominant stall and its lever",
    unlock=unsized,
    confirm="warp_stalls is filled in",
    gain=1,
    cost=1,
)
