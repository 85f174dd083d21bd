"""Kernel categories from one editable rule table: first matching rule wins.

Each rule names the precision family whose ceiling a kernel is placed against on the roofline
when its own FLOP counters were not collected (drawn hollow, labelled "AI unmeasured").
"""

from __future__ import annotations

import re
from functools import lru_cache

# (category, regex on the kernel's short or full name, family precision class)
CATEGORY_RULES: tuple[tuple[str, str, str], ...] = (
    # NCCL, torch's symmetric-memory multimem all-reduce, vLLM's custom all-reduce (cross_device_reduce_*)
    ("NCCL", r"nccl|all_?reduce|allgather|reduce_?scatter|multimem|cross_device_reduce", "fp32"),
    # inductor's pointwise, reduction and persistent-reduction kernels: their names list the ops they fused
    # (`..._cutlass_scaled_mm_...` quantises a GEMM's input, `..._moe_forward_0` is a norm), never a matmul
    ("Triton-fused", r"^triton_(poi|red|per)_", "fp32"),
    # MoE routing: top-k gating, token sorting, the weighted sum of the experts' outputs (no matmul)
    ("MoE routing", r"moe_align|moe_sum|topk_?gating|count_and_sort|moe_permute|moe_unpermute|expert_?map", "fp32"),
    ("FP4/FP8 BMM", r"bmm_E2m1|bmm_E4m3|fp4|nvfp4|e2m1|e4m3|e5m2|qqtst|fp8.*gemm|gemm.*fp8|scaled_mm", "tensor_fp8"),
    ("MoE", r"moe|fused_experts|topk_?gating|expert", "tensor_bf16"),
    ("attention/FMHA", r"fmha|flash|attention|attn|paged_?attention|mla", "tensor_bf16"),
    # the second half of a split-K GEMM: it sums the partial tiles the GEMM wrote (no matmul of its own)
    ("GEMM split-K reduce", r"splitKreduce|split_?k_?reduce", "fp32"),
    ("GEMM/cuBLAS", r"nvjet|gemm|gemv|cutlass|xmma|cublas|sm90_|matmul|wgmma|marlin", "tensor_bf16"),
    ("Triton-fused", r"^triton_|triton", "fp32"),
    ("elementwise", r"elementwise|vectorized|unrolled|norm|softmax|SoftMax|reduce|copy|fill|silu|gelu|act_and_mul",
     "fp32"),
)
OTHER = ("other", "fp32")
_COMPILED = tuple((category, re.compile(p, re.IGNORECASE), family) for category, p, family in CATEGORY_RULES)


def pattern(category: str) -> str:
    """The name pattern of one category (also a valid ncu `regex:` filter)."""
    return next(p for c, p, _ in CATEGORY_RULES if c == category)


@lru_cache(maxsize=4096)  # a campaign repeats a few hundred names over many launches
def categorize(name: str, name_full: str = "") -> tuple[str, str]:
    """(category, family precision class) of a kernel."""
    for category, pattern, family in _COMPILED:
        if pattern.search(name) or pattern.search(name_full):
            return category, family
    return OTHER
