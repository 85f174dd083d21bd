"""What every lever family stands on: the rule's shape (LeverRule), who can pull which kind of lever
(PULLABLE), the captures that confirm a lever, and the helpers more than one family sizes or words
its lever with. A helper only one family uses lives in that family's module, next to its rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ...model import ProvenanceKind
from ...serving import DEFAULTS
from ..quantities import size
from ..rules import Facts, ramp_floor_ns

ROOFLINE = "kernelscope capture --set roofline"
STALLS = "kernelscope capture --set roofline --add stalls"
NSYS = "nsys profile, then kernelscope join --nsys (the kernel's total time)"
SIZED_FROM_PCT = 10.0  # a roof further off than this is not used to size an unlock

# Who can pull what: a library kernel is changed from outside it (another algorithm or shape,
# precision, fusion, batching, CUDA graphs); an open kernel also by picking another kernel or its
# own options; source and compiler levers only for the user's own code.
PULLABLE: dict[ProvenanceKind, frozenset[str]] = {
    "library": frozenset({"algorithm", "shape", "kernel", "precision", "fusion", "batching", "graphs", "capture",
                          "serving"}),
    "open": frozenset({"kernel", "config", "precision", "fusion", "batching", "graphs", "capture", "serving"}),
    "user": frozenset({"source", "compiler", "kernel", "config", "algorithm", "shape", "precision", "fusion",
                       "batching", "graphs", "capture", "serving"}),
}

TORCH_FAMILIES = ("PyTorch ATen", "Triton (torch.compile)")


def torch_fuses(f: Facts) -> bool:
    """Whether fusing it is torch.compile's (or an epilogue's) to do: an ATen or Triton kernel, or a
    library's under PyTorch; not the user's own CUDA kernel, which they fuse themselves."""
    return f.prov.family in TORCH_FAMILIES or f.prov.kind == "library"


class LeverRule(NamedTuple):
    """One lever. `family` is who can pull it (checked against PULLABLE for the kernel's owner), not the
    module it is written in: the modules group levers by the kind of kernel or limit they answer.
    `when` firing is not all: levers() also drops a rule the owner cannot pull, any but the
    communication levers on a collective, and one whose `unlock` (capped at the launch-and-ramp floor
    for the same-bytes families) is under WORTH_X."""

    name: str
    family: str
    when: Callable[[Facts], bool]
    action: Callable[[Facts], str]
    expected: Callable[[Facts], str]
    unlock: Callable[[Facts], float | None]  # upper bound on the speed-up, x
    confirm: str | Callable[[Facts], str]  # the measurement that confirms it (a function where it depends)
    gain: int  # 3 high, 2 medium, 1 low
    cost: int  # 1 low, 2 medium, 3 high


def unsized(f: Facts) -> None:
    """The `unlock` of a lever whose speed-up the report cannot size."""
    return None


def vllm_flag(f: Facts, key: str) -> str:
    """A vLLM option as the capture's serving command gave it, or what vLLM does without it."""
    given = f.serving.get(key) if f.serving is not None else None
    if given:
        return f"now {given}"
    if f.serving is not None and f.serving.recognised:
        return "not recorded in the capture (its script or the server's flags set it)"
    if f.serving is not None and f.serving.in_script:
        return "not on its command line: set in its script, if at all"
    return DEFAULTS[key]


def mb(n: float | None) -> str:
    """Bytes as a lever's text says them, or that they were not measured."""
    return "unmeasured bytes" if n is None else size(n)


def took(f: Facts) -> str:
    """The launch's duration as a lever's text says it."""
    return f"{(f.rec.duration_ns or 0) / 1e3:.1f} µs"


def at_ramp_floor(f: Facts) -> bool:
    """Within reach of the measured launch-and-ramp floor for its bytes (verdict/bound.py, latency)."""
    return f.limiter.kind == "launch" and f.limiter.name == "launch and ramp"


def level_up(f: Facts) -> str:
    """How a level-up lever opens on a kernel at its roof."""
    return f"at the {f.limiter.name} ({f.limiter.pct:.0f} %): one level up, " if f.at_roof else ""


def is_triton(f: Facts) -> bool:
    return f.prov.family == "your Triton"


def no_tensor_work(f: Facts) -> bool:
    """Measured to run no tensor-core math: a kernel whose tensor work was not counted, or may have
    run unseen, is not one (a GEMM is never told to fuse away or to use the tensor cores it uses)."""
    return f.tensor_work == "none"


def headroom(f: Facts) -> float | None:
    """Up to the named roof (or, for latency, the nearest one); a provisional verdict's busy share is
    no roof to size from. At the launch-and-ramp floor, no algorithm beats the floor for its bytes."""
    if f.provisional:
        return None
    if at_ramp_floor(f):
        floor = ramp_floor_ns(f.rec.dram_bytes, f.hw_key)
        return None if floor is None or not f.rec.duration_ns else max(f.rec.duration_ns / floor, 1.0)
    roof = f.limiter if f.limiter.pct is not None else f.runner_up
    return None if roof is None or roof.pct is None or roof.pct < SIZED_FROM_PCT else 100 / roof.pct


def headroom_expected(f: Facts) -> str:
    roof = f.limiter if f.limiter.pct is not None else f.runner_up
    x = headroom(f)
    if f.provisional:
        return "provisional verdict: no roof to size it from; compare the algorithms' duration_ns"
    if at_ramp_floor(f) and x is not None:
        return (f"{took(f)} against the {(f.rec.duration_ns or 0) / x / 1e3:.1f} µs any kernel moving its "
                f"{(f.rec.dram_bytes or 0) / 1e6:.1f} MB takes on this GPU (measured ramp): up to {x:.2f}x")
    if roof is None or x is None:
        return "no roof within reach to size it: compare the algorithms' duration_ns"
    return f"the {roof.name} is at {roof.pct:.0f} %: up to {x:.1f}x to that roof"
