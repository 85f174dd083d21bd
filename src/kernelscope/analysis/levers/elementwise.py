"""Elementwise and reduction levers: kernels that stream memory and do no tensor-core math (copies,
casts, activations, norms, reductions, random-number generators), and any kernel that moves its
bytes slower than the HBM roof would. Such a kernel's floor is its bytes at the HBM roof, so these
levers remove the bytes (fuse it into a neighbour, store half of them) or stream them once in a
better kernel; the unlock is sized against that floor, plus the measured launch and ramp.
"""

from __future__ import annotations

import re

from ..rules import AT_ROOF_PCT, EMPTY_KERNEL_NS, Facts, ramp_overhead_ns
from .common import NSYS, ROOFLINE, LeverRule, mb, no_tensor_work, took, torch_fuses, unsized

STREAM_WORTH_X = 1.5  # streaming the bytes once must promise at least this speed-up to be offered

RNG = re.compile(r"distribution_|philox|curand|randperm|normal_kernel|uniform_kernel|bernoulli", re.IGNORECASE)
COPY = re.compile(r"copy|Copy|transpose|contiguous|CatArray|cat_|clone", re.IGNORECASE)
FP32_DATA = re.compile(r"\bfloat\b")
HALF_DATA = re.compile(r"BFloat16|Half|bfloat16|half|__nv_bfloat16|fp16")


def _stream_floor_ns(f: Facts) -> float | None:
    """The kernel's DRAM bytes at the HBM roof plus the measured launch-and-ramp overhead for as
    many bytes (rules.ramp_overhead_ns); off its measured range, at least an empty kernel's time."""
    r = f.rec
    if not f.hbm_pct or r.achieved_dram_tbps is None or r.dram_bytes is None:
        return None
    at_roof = r.dram_bytes / (r.achieved_dram_tbps * 100 / f.hbm_pct * 1e3)
    overhead = ramp_overhead_ns(r.dram_bytes, f.hw_key)
    return max(at_roof, EMPTY_KERNEL_NS) if overhead is None else at_roof + overhead


def _stream_action(f: Facts) -> str:
    """Who writes the faster streaming kernel depends on whose this one is."""
    if f.attention_like:
        return ("another attention kernel for this shape that streams the KV cache once (FlashInfer's decode "
                "kernels, FlashAttention-3 with more KV splits; vLLM: VLLM_ATTENTION_BACKEND)")
    if f.prov.family == "Triton (torch.compile)" and f.vllm:
        return ("let inductor tune it, through vLLM's compilation config (vLLM owns torch.compile's switches): "
                "--compilation-config '{\"inductor_compile_config\": {\"max_autotune\": true, "
                "\"coordinate_descent_tuning\": true}, \"compile_sizes\": [<the decode batch sizes you serve>]}'")
    if f.prov.family == "Triton (torch.compile)":
        return ("let inductor tune it: torch.compile(mode='max-autotune') searches its block sizes and grid; "
                "torch._inductor.config.coordinate_descent_tuning=True refines them")
    return ("replace or fuse it: a kernel that streams its bytes once at the HBM roof (torch.compile's generated "
            "Triton kernel, or the fused op it belongs to)")


def _busy_bound(f: Facts) -> float | None:
    """A replacement still executes the work this kernel's instructions do: when a pipe or the issue
    slots bind, at most their headroom (a Philox generator stays a Philox generator)."""
    if f.limiter.kind in ("pipe", "issue") and f.limiter.pct:
        return 100 / f.limiter.pct
    return None


def _stream_unlock(f: Facts) -> float | None:
    floor = _stream_floor_ns(f)
    if floor is None or not f.rec.duration_ns:
        return None
    bound = _busy_bound(f)
    return f.rec.duration_ns / floor if bound is None else min(f.rec.duration_ns / floor, bound)


def _stream_expected(f: Facts) -> str:
    floor, x = _stream_floor_ns(f), _stream_unlock(f)
    how = ("at the HBM roof, plus the launch and ramp measured for as many bytes, rules.RAMP_FLOOR_NS"
           if ramp_overhead_ns(f.rec.dram_bytes, f.hw_key) is not None else "at the HBM roof")
    said = f"{mb(f.rec.dram_bytes)} take at least {(floor or 0) / 1e3:.1f} µs ({how}); it takes {took(f)}"
    bound = _busy_bound(f)
    if bound is not None and x == bound and floor:
        said += (f" ({(f.rec.duration_ns or 0) / floor:.1f}x its floor), but with {f.limiter.name} "
                 f"{f.limiter.pct:.0f} % busy doing work a replacement still issues: up to {x or 0:.1f}x for the same "
                 "instructions; nearer the floor only with fewer of them")
        return said
    return f"{said}: up to {x or 0:.1f}x"


def _memory_side(f: Facts) -> bool:
    """Left of the ridge, throttled by something other than a memory roof, with room to stream."""
    r = f.rec
    x = _stream_unlock(f)
    return (f.limiter.kind in ("pipe", "issue", "latency") and r.arithmetic_intensity is not None
            and f.ridge is not None and r.arithmetic_intensity < f.ridge and x is not None and x >= STREAM_WORTH_X)


def _fp32_stream(f: Facts) -> bool:
    """A memory-bound kernel over fp32 data (its template names float, no half type): bf16 halves it."""
    return f.bound == "memory" and f.limiter.kind == "hbm" and no_tensor_work(f) and \
        bool(FP32_DATA.search(f.rec.name_full)) and not HALF_DATA.search(f.rec.name_full)


def _half(f: Facts) -> str:
    """The 16-bit type this chip computes in: bf16 from Ampere, fp16 before (Volta and Turing have no bf16)."""
    arch = f.device.arch if f.device is not None else None
    return "fp16" if arch is not None and not arch.has("bf16") else "bf16 (or fp16)"


FUSE_AWAY = LeverRule(
    name="fuse-away",
    family="fusion",
    when=lambda f: f.bound == "memory" and no_tensor_work(f) and not f.split_k_reduce and not f.gemm_like,
    action=lambda f: ("fuse it into its producer or consumer (torch.compile, a fused epilogue)"
                      if torch_fuses(f) else
                      "fuse it into your own producer or consumer kernel, so the tensor never goes to memory") + (
        ", or drop the copy (a view, an in-place op)" if COPY.search(f.rec.name_full) else ""),
    expected=lambda f: (f"up to its {mb(f.rec.dram_bytes)} of DRAM traffic and its {took(f)}: the intermediate "
                        "tensor's write and read and this launch go; inputs the fused kernel must still read stay"),
    unlock=unsized,
    confirm=f"the fused op's dram_bytes lose this kernel's; total time falls: {NSYS}",
    gain=3,
    cost=2,
)

BF16_STORAGE = LeverRule(
    name="bf16-storage",
    family="precision",
    when=_fp32_stream,
    action=lambda f: (f"keep the tensor in {_half(f)} rather than fp32: the kernel moves half the bytes"),
    expected=lambda f: f"at the HBM roof time follows its {mb(f.rec.dram_bytes)}: up to 2x with half of them",
    unlock=lambda f: 2.0,
    confirm=f"dram_bytes halves and duration_ns with it: {ROOFLINE}",
    gain=2,
    cost=2,
)

GENERATE_IN_CONSUMER = LeverRule(
    name="generate-in-consumer",
    family="fusion",
    # the name searched last: ~13 µs on a long templated name, a launch
    when=lambda f: f.limiter.kind in ("pipe", "issue") and bool(RNG.search(f.rec.name_full)),
    action=lambda f: ("generate the random numbers inside the kernel that uses them (torch.compile fuses "
                      "torch.rand/randn into their consumer; in your own kernel, Philox where the value is needed): "
                      "a separate generator kernel writes them to memory for the consumer to read back"),
    expected=lambda f: (f"removes this kernel's {took(f)} and its {mb(f.rec.dram_bytes)} round trip; the consumer "
                        "does the generation's arithmetic instead (a faster generator kernel gains at most "
                        f"{100 / (f.limiter.pct or 100):.2f}x: {f.limiter.name} {f.limiter.pct:.0f} % busy)"),
    unlock=unsized,
    confirm=f"the kernel no longer appears and the consumer's duration_ns grows less than this kernel's: {NSYS}",
    gain=3,
    cost=2,
)

STREAM_ONCE = LeverRule(
    name="stream-once",
    family="kernel",
    when=lambda f: f.prov.kind != "user" and _memory_side(f) and not f.split_k_reduce,
    action=_stream_action,
    expected=_stream_expected,
    unlock=_stream_unlock,
    confirm=f"the replacement's HBM % nears {AT_ROOF_PCT:.0f} and duration_ns falls: {ROOFLINE}",
    gain=3,
    cost=2,
)

STREAM_ONCE_SOURCE = LeverRule(
    name="stream-once-source",
    family="source",
    when=lambda f: f.prov.kind == "user" and _memory_side(f),
    action=lambda f: "restructure it to stream each byte once: one pass, vector loads, fewer instructions a byte",
    expected=_stream_expected,
    unlock=_stream_unlock,
    confirm=f"HBM % nears {AT_ROOF_PCT:.0f} and duration_ns falls: {ROOFLINE}",
    gain=3,
    cost=2,
)
