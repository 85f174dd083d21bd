"""GEMM levers: matmuls on the tensor cores, including attention's two matmuls and vLLM's fused-MoE
GEMM. They decide how to do the same multiply for less: a better MMA path (wgmma over mma.sync), a
cheaper precision for the math or the weights streamed, more rows for each weight read, another
algorithm or library kernel, and what to do about split-K's reduce kernel. A matmul's time is set
by its tensor roof or by the weights it reads, so these levers change precision, shape or kernel;
the levers for the GEMM's own source code are in source.py.
"""

from __future__ import annotations

import re

from ... import catalogue as C
from ..rules import AT_ROOF_PCT, Facts, ramp_floor_ns
from .common import (
    NSYS,
    ROOFLINE,
    LeverRule,
    at_ramp_floor,
    headroom,
    headroom_expected,
    is_triton,
    level_up,
    mb,
    no_tensor_work,
    took,
    unsized,
    vllm_flag,
)

FUSED_MOE = re.compile(r"^fused_moe_kernel")  # vLLM's Triton MoE GEMM (provenance.py)

MEASURED_SAME_SHAPE = {  # measured speed-ups, same shape, same H200 (tests/fixtures): (x, what)
    "attention": (802.0 / 426.3, "FlashAttention-2 (mma.sync) 802.0 µs vs cuDNN SDPA (wgmma) 426.3 µs, bf16 B4 H32 "
                                 "S2048 D128 (attention_fa2, attention_cudnn)"),
    "triton-gemm": (413.8 / 339.3, "a user Triton GEMM 413.8 µs vs cuBLAS 339.3 µs at 4096x8192x4096 bf16 "
                                   "(sets.tar.xz: mm_kernel, nvjet; 79 % vs 93 % of the tensor roof)"),
}

# torch's SDPA backends (torch.nn.attention.SDPBackend) and the provenance family of the kernels each runs
SDPA_BACKENDS = (("FLASH_ATTENTION", "FlashAttention"), ("CUDNN_ATTENTION", "cuDNN"),
                 ("EFFICIENT_ATTENTION", "memory-efficient"))


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


def _wgmma_unlock(f: Facts) -> float:
    return MEASURED_SAME_SHAPE["attention"][0] if f.attention_like else 1 / (f.path_ratio or 1)


def _wgmma_expected(f: Facts) -> str:
    roof = (f"mma.sync's roof is {100 * (f.path_ratio or 1):.0f} % of the wgmma peak on this chip (FlashAttention-3 "
            f"authors): {1 / (f.path_ratio or 1):.1f}x roof to roof")
    if f.attention_like:
        x, what = MEASURED_SAME_SHAPE["attention"]
        return f"{roof}; measured at one shape, non-causal: {what}: {x:.2f}x (another shape or a causal mask moves it)"
    return f"{roof}; measured on an H200, 628 TFLOP/s mma.sync vs 787 cuBLAS wgmma, 1.25x"


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
    how = (" (FlashAttention-3 fp8, cuDNN fp8 SDPA)" if f.attention_like
           else f" ({step} GEMM: torch._scaled_mm, Transformer Engine)")
    return f"{level_up(f)}run the tensor work in {step}{how}, if accuracy holds"


def _moe(f: Facts) -> bool:
    return bool(FUSED_MOE.search(f.rec.name)) or f.category == "MoE"


def _rows_expected(f: Facts) -> str:
    if _moe(f):  # its counted FLOP per byte is no guide: more tokens route to more experts, whose weights it reads
        return ("a MoE layer reads the weights of the experts its tokens are routed to: more tokens a step touch "
                "more experts (top-k of E each), so its bytes grow with the batch until every expert is read each "
                "step, and the work per byte grows slower than the rows (with uniform routing, B tokens touch "
                "E(1-(1-k/E)^B) experts)")
    if f.rec.arithmetic_intensity is None or f.ridge is None:
        return ("a decode GEMM reads each weight once for the rows of a step: more rows share the read (its FLOP "
                "were not captured, so the work per byte is not sized)")
    return (f"{f.rec.arithmetic_intensity:.0f} FLOP a DRAM byte against a ridge of {f.ridge:.0f}: up to "
            f"{(f.ridge or 0) / (f.rec.arithmetic_intensity or 1):.0f}x the work per byte before the tensor roof binds "
            "(counted tensor FLOP include any padded rows of a tile a small M leaves unfilled: the useful work per "
            "byte can be lower, the room larger)")


def _algorithm_action(f: Facts) -> str:
    if f.attention_like and f.vllm:
        return ("choose another attention backend for this shape: VLLM_ATTENTION_BACKEND=FLASH_ATTN "
                "(FlashAttention-3 on Hopper), FLASHINFER, or TRITON_ATTN, whichever this one is not")
    if f.attention_like and f.rec.tensor_path == "wgmma":  # SDPA's other backends run mma.sync on Hopper
        share = f.device.path_roof("mma.sync").ratio if f.device is not None else None
        past = (f": at {f.limiter.pct:.0f} % of the wgmma roof this kernel is past what they can reach"
                if share and f.limiter.kind == "tensor" and (f.limiter.pct or 0) >= 100 * share else "")
        return ("choose another wgmma attention kernel for this shape, outside SDPA: FlashAttention-3's "
                "flash_attn_interface or FlashInfer (torch's FLASH_ATTENTION and EFFICIENT_ATTENTION backends run "
                f"mma.sync, whose roof on Hopper is about two thirds of wgmma's{past})")
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
    if at_ramp_floor(f):
        return f"{tuned}: at this size launch and ramp are most of its time, so the bytes' floor bounds any of them"
    return f"{tuned}: a split-K or stream-K algorithm, or smaller tiles, so more CTAs share the work"


VLLM_MOE_CONFIG = LeverRule(
    name="vllm-moe-config",
    family="config",
    when=lambda f: bool(FUSED_MOE.search(f.rec.name)) and not f.at_roof,
    action=lambda f: ("if the server's log says vLLM ran a default fused-MoE config (its 'Using default MoE config' "
                      "warning: vLLM ships tuned files for many shapes and GPUs in fused_moe/configs, and one "
                      "already in use leaves a few % at most), tune one for this GPU and shape: vLLM's "
                      "benchmarks/kernels/benchmark_moe.py --tune writes E=<experts>,N=<expert intermediate size / TP>,"
                      f"device_name={(f.rec.device or 'this GPU').replace(' ', '_')}.json; serve with "
                      "VLLM_TUNED_CONFIG_FOLDER=<its folder>"),
    expected=headroom_expected,
    unlock=headroom,
    confirm=f"the same batch's fused_moe_kernel duration_ns under the tuned config: {ROOFLINE}",
    gain=2,
    cost=1,
)

WGMMA_KERNEL = LeverRule(
    name="wgmma-kernel",
    family="kernel",
    when=lambda f: f.path_ratio is not None and f.bound != "unmeasured" and not FUSED_MOE.search(f.rec.name),
    action=_wgmma_action,
    expected=_wgmma_expected,
    unlock=_wgmma_unlock,
    confirm=f"tensor_path reads wgmma and duration_ns falls: {ROOFLINE}",
    gain=3,
    cost=2,
)

LOWER_PRECISION = LeverRule(
    name="lower-precision",
    family="precision",
    when=lambda f: f.limiter.kind == "tensor" and f.step is not None,
    action=_precision_action,
    expected=lambda f: (f"the {_step(f)[0]} peak is {_step(f)[1]:.1f}x this one: "
                        f"up to {_step(f)[1]:.1f}x at the same %SoL"),
    unlock=lambda f: _step(f)[1],
    confirm=f"flops move to the cheaper class and duration_ns falls: {ROOFLINE}",
    gain=3,
    cost=3,
)

AT_ROOF_BATCH = LeverRule(  # the precision ladder's last rung: at the roof, no cheaper class to step to
    name="at-roof-batch",
    family="batching",
    when=lambda f: f.at_roof and f.limiter.kind in ("tensor", "simt") and f.step is None,
    action=lambda f: (f"at the {f.limiter.name} ({f.limiter.pct:.0f} %) with no cheaper precision on this device: "
                      "one level up, batch more work a launch or fuse its neighbours"),
    expected=lambda f: (f"this kernel has at most {100 / (f.limiter.pct or 100) - 1:.0%} left; "
                        "the gain is in the work around it"),
    unlock=unsized,
    confirm=f"time per unit of work falls across the step: {NSYS}",
    gain=1,
    cost=2,
)


def _narrower(f: Facts, share: float) -> tuple[float, float | None]:
    """Up to how much faster with `share` of its DRAM bytes (fp8 weights 1/2, int4 1/4): its time
    against the measured floor for that many bytes, never more than 1/share; 1/share where that
    floor is not measured on this GPU. With the floor (ns), when there is one."""
    floor = ramp_floor_ns((f.rec.dram_bytes or 0) * share, f.hw_key)
    if floor is None or not f.rec.duration_ns:
        return 1 / share, None
    return max(1.0, min(1 / share, f.rec.duration_ns / floor)), floor


def _narrower_expected(f: Facts) -> str:
    (fp8, floor), (int4, _) = _narrower(f, 0.5), _narrower(f, 0.25)
    at = "at the HBM roof" if f.limiter.kind == "hbm" else "at the launch-and-ramp floor for its bytes"
    sized = f": half its bytes take at least {floor / 1e3:.1f} µs on this GPU against its {took(f)}" if floor else ""
    return (f"{at}, its time follows its DRAM bytes: fp8 weights halve its {mb(f.rec.dram_bytes)}, up to "
            f"{fp8:.1f}x{sized}; int4 up to {int4:.1f}x on a kernel that reads int4"
            + (" (measured ramp, rules.RAMP_FLOOR_NS)" if floor else ""))


QUANTISE_OPERANDS = LeverRule(  # a weight stream at the floor for its bytes is as memory-bound as one at the roof
    name="quantise-operands",
    family="precision",
    when=lambda f: (f.limiter.kind == "hbm" or at_ramp_floor(f)) and _weight_operands(f),
    action=lambda f: f"{level_up(f)}store the weights it streams in fp8" + (
        f": vLLM --quantization fp8 ({vllm_flag(f, 'quantization')}); int4 weights (AWQ, GPTQ) run on vLLM's "
        + ("fused Marlin MoE kernel" if _moe(f) else "Marlin/Machete kernels, not cuBLAS") if f.vllm else
        " (torch._scaled_mm, Transformer Engine), or int4 with a kernel that reads int4 (Marlin, Machete)")
    + _precision_unsaid(f),
    expected=_narrower_expected,
    unlock=lambda f: _narrower(f, 0.5)[0],
    confirm=f"dram_bytes and duration_ns fall together: {ROOFLINE}",
    gain=3,
    cost=3,
)

BATCH_ROWS = LeverRule(
    name="batch-rows",
    family="batching",
    when=lambda f: f.bound == "memory" and _weight_operands(f) and (
        f.rec.arithmetic_intensity is None
        or (f.ridge is not None and f.lt(f.rec.arithmetic_intensity, f.ridge))),
    action=lambda f: f"{level_up(f)}batch more rows per weight read: " + (
        "serve more sequences a decode step: the concurrency reaching the server, up to vLLM's --max-num-seqs "
        f"({vllm_flag(f, 'max_num_seqs')}), worth raising only where the server runs at it; more sequences share "
        "each step's weight reads (a higher throughput, each step a little slower)" if f.vllm else
        "more tokens a step, a larger M"),
    expected=_rows_expected,
    unlock=unsized,
    confirm=f"arithmetic_intensity rises with M while duration_ns grows slower than M: {ROOFLINE}",
    gain=3,
    cost=2,
)

LIBRARY_GEMM = LeverRule(
    name="library-gemm",
    family="kernel",
    when=lambda f: is_triton(f) and f.gemm_like_tensor and not f.at_roof,
    action=lambda f: ("call the library GEMM instead (torch.matmul: cuBLAS picks a warp-specialised wgmma kernel) "
                      "unless the Triton kernel fuses what cuBLAS cannot"),
    expected=lambda f: (f"measured at one shape: {MEASURED_SAME_SHAPE['triton-gemm'][1]}: "
                        f"{MEASURED_SAME_SHAPE['triton-gemm'][0]:.2f}x"),
    unlock=lambda f: MEASURED_SAME_SHAPE["triton-gemm"][0],
    confirm=f"duration_ns of torch.matmul at the same shape: {ROOFLINE}",
    gain=3,
    cost=1,
)

def _tensor_pipe_full(f: Facts) -> bool:
    """The tensor pipe busy past the at-roof line (a provisional verdict's figure, no FLOP counted): the
    math itself fills the time, so no other algorithm for the same work has room."""
    return f.limiter.key in (C.TENSOR_PIPE, C.TENSOR_PIPE_ELAPSED) and f.ge(f.limiter.pct, AT_ROOF_PCT)


ANOTHER_ALGORITHM = LeverRule(  # any library kernel: cuBLAS algorithms, cuDNN engines, SDPA backends
    name="another-algorithm",
    family="algorithm",
    when=lambda f: f.prov.kind == "library" and f.bound in ("compute", "memory", "latency") and not f.at_roof
    and not _tensor_pipe_full(f),
    action=_algorithm_action,
    expected=headroom_expected,
    unlock=headroom,
    confirm=lambda f: ("the same shape's duration_ns under each backend" if f.attention_like else
                       "the same shape's duration_ns under each algorithm")
    + f", then {ROOFLINE}",
    gain=2,
    cost=1,
)

SPLIT_K_REDUCE = LeverRule(
    name="split-k-reduce",
    family="batching",
    when=lambda f: f.split_k_reduce,
    action=lambda f: ("the reduce of a split-K GEMM: cuBLASLt splits K when the output has too few tiles to fill "
                      "the SMs, then sums the partial tiles here; its time belongs to the GEMM launched before it. "
                      + (f"More rows a step (vLLM's --max-num-seqs, {vllm_flag(f, 'max_num_seqs')}) gives the GEMM "
                         "enough tiles to run unsplit" if f.vllm else
                         "A larger M (more tokens a step, batched calls) lets cuBLASLt pick an unsplit algorithm")),
    expected=lambda f: (f"removes this {took(f)} launch and the partial tiles' round trip through memory "
                        f"({mb(f.rec.dram_bytes)}); judge it with its GEMM (their times add)"),
    unlock=unsized,
    confirm=f"splitKreduce_kernel no longer follows the GEMM, and the pair's time falls: {NSYS}",
    gain=2,
    cost=2,
)

VLLM_SPECULATIVE = LeverRule(  # a vLLM serving option, for the decode GEMMs that read every weight a token
    name="vllm-speculative",
    family="serving",
    when=lambda f: (f.vllm and f.bound == "memory" and _tensor_operands(f) and f.ridge is not None
                    and f.lt(f.rec.arithmetic_intensity, f.ridge)
                    and not (f.serving and f.serving.get("speculative_config"))),
    action=lambda f: ("speculative decoding (vLLM --speculative-config: n-gram, EAGLE or a draft model): several "
                      "tokens are checked in one target-model step, so each weight read serves more tokens"),
    expected=lambda f: (f"{f.rec.arithmetic_intensity:.0f} FLOP a DRAM byte against a ridge of {f.ridge:.0f}: "
                        + ("a MoE step reads the experts its tokens route to, and k tokens of a sequence route "
                           "apart: they share the reads only where they pick the same experts, so less than k"
                           if _moe(f) else
                           "decode reads every weight for one token a sequence; k accepted tokens a step read them "
                           "once for k")),
    unlock=unsized,
    confirm=("tokens per second at the same latency, and this GEMM's arithmetic_intensity rising: "
             "kernelscope k8s capture with the new flag"),
    gain=2,
    cost=3,
)

USE_TENSOR_CORES = LeverRule(
    name="use-tensor-cores",
    family="precision",
    when=lambda f: f.gemm_like and bool(f.rec.flops_total) and no_tensor_work(f) and f.tensor_cores,
    action=lambda f: ("run the matmul on the tensor cores: mma.sync/WMMA instructions or a CUTLASS/cuBLAS GEMM with "
                      "fp16/bf16/tf32 operands" if f.prov.kind == "user" else
                      "route the matmul to tensor cores: bf16/fp16 inputs, or TF32 "
                      "(torch.backends.cuda.matmul.allow_tf32)"),
    expected=lambda f: "an order of magnitude more FLOP/s ceiling",
    unlock=unsized,
    confirm=f"tensor_* FLOP appear in {ROOFLINE}",
    gain=3,
    cost=2,
)
