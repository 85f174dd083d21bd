"""Collective levers: NCCL and vLLM's custom all-reduce. A collective's time is the link's and the
peers', not its own instructions', so it is not tuned like a GEMM or a stream: it gets only the
lever on the collective itself (overlap it, shrink it, fewer ranks), CUDA graphs and profiling the
graph it runs in (COMMUNICATION_LEVERS; levers() keeps every other lever away from it).
"""

from __future__ import annotations

from .common import NSYS, LeverRule, took, unsized

SHRINK_COMMUNICATION = LeverRule(
    name="shrink-communication",
    family="serving",
    when=lambda f: f.communication,
    action=lambda f: ("overlap or shrink the collective: vLLM's custom all-reduce on NVLink (on unless "
                      "--disable-custom-all-reduce), fewer tensor-parallel ranks where the model fits "
                      "(--tensor-parallel-size), NCCL_PROTO/NCCL_ALGO for the message size" if f.vllm else
                      "overlap the collective with compute (async_op=True, bucketing) or shrink it: fewer, larger "
                      "collectives, fewer ranks where the model fits, NCCL_PROTO/NCCL_ALGO for the message size"),
    expected=lambda f: (f"its {took(f)} a launch is the link's and the peers' time: "
                        "its share of the step sizes the gain"),
    unlock=unsized,
    confirm=f"the collective's share of the step falls: {NSYS}",
    gain=2,
    cost=2,
)

# the only levers a collective gets: this one, CUDA graphs (launch.py) and profiling the graph (capture.py)
COMMUNICATION_LEVERS = frozenset({"shrink-communication", "vllm-cuda-graphs", "cuda-graph", "profile-the-graph"})
