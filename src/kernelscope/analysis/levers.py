"""Levers as data: when each applies, who can pull it (its family against the kernel's owner,
provenance.py), the action, the expected unlock sized from the kernel's own figures, the cost, and
the metric and capture that confirm it. verdict.py ranks what fires: gain, then cost, then unlock.
Unlocks are upper bounds (the roof the lever aims at), never promises.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..model import Lever, ProvenanceKind
from ..serving import DEFAULTS
from .judge import ramp_floor_ns, ramp_overhead_ns
from .rules import (
    AT_ROOF_PCT,
    DOMINANT_STALL_PCT,
    EMPTY_KERNEL_NS,
    RAMP_FLOOR_NS,
    Facts,
)

ROOFLINE = "kernelscope capture --set roofline"
STALLS = "kernelscope capture --set roofline --add stalls"
NSYS = "nsys profile, then kernelscope join --nsys (the kernel's total time)"
SIZED_FROM_PCT = 10.0  # a roof further off than this is not used to size an unlock
GRAPH_WORTH_NS = 10_000.0  # past this, host launch gaps (3.3 µs each) are a small part of a launch-and-ramp kernel
WORTH_X = 1.05  # a lever sized to gain less than this is not offered
STREAM_WORTH_X = 1.5  # streaming the bytes once must promise at least this speed-up to be offered

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


def _flag(f: Facts, key: str) -> str:
    """A vLLM option as the capture's serving command gave it, or what vLLM does without it."""
    given = f.serving.get(key) if f.serving is not None else None
    if given:
        return f"now {given}"
    if f.serving is not None and f.serving.recognised:
        return "not recorded in the capture (its script or the server's flags set it)"
    if f.serving is not None and f.serving.in_script:
        return "not on its command line: set in its script, if at all"
    return DEFAULTS[key]


@dataclass(frozen=True)
class LeverRule:
    name: str
    family: str
    when: Callable[[Facts], bool]
    action: Callable[[Facts], str]
    expected: Callable[[Facts], str]
    unlock: Callable[[Facts], float | None]  # upper bound on the speed-up, x
    confirm: str | Callable[[Facts], str]  # the measurement that confirms it (a function where it depends)
    gain: int  # 3 high, 2 medium, 1 low
    cost: int  # 1 low, 2 medium, 3 high


def _mb(n: float | None) -> str:
    if n is None:
        return "unmeasured bytes"
    return f"{n / 1e6:,.0f} MB" if n >= 10e6 else f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} KB"


def _us(f: Facts) -> str:
    return f"{(f.rec.duration_ns or 0) / 1e3:.1f} µs"


def _ramp(f: Facts) -> bool:
    """Within reach of the measured launch-and-ramp floor for its bytes (judge.latency)."""
    return f.limiter.kind == "launch" and f.limiter.name == "launch and ramp"


def _graph_worth(f: Facts) -> bool:
    return f.limiter.kind == "launch" and (not _ramp(f) or f.lt(f.rec.duration_ns, GRAPH_WORTH_NS))


def _graph_expected(f: Facts) -> str:
    launch = ("a host launch (3.3 µs back to back on an H200, docs/hopper-measurements.md §8"
              + ("" if f.hw_key in RAMP_FLOOR_NS else "; not measured on this GPU") + ")")
    if _ramp(f):
        return f"{_us(f)} on the GPU, about {launch}: in a graph the GPU no longer waits on the host between kernels"
    return (f"{_us(f)} on the GPU at about an empty kernel's time: {launch} sets its cost; in a graph the host "
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


def _up(f: Facts) -> str:
    """How a level-up lever opens on a kernel at its roof."""
    return f"at the {f.limiter.name} ({f.limiter.pct:.0f} %): one level up, " if f.at_roof else ""


def _headroom(f: Facts) -> float | None:
    """Up to the named roof (or, for latency, the nearest one); a provisional verdict's busy share is
    no roof to size from. At the launch-and-ramp floor, no algorithm beats the floor for its bytes."""
    if f.provisional:
        return None
    if _ramp(f):
        floor = ramp_floor_ns(f.rec.dram_bytes, f.hw_key)
        return None if floor is None or not f.rec.duration_ns else max(f.rec.duration_ns / floor, 1.0)
    roof = f.limiter if f.limiter.pct is not None else f.runner_up
    return None if roof is None or roof.pct is None or roof.pct < SIZED_FROM_PCT else 100 / roof.pct


def _stream_floor_ns(f: Facts) -> float | None:
    """The kernel's DRAM bytes at the HBM roof plus the measured launch-and-ramp overhead for as
    many bytes (judge.ramp_overhead_ns); off its measured range, at least an empty kernel's time."""
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
    said = f"{_mb(f.rec.dram_bytes)} take at least {(floor or 0) / 1e3:.1f} µs ({how}); it takes {_us(f)}"
    bound = _busy_bound(f)
    if bound is not None and x == bound and floor:
        said += (f" ({(f.rec.duration_ns or 0) / floor:.1f}x its floor), but with {f.limiter.name} "
                 f"{f.limiter.pct:.0f} % busy doing work a replacement still issues: up to {x or 0:.1f}x for the same "
                 "instructions; nearer the floor only with fewer of them")
        return said
    return f"{said}: up to {x or 0:.1f}x"


MEASURED_SAME_SHAPE = {  # measured speed-ups, same shape, same H200 (tests/fixtures): (x, what)
    "attention": (802.0 / 426.3, "FlashAttention-2 (mma.sync) 802.0 µs vs cuDNN SDPA (wgmma) 426.3 µs, bf16 B4 H32 "
                                 "S2048 D128 (attention_fa2, attention_cudnn)"),
    "triton-gemm": (413.8 / 339.3, "a user Triton GEMM 413.8 µs vs cuBLAS 339.3 µs at 4096x8192x4096 bf16 "
                                   "(sets.tar.xz: mm_kernel, nvjet; 79 % vs 93 % of the tensor roof)"),
}


def _wgmma_unlock(f: Facts) -> float:
    return MEASURED_SAME_SHAPE["attention"][0] if f.attention_like else 1 / (f.path_ratio or 1)


def _wgmma_expected(f: Facts) -> str:
    roof = (f"mma.sync's roof is {100 * (f.path_ratio or 1):.0f} % of the wgmma peak on this chip (FlashAttention-3 "
            f"authors): {1 / (f.path_ratio or 1):.1f}x roof to roof")
    if f.attention_like:
        x, what = MEASURED_SAME_SHAPE["attention"]
        return f"{roof}; measured at one shape, non-causal: {what}: {x:.2f}x (another shape or a causal mask moves it)"
    return f"{roof}; measured on an H200, 628 TFLOP/s mma.sync vs 787 cuBLAS wgmma, 1.25x"


SPLIT_COMBINE = re.compile(r"FlashAttnFwdCombine|splitkv_combine|flash_fwd_splitkv_combine")
COMBINE = ("FlashAttention's split-KV combine: the price of splitting the KV sequence so the attention kernel "
           "fills the SMs; judge it with that kernel (their times add): fewer splits remove it only where the "
           "attention kernel keeps its SMs busy without them (not at long context)")
RNG = re.compile(r"distribution_|philox|curand|randperm|normal_kernel|uniform_kernel|bernoulli", re.IGNORECASE)
COPY = re.compile(r"copy|Copy|transpose|contiguous|CatArray|cat_|clone", re.IGNORECASE)
FP32_DATA = re.compile(r"\bfloat\b")
HALF_DATA = re.compile(r"BFloat16|Half|bfloat16|half|__nv_bfloat16|fp16")


def _fp32_stream(f: Facts) -> bool:
    """A memory-bound kernel over fp32 data (its template names float, no half type): bf16 halves it."""
    return f.bound == "memory" and f.limiter.kind == "hbm" and _no_tensor_work(f) and \
        bool(FP32_DATA.search(f.rec.name_full)) and not HALF_DATA.search(f.rec.name_full)


def _triton(f: Facts) -> bool:
    return f.prov.family == "your Triton"


def _memory_side(f: Facts) -> bool:
    """Left of the ridge, throttled by something other than a memory roof, with room to stream."""
    r = f.rec
    x = _stream_unlock(f)
    return (f.limiter.kind in ("pipe", "issue", "latency") and r.arithmetic_intensity is not None
            and f.ridge is not None and r.arithmetic_intensity < f.ridge and x is not None and x >= STREAM_WORTH_X)


def _tensor_operands(f: Facts) -> bool:
    return f.rec.dominant_precision in {"tensor_bf16", "tensor_fp16", "tensor_tf32"}


def _weight_operands(f: Facts) -> bool:
    """A matmul that streams its weights in 16 or 32 bits: counted so, or a GEMM or MoE kernel whose tensor
    FLOP were not captured (its name says no fp8: category FP4/FP8 BMM holds those)."""
    if f.attention_like:
        return False
    return _tensor_operands(f) or (f.tensor_work in ("uncounted", "unknown") and f.gemm_like
                                   and f.category in ("GEMM/cuBLAS", "MoE"))


def _precision_unsaid(f: Facts) -> str:
    return "" if _tensor_operands(f) else " (if its operands are bf16/fp16: its tensor FLOP were not captured to say)"


def _rows_expected(f: Facts) -> str:
    if f.rec.arithmetic_intensity is None or f.ridge is None:
        return ("a decode GEMM reads each weight once for the rows of a step: more rows share the read (its FLOP "
                "were not captured, so the work per byte is not sized)")
    return (f"{f.rec.arithmetic_intensity:.0f} FLOP a DRAM byte against a ridge of {f.ridge:.0f}: up to "
            f"{(f.ridge or 0) / (f.rec.arithmetic_intensity or 1):.0f}x the work per byte before the tensor roof binds "
            "(counted tensor FLOP include any padded rows of a tile a small M leaves unfilled: the useful work per "
            "byte can be lower, the room larger)")


FP8_KV = re.compile(r"e4m3|e5m2|fp8", re.IGNORECASE)


def _no_tensor_work(f: Facts) -> bool:
    """Measured to run no tensor-core math: a kernel whose tensor work was not counted, or may have
    run unseen, is not one (a GEMM is never told to fuse away or to use the tensor cores it uses)."""
    return f.tensor_work == "none"


def _wgmma_action(f: Facts) -> str:
    if f.attention_like:
        how = ("vLLM: VLLM_ATTENTION_BACKEND=FLASH_ATTN (FlashAttention-3 on Hopper)" if f.vllm else
               "torch: sdpa_kernel(SDPBackend.CUDNN_ATTENTION)")
        return f"switch to a wgmma attention kernel: FlashAttention-3 or cuDNN SDPA ({how})"
    return "use a wgmma matmul (cuBLAS, or CUTLASS sm90 kernels) instead of mma.sync"


def _step(f: Facts) -> tuple[str, float]:
    """The cheaper precision (short name) and its peak over this one's; the rule checks it exists."""
    cls, ratio = f.step or ("", 1.0)
    return cls.removeprefix("tensor_"), ratio


def _precision_action(f: Facts) -> str:
    step = _step(f)[0]
    how = " (FlashAttention-3 fp8, cuDNN fp8 SDPA)" if f.attention_like else f" ({step} GEMM: torch._scaled_mm, Transformer Engine)"
    return f"{_up(f)}run the tensor work in {step}{how}, if accuracy holds"


# torch's SDPA backends (torch.nn.attention.SDPBackend) and the provenance family of the kernels each runs
SDPA_BACKENDS = (("FLASH_ATTENTION", "FlashAttention"), ("CUDNN_ATTENTION", "cuDNN"),
                 ("EFFICIENT_ATTENTION", "memory-efficient"))


def _algorithm_action(f: Facts) -> str:
    if f.attention_like and f.vllm:
        return ("choose another attention backend for this shape: VLLM_ATTENTION_BACKEND=FLASH_ATTN "
                "(FlashAttention-3 on Hopper), FLASHINFER, or TRITON_ATTN, whichever this one is not")
    if f.attention_like:  # torch SDPA picks no cuDNN engine for you: the choice one has is the backend
        others = [b for b, family in SDPA_BACKENDS if family not in f.prov.family]
        return (f"choose another SDPA backend for this shape: torch.nn.attention.sdpa_kernel(SDPBackend."
                f"{' / SDPBackend.'.join(others)}); outside SDPA, FlashAttention-3's flash_attn_interface "
                "(Hopper) or FlashInfer")
    if f.vllm:  # vLLM calls cuBLAS through torch: its user picks no algorithm
        return ("cuBLAS's heuristic chose this algorithm and vLLM offers no switch for it: what moves it is the "
                "shape (--max-num-seqs, tensor parallelism) or the precision (--quantization fp8); report the "
                "shape upstream if another algorithm is faster (cuBLASLt heuristic list, outside vLLM)")
    if "cuDNN" in f.prov.family:
        return "let cuDNN benchmark its engines for this shape (torch.backends.cudnn.benchmark = True)"
    tuned = ("cuBLASLt's heuristic picked this algorithm and PyTorch has no per-call switch for it: another of "
             "its heuristic results, called through cuBLASLt yourself (cublasLtMatmulAlgoGetHeuristic), or a "
             "shape it serves better (rows batched, dimensions padded to multiples of 16)")
    if f.limiter.kind in ("hbm", "l2"):
        under = f.rec.waves_per_sm is not None and f.rec.waves_per_sm < 1
        return f"{tuned}: " + (
            f"its grid fills {100 * (f.rec.waves_per_sm or 0):.0f} % of one wave, so split-K or smaller tiles"
            if under else "larger tiles or 2-CTA multicast move fewer bytes per FLOP")
    if f.limiter.kind in ("tensor", "simt", "pipe", "issue"):
        return f"{tuned}: other tiles and schedules for the same work"
    if _ramp(f):
        return f"{tuned}: at this size launch and ramp are most of its time, so the bytes' floor bounds any of them"
    return f"{tuned}: a split-K or stream-K algorithm, or smaller tiles, so more CTAs share the work"


def _headroom_expected(f: Facts) -> str:
    roof = f.limiter if f.limiter.pct is not None else f.runner_up
    x = _headroom(f)
    if f.provisional:
        return "provisional verdict: no roof to size it from; compare the algorithms' duration_ns"
    if _ramp(f) and x is not None:
        return (f"{_us(f)} against the {(f.rec.duration_ns or 0) / x / 1e3:.1f} µs any kernel moving its "
                f"{(f.rec.dram_bytes or 0) / 1e6:.1f} MB takes on this GPU (measured ramp): up to {x:.2f}x")
    if roof is None or x is None:
        return "no roof within reach to size it: compare the algorithms' duration_ns"
    return f"the {roof.name} is at {roof.pct:.0f} %: up to {x:.1f}x to that roof"


TORCH_FAMILIES = ("PyTorch ATen", "Triton (torch.compile)")


def _half(f: Facts) -> str:
    """The 16-bit type this chip computes in: bf16 from Ampere, fp16 before (Volta and Turing have no bf16)."""
    arch = f.device.arch if f.device is not None else None
    return "fp16" if arch is not None and not arch.has("bf16") else "bf16 (or fp16)"


def _fill_action(f: Facts) -> str:
    """More work a launch, said as the kernel's owner does it."""
    if f.vllm and f.gemm_like:
        return ("its grid is set by N and the tile vLLM's dispatch picks for this M: no switch per kernel; more "
                f"sequences a step (--max-num-seqs, {_flag(f, 'max_num_seqs')}) change M, not the grid")
    if f.vllm:
        return ("more sequences a decode step (the concurrency served, up to vLLM's --max-num-seqs, "
                f"{_flag(f, 'max_num_seqs')}): its grid follows the tokens a step, so each launch does more work "
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
    if x is None:
        return (f"{said}; the gain is not sized: with no launch-and-ramp floor for its bytes on this GPU "
                "(DRAM bytes not captured, or the floor not measured here), the empty slots alone do not bound it")
    if x < full:
        return (f"{said}, but a launch moving its {(f.rec.dram_bytes or 0) / 1e3:.0f} KB takes at least "
                f"{(f.rec.duration_ns or 0) / x / 1e3:.1f} µs on this GPU (measured ramp): up to {x:.2f}x, not {full:.0f}x")
    return f"{said}: up to {x:.1f}x if they took work"


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
    est = f"ncu estimates up to {r.speedup_pct:.1f} % of this kernel's time" if r.speedup_pct else "ncu gives no estimate"
    return f"{est}: {r.message.split('. ')[0].rstrip('.')}"


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


SPLIT_K = re.compile(r"splitK|split_?k", re.IGNORECASE)
FUSED_MOE = re.compile(r"^fused_moe_kernel")  # vLLM's Triton MoE GEMM (provenance.py)


def _none(f: Facts) -> None:
    return None


LEVERS: tuple[LeverRule, ...] = (
    LeverRule("recapture-roofline", "capture", lambda f: f.bound == "unmeasured" or f.provisional,
              _recapture_action,
              lambda f: f"turns '{'provisional' if f.provisional else 'unmeasured'}' into a limiter with its %SoL", _none,
              "the new report has sm__ops_path_tensor_src_* and dram__bytes_{read,write}.sum", 3, 1),
    LeverRule("vllm-moe-config", "config", lambda f: bool(FUSED_MOE.search(f.rec.name)) and not f.at_roof,
              lambda f: ("tune the fused-MoE Triton config for this GPU and shape: vLLM's "
                         "benchmarks/kernels/benchmark_moe.py --tune writes E=<experts>,N=<expert intermediate size / TP>,"
                         f"device_name={(f.rec.device or 'this GPU').replace(' ', '_')}.json; serve with "
                         "VLLM_TUNED_CONFIG_FOLDER=<its folder> (with no file for the shape vLLM runs a default config "
                         "and logs a warning)"),
              _headroom_expected, _headroom,
              f"the same batch's fused_moe_kernel duration_ns under the tuned config: {ROOFLINE}", 3, 1),
    LeverRule("wgmma-kernel", "kernel", lambda f: f.path_ratio is not None and f.bound != "unmeasured"
              and not FUSED_MOE.search(f.rec.name),
              _wgmma_action, _wgmma_expected, _wgmma_unlock,
              f"tensor_path reads wgmma and duration_ns falls: {ROOFLINE}", 3, 2),
    LeverRule("lower-precision", "precision", lambda f: f.limiter.kind == "tensor" and f.step is not None,
              _precision_action,
              lambda f: f"the {_step(f)[0]} peak is {_step(f)[1]:.1f}x this one: up to {_step(f)[1]:.1f}x at the same %SoL",
              lambda f: _step(f)[1], f"flops move to the cheaper class and duration_ns falls: {ROOFLINE}", 3, 3),
    LeverRule("at-roof-batch", "batching", lambda f: f.at_roof and f.limiter.kind in ("tensor", "simt") and f.step is None,
              lambda f: f"at the {f.limiter.name} ({f.limiter.pct:.0f} %) with no cheaper precision on this device: one level up, batch more work a launch or fuse its neighbours",
              lambda f: f"this kernel has at most {100 / (f.limiter.pct or 100) - 1:.0%} left; the gain is in the work around it",
              _none, f"time per unit of work falls across the step: {NSYS}", 1, 2),
    LeverRule("quantise-operands", "precision", lambda f: f.limiter.kind == "hbm" and _weight_operands(f),
              lambda f: f"{_up(f)}store the weights it streams in fp8" + (
                  f": vLLM --quantization fp8 ({_flag(f, 'quantization')}); int4 weights (AWQ, GPTQ) run on vLLM's "
                  "Marlin/Machete kernels, not cuBLAS" if f.vllm else
                  " (torch._scaled_mm, Transformer Engine), or int4 with a kernel that reads int4 (Marlin, Machete)")
              + _precision_unsaid(f),
              lambda f: f"time follows DRAM bytes at the HBM roof: fp8 halves its {_mb(f.rec.dram_bytes)} (up to 2x; int4 up to 4x on an int4 kernel)",
              lambda f: 2.0, f"dram_bytes and duration_ns fall together: {ROOFLINE}", 3, 3),
    LeverRule("kv-cache-fp8", "precision",
              lambda f: f.attention_like and f.limiter.kind == "hbm" and not FP8_KV.search(f.rec.name_full),
              lambda f: f"{_up(f)}store the KV cache in fp8, which decode attention streams: " + (
                  f"vLLM --kv-cache-dtype fp8 ({_flag(f, 'kv_cache_dtype')}; FlashAttention-3 reads an fp8 cache on Hopper)"
                  if f.vllm else "an fp8 KV cache (vLLM --kv-cache-dtype fp8; FlashInfer's and FlashAttention-3's fp8 paths)"),
              lambda f: f"time follows DRAM bytes at the HBM roof: an fp8 cache halves the KV part of its {_mb(f.rec.dram_bytes)} (up to 2x)",
              lambda f: 2.0, f"dram_bytes and duration_ns fall together: {ROOFLINE}", 3, 2),
    LeverRule("batch-rows", "batching",
              lambda f: f.bound == "memory" and _weight_operands(f) and (
                  f.rec.arithmetic_intensity is None or (f.ridge is not None and f.lt(f.rec.arithmetic_intensity, f.ridge))),
              lambda f: f"{_up(f)}batch more rows per weight read: " + (
                  f"raise vLLM's --max-num-seqs ({_flag(f, 'max_num_seqs')}) so more sequences share each decode "
                  "step's weight reads (a higher throughput, each step a little slower)" if f.vllm else
                  "more tokens a step, a larger M"),
              _rows_expected,
              _none, f"arithmetic_intensity rises with M while duration_ns grows slower than M: {ROOFLINE}", 3, 2),
    LeverRule("fuse-away", "fusion", lambda f: f.bound == "memory" and _no_tensor_work(f) and not f.split_k_reduce,
              lambda f: ("fuse it into its producer or consumer (torch.compile, a fused epilogue)"
                         if f.prov.family in TORCH_FAMILIES or f.prov.kind == "library" else
                         "fuse it into your own producer or consumer kernel, so the tensor never goes to memory") + (
                  ", or drop the copy (a view, an in-place op)" if COPY.search(f.rec.name_full) else ""),
              lambda f: f"removes its {_mb(f.rec.dram_bytes)} of DRAM traffic and its {_us(f)}",
              _none, f"the fused op's dram_bytes lose this kernel's; total time falls: {NSYS}", 3, 2),
    LeverRule("bf16-storage", "precision", _fp32_stream,
              lambda f: (f"keep the tensor in {_half(f)} rather than fp32: the kernel moves half the bytes"),
              lambda f: f"at the HBM roof time follows its {_mb(f.rec.dram_bytes)}: up to 2x with half of them",
              lambda f: 2.0, f"dram_bytes halves and duration_ns with it: {ROOFLINE}", 2, 2),
    LeverRule("generate-in-consumer", "fusion",
              lambda f: bool(RNG.search(f.rec.name_full)) and f.limiter.kind in ("pipe", "issue"),
              lambda f: "generate the random numbers inside the kernel that uses them (torch.compile fuses torch.rand/randn into their consumer; in your own kernel, Philox where the value is needed): a separate generator kernel writes them to memory for the consumer to read back",
              lambda f: f"removes this kernel's {_us(f)} and its {_mb(f.rec.dram_bytes)} round trip; the consumer does the generation's arithmetic instead (a faster generator kernel gains at most {100 / (f.limiter.pct or 100):.2f}x: {f.limiter.name} {f.limiter.pct:.0f} % busy)",
              _none, f"the kernel no longer appears and the consumer's duration_ns grows less than this kernel's: {NSYS}", 3, 2),
    LeverRule("triton-retune", "config", lambda f: _triton(f) and f.bound in ("compute", "memory", "latency") and not f.at_roof,
              lambda f: "retune the Triton kernel: BLOCK_M/N/K, num_warps and num_stages over a triton.autotune config list, GROUP_M for L2 reuse; on Hopper TMA descriptors (tl.make_tensor_descriptor), a persistent grid and warp specialisation",
              _headroom_expected, _headroom, f"the config's duration_ns, then {ROOFLINE}", 2, 1),
    LeverRule("library-gemm", "kernel", lambda f: _triton(f) and f.gemm_like_tensor and not f.at_roof,
              lambda f: "call the library GEMM instead (torch.matmul: cuBLAS picks a warp-specialised wgmma kernel) unless the Triton kernel fuses what cuBLAS cannot",
              lambda f: f"measured at one shape: {MEASURED_SAME_SHAPE['triton-gemm'][1]}: {MEASURED_SAME_SHAPE['triton-gemm'][0]:.2f}x",
              lambda f: MEASURED_SAME_SHAPE["triton-gemm"][0], f"duration_ns of torch.matmul at the same shape: {ROOFLINE}", 3, 1),
    LeverRule("fix-spills", "source", lambda f: f.spills,
              lambda f: "stop the register spills: fewer live values (smaller tiles, fewer accumulators, recompute instead of keep), or let the compiler use more registers (__launch_bounds__ with fewer threads; Triton: a smaller BLOCK or num_warps)",
              lambda f: f"{f.rec.register_spill_pct:.1f} % of its instructions move registers to and from local memory (L1/L2 traffic and latency)",
              _none, "register_spill_pct reaches 0: kernelscope capture --set full", 2, 2),
    LeverRule("fix-bank-conflicts", "source", lambda f: f.ncu_finding("SharedMemoryConflicts") is not None,
              lambda f: ("Triton lays out shared memory itself: try another BLOCK_K or num_stages, or tl.make_tensor_descriptor (TMA writes swizzled tiles)"
                         if _triton(f) else "pad or swizzle the shared-memory layout so a warp's accesses fall in distinct banks"),
              lambda f: _ncu_estimate(f, "SharedMemoryConflicts"), _none,
              "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum falls: kernelscope capture --set full", 1, 2),
    LeverRule("coalesce-global", "source", lambda f: f.ncu_finding("UncoalescedGlobalAccess") is not None,
              lambda f: ("coalesce global accesses: make the block's last axis the tensor's contiguous one in tl.load, or load through tl.make_tensor_descriptor (TMA)"
                         if _triton(f) else "coalesce global accesses: consecutive threads on consecutive addresses, 16-byte vector loads"),
              lambda f: _ncu_estimate(f, "UncoalescedGlobalAccess"), _none,
              "ncu's UncoalescedGlobalAccess no longer fires: kernelscope capture --set full", 2, 2),
    LeverRule("bytes-in-flight", "source",
              lambda f: f.bound == "memory" and not f.at_roof and f.top_stall == "long_scoreboard" and f.ge(f.top_stall_pct, DOMINANT_STALL_PCT),
              lambda f: "keep more bytes in flight: 16-byte vector loads, several independent loads a thread, cp.async/TMA pipelining",
              lambda f: f"the {f.limiter.name} is at {f.limiter.pct:.0f} %: up to {100 / (f.limiter.pct or 100):.1f}x to its roof",
              lambda f: 100 / (f.limiter.pct or 100), f"warp_stalls.long_scoreboard falls and the HBM % rises: {STALLS}", 2, 2),
    LeverRule("another-algorithm", "algorithm",
              lambda f: f.prov.kind == "library" and f.bound in ("compute", "memory", "latency") and not f.at_roof,
              _algorithm_action, _headroom_expected, _headroom,
              lambda f: ("the same shape's duration_ns under each backend" if f.attention_like else
                         "the same shape's duration_ns under each algorithm")
              + f", then {ROOFLINE}", 2, 1),
    LeverRule("fix-divergence", "source", lambda f: f.diverged,
              lambda f: "make branches warp-uniform: bucket or sort work by path, move the branch to block level, predicate short paths",
              _divergence_expected,
              lambda f: None if f.rec.simt_efficiency_pct is None else 100 / (f.rec.simt_efficiency_pct or 100), f"simt_efficiency_pct near 100 and the pipe % per FLOP falls: {ROOFLINE}", 3, 2),
    LeverRule("cut-instructions", "source", lambda f: f.limiter.kind in ("pipe", "issue"),
              lambda f: "fewer instructions per result: fast-math intrinsics, fewer passes over the data, vector loads, less index arithmetic",
              lambda f: f"{f.limiter.name} {f.limiter.pct:.0f} % busy: time follows the instructions it issues",
              _none, f"issue_active_pct stays high while duration_ns falls: {ROOFLINE}", 2, 2),
    LeverRule("stream-once", "kernel", lambda f: f.prov.kind != "user" and _memory_side(f) and not f.split_k_reduce,
              _stream_action, _stream_expected, _stream_unlock, f"the replacement's HBM % nears {AT_ROOF_PCT:.0f} and duration_ns falls: {ROOFLINE}", 3, 2),
    LeverRule("stream-once-source", "source", lambda f: f.prov.kind == "user" and _memory_side(f),
              lambda f: "restructure it to stream each byte once: one pass, vector loads, fewer instructions a byte",
              _stream_expected, _stream_unlock, f"HBM % nears {AT_ROOF_PCT:.0f} and duration_ns falls: {ROOFLINE}", 3, 2),
    LeverRule("split-k-reduce", "batching", lambda f: f.split_k_reduce,
              lambda f: ("the reduce of a split-K GEMM: cuBLASLt splits K when the output has too few tiles to fill "
                         "the SMs, then sums the partial tiles here; its time belongs to the GEMM launched before it. "
                         + (f"More rows a step (vLLM's --max-num-seqs, {_flag(f, 'max_num_seqs')}) gives the GEMM "
                            "enough tiles to run unsplit" if f.vllm else
                            "A larger M (more tokens a step, batched calls) lets cuBLASLt pick an unsplit algorithm")),
              lambda f: f"removes this {_us(f)} launch and the partial tiles' round trip through memory "
                        f"({_mb(f.rec.dram_bytes)}); judge it with its GEMM (their times add)",
              _none, f"splitKreduce_kernel no longer follows the GEMM, and the pair's time falls: {NSYS}", 2, 2),
    LeverRule("shrink-communication", "serving", lambda f: f.communication,
              lambda f: ("overlap or shrink the collective: vLLM's custom all-reduce on NVLink (on unless "
                         "--disable-custom-all-reduce), fewer tensor-parallel ranks where the model fits "
                         "(--tensor-parallel-size), NCCL_PROTO/NCCL_ALGO for the message size" if f.vllm else
                         "overlap the collective with compute (async_op=True, bucketing) or shrink it: fewer, larger "
                         "collectives, fewer ranks where the model fits, NCCL_PROTO/NCCL_ALGO for the message size"),
              lambda f: f"its {_us(f)} a launch is the link's and the peers' time: its share of the step sizes the gain",
              _none, f"the collective's share of the step falls: {NSYS}", 2, 2),
    LeverRule("vllm-cuda-graphs", "serving", lambda f: _graph_worth(f) and f.vllm and not f.in_cuda_graph,
              lambda f: "drop vLLM's --enforce-eager: vLLM then replays decode inside CUDA graphs (its default)",
              lambda f: f"{_us(f)} on the GPU: eager, every launch pays the host's 3.3 µs (docs/hopper-measurements.md §8); in a graph the host submits the step once, and the GPU time stays",
              _none, f"the decode step's time falls (vLLM's own step time, or {NSYS})", 3, 1),
    LeverRule("cuda-graph", "graphs", lambda f: _graph_worth(f) and f.serving is None,
              lambda f: ("launch it inside a CUDA graph (torch.cuda.graphs, torch.compile mode='reduce-overhead')"
                         if f.prov.family in TORCH_FAMILIES else
                         "capture its launches in a CUDA graph (from PyTorch: torch.cuda.graphs; in C++: "
                         "cudaStreamBeginCapture ... cudaGraphLaunch)" if f.prov.kind == "library" else
                         "capture its launches in a CUDA graph (cudaStreamBeginCapture ... cudaGraphLaunch), so the "
                         "host submits them once"),
              _graph_expected,
              _none, f"the gaps between its launches vanish: {NSYS}", 3, 1),
    LeverRule("vllm-speculative", "serving",
              lambda f: f.vllm and f.bound == "memory" and _tensor_operands(f) and f.ridge is not None and f.lt(f.rec.arithmetic_intensity, f.ridge) and not (f.serving and f.serving.get("speculative_config")),
              lambda f: "speculative decoding (vLLM --speculative-config: n-gram, EAGLE or a draft model): several tokens are checked in one target-model step, so each weight read serves more tokens",
              lambda f: f"{f.rec.arithmetic_intensity:.0f} FLOP a DRAM byte against a ridge of {f.ridge:.0f}: decode reads every weight for one token a sequence; k accepted tokens a step read them once for k",
              _none, "tokens per second at the same latency, and this GEMM's arithmetic_intensity rising: kernelscope k8s capture with the new flag", 2, 3),
    LeverRule("profile-the-graph", "capture", lambda f: f.limiter.kind == "launch" and f.in_cuda_graph,
              lambda f: "already inside vLLM's CUDA graph: profile the whole graph as one workload to see the step it belongs to (kernelscope capture --graph-profiling graph)",
              lambda f: "the graph's time against the sum of its kernels' says what launches and gaps cost inside the step",
              _none, "one result for the graph, its gpu__time_duration the step's", 1, 1),
    # under vLLM, what fuses its kernels is vLLM's own compilation: no per-kernel switch (the graph lever above)
    LeverRule("fuse-launch", "fusion", lambda f: f.limiter.kind == "launch" and (
                  not f.vllm or bool(SPLIT_COMBINE.search(f.rec.name_full))),
              lambda f: (COMBINE if SPLIT_COMBINE.search(f.rec.name_full) else
                         "fuse its neighbours into it: an activation or residual as the GEMM's epilogue "
                         "(cuBLASLt epilogues, torch.compile), so their launches and ramps disappear" if f.gemm_like
                         else "fuse it into a neighbouring kernel (torch.compile), so its launch and ramp disappear"),
              lambda f: ("removes the neighbours' launches and their ramps (their own rows say how long)" if f.gemm_like
                         else f"removes a launch and its {_us(f)}"), _none, f"the kernel no longer appears in the step: {NSYS}", 2, 2),
    LeverRule("more-work-a-launch", "batching", _ramp,
              lambda f: ("give each launch more work: a larger M (more tokens a step), or one grouped GEMM for "
                         "several small ones" if f.gemm_like else
                         "give each launch more work: one launch over the batched tensors (foreach ops, torch.compile)"),
              _ramp_amortised, _ramp_unlock, f"duration_ns grows slower than the work a launch: {NSYS}", 2, 2),
    LeverRule("more-ctas", "source", lambda f: f.limiter.kind == "grid",
              lambda f: ("make more tiles: smaller ones, or split the work (split-K, split-KV)"
                         if f.limiter.name == "tiles under the SMs" else
                         "launch more CTAs: smaller tiles (it splits K already)" if SPLIT_K.search(f.rec.name_full)
                         else "launch more CTAs: split the work (split-K, split-KV) or use smaller tiles"),
              _idle_slots, _grid_unlock, lambda f: f"{_filled(f)} and duration_ns falls: {ROOFLINE}", 2, 2),
    LeverRule("fill-the-grid", "batching", lambda f: f.limiter.kind == "grid",
              lambda f: COMBINE if SPLIT_COMBINE.search(f.rec.name_full) else (
                  _fill_action(f)),
              _idle_slots, _grid_unlock, lambda f: f"{_filled(f)} and the step's time falls: {NSYS}", 2, 2),
    LeverRule("hide-memory-latency", "source",
              lambda f: f.limiter.kind == "latency" and f.top_stall == "long_scoreboard" and f.ge(f.top_stall_pct, DOMINANT_STALL_PCT),
              lambda f: "keep more loads in flight: vectorised 16-byte loads, cp.async/TMA pipelining, more independent work a thread",
              _headroom_expected, _headroom, f"warp_stalls.long_scoreboard drops: {STALLS}", 2, 2),
    LeverRule("raise-occupancy-registers", "compiler",
              lambda f: f.bound in ("latency", "compute") and f.limiter.kind not in ("tensor", "simt", "grid") and f.registers_limit_occupancy,
              lambda f: "cap registers to fit another block: __launch_bounds__(threads, minBlocks) or -maxrregcount",
              lambda f: f"theoretical occupancy {f.rec.theoretical_occupancy_pct:.0f} % rises if no spills appear: more warps to hide latency",
              _none, "theoretical_occupancy_pct rises and no local-memory traffic appears: kernelscope capture --set roofline", 2, 1),
    LeverRule("raise-occupancy-smem", "source",
              lambda f: f.bound in ("latency", "compute") and f.limiter.kind not in ("tensor", "simt") and f.smem_limits_occupancy,
              lambda f: "use less shared memory a block (fewer pipeline stages, smaller tiles) so more blocks fit",
              lambda f: f"theoretical occupancy {f.rec.theoretical_occupancy_pct:.0f} % rises with the blocks that fit",
              _none, "launch__occupancy_limit_shared_mem rises: kernelscope capture --set roofline", 1, 2),
    LeverRule("fix-tail", "source", lambda f: f.tail_effect,
              lambda f: "size tiles or the grid so the number of waves is whole (or use a persistent / stream-K schedule)",
              lambda f: f"{f.tail_idle_pct:.0f} % of the block slots idle in the last wave: up to {100 / (100 - (f.tail_idle_pct or 0)):.2f}x",
              lambda f: 100 / (100 - (f.tail_idle_pct or 0)), f"waves_per_sm close to a whole number and duration_ns falls: {ROOFLINE}", 1, 2),
    LeverRule("balance-barriers", "source",
              lambda f: f.top_stall == "barrier" and f.ge(f.top_stall_pct, DOMINANT_STALL_PCT) and not f.designed_stall,
              lambda f: ("overlap loads with the MMA instead of waiting at barriers: more num_stages, or warp specialisation (tl.range(..., warp_specialize=True) where your Triton has it)"
                         if _triton(f) else "balance the work between block-wide barriers (warp specialisation, fewer __syncthreads)"),
              lambda f: f"barrier holds {f.top_stall_pct:.0f} % of stalled warp-cycles", _none, f"warp_stalls.barrier drops: {STALLS}", 1, 2),
    LeverRule("use-tensor-cores", "precision",
              lambda f: f.gemm_like and bool(f.rec.flops_total) and _no_tensor_work(f) and f.tensor_cores,
              lambda f: ("run the matmul on the tensor cores: mma.sync/WMMA instructions or a CUTLASS/cuBLAS GEMM with "
                         "fp16/bf16/tf32 operands" if f.prov.kind == "user" else
                         "route the matmul to tensor cores: bf16/fp16 inputs, or TF32 (torch.backends.cuda.matmul.allow_tf32)"),
              lambda f: "an order of magnitude more FLOP/s ceiling", _none, f"tensor_* FLOP appear in {ROOFLINE}", 3, 2),
    LeverRule("recapture-stalls", "capture",  # a launch-bound kernel's stalls do not set its time
              lambda f: f.bound == "latency" and f.limiter.kind != "launch" and f.rec.warp_stalls is None,
              lambda f: f"recapture with the stalls add-on to name what warps wait on: {STALLS}",
              lambda f: "names the dominant stall and its lever", _none, "warp_stalls is filled in", 1, 1),
)
COMMUNICATION_LEVERS = frozenset({"shrink-communication", "vllm-cuda-graphs", "cuda-graph", "profile-the-graph"})
# When nothing the owner can pull fired, the levers outside the kernel are left.
FALLBACK = LeverRule(
    "fuse-or-batch", "fusion", lambda f: True,
    lambda f: "fuse it with neighbouring kernels or batch more work a launch: the levers left outside this kernel",
    lambda f: f"saves launches and DRAM round trips around its {_us(f)}", _none, f"total time of the step falls: {NSYS}", 1, 2)


# The share of a kernel's time a lever saves: 1 - 1/unlock where the unlock is sized, else by its
# gain level. Times the kernel's share of the run, over the cost, it ranks the frontier (frontier.py).
SAVED_BY_GAIN = {3: 0.5, 2: 0.25, 1: 0.1}


def saved_fraction(gain: int, unlock_x: float | None) -> float:
    """The fraction of the kernel's own time the lever is expected to save."""
    if unlock_x is not None and unlock_x > 1.0:
        return 1.0 - 1.0 / unlock_x
    return SAVED_BY_GAIN.get(gain, 0.1)


# levers that keep the kernel's DRAM bytes (another algorithm, its tiles, its source): the floor for those
# bytes bounds them; a cheaper precision, more rows or fusion change the bytes and so the floor
SAME_BYTES = frozenset({"algorithm", "kernel", "config", "source", "compiler"})


def _within_floor(f: Facts, x: float | None) -> float | None:
    """No kernel moving these DRAM bytes runs faster than the measured launch-and-ramp floor for them
    (rules.RAMP_FLOOR_NS): every unlock is bounded by it, whatever roof it was sized from."""
    floor = ramp_floor_ns(f.rec.dram_bytes, f.hw_key)
    if x is None or floor is None or not f.rec.duration_ns:
        return x
    return min(x, max(f.rec.duration_ns / floor, 1.0))


def _capped(f: Facts, raw: float | None, x: float | None) -> str:
    if raw is None or x is None or x >= raw - 1e-9:
        return ""
    floor = ramp_floor_ns(f.rec.dram_bytes, f.hw_key) or 0.0
    return (f"; at most {x:.2f}x: a launch moving its {_mb(f.rec.dram_bytes)} takes at least {floor / 1e3:.1f} µs on "
            "this GPU (the measured launch-and-ramp floor)")


def levers(f: Facts) -> tuple[Lever, ...]:
    """The rules that fire and that the kernel's owner can pull, best first: by saved fraction /
    cost, the order the frontier ranks them in within one kernel (frontier.py), so a kernel's first
    lever is the one the frontier puts first for it."""
    # a collective is not tuned like a GEMM or a stream: only the levers on the collective itself
    fired = [r for r in LEVERS if r.family in PULLABLE[f.prov.kind] and r.when(f)
             and (not f.communication or r.name in COMMUNICATION_LEVERS)]
    sized = [(r, r.unlock(f)) for r in fired]
    bounded = [(r, raw, _within_floor(f, raw) if r.family in SAME_BYTES else raw) for r, raw in sized]
    kept = [(r, raw, x) for r, raw, x in bounded if x is None or x >= WORTH_X] or [(FALLBACK, None, None)]
    out = [Lever(r.name, r.family, r.action(f), r.expected(f) + _capped(f, raw, x),
                 r.confirm if isinstance(r.confirm, str) else r.confirm(f), r.gain, r.cost, x) for r, raw, x in kept]
    return tuple(sorted(out, key=lambda lv: (-saved_fraction(lv.gain, lv.unlock_x) / lv.cost, -lv.gain / lv.cost)))
