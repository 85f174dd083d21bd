"""Attention levers: what only attention has, the KV cache that decode attention streams. A decode
attention kernel is bound by the bytes of that cache, so storing it in fp8 halves them.

Attention's other levers are shared with kernels like it and live with those: its two matmuls take
the GEMM levers (gemm.py: the wgmma path, fp8 math, another backend), streaming the cache once is
stream-once (elementwise.py), and FlashAttention's split-KV combine kernel is judged by the launch
and grid levers (launch.py).
"""

from __future__ import annotations

import re

from .common import ROOFLINE, LeverRule, level_up, mb, vllm_flag

FP8_KV = re.compile(r"e4m3|e5m2|fp8", re.IGNORECASE)

KV_CACHE_FP8 = LeverRule(
    name="kv-cache-fp8",
    family="precision",
    when=lambda f: f.attention_like and f.limiter.kind == "hbm" and not FP8_KV.search(f.rec.name_full),
    action=lambda f: f"{level_up(f)}store the KV cache in fp8, which decode attention streams: " + (
        f"vLLM --kv-cache-dtype fp8 ({vllm_flag(f, 'kv_cache_dtype')}; FlashAttention-3 reads an fp8 cache on Hopper)"
        if f.vllm else "an fp8 KV cache (vLLM --kv-cache-dtype fp8; FlashInfer's and FlashAttention-3's fp8 paths)"),
    expected=lambda f: ("time follows DRAM bytes at the HBM roof: an fp8 cache halves the KV part of its "
                        f"{mb(f.rec.dram_bytes)} (up to 2x)"),
    unlock=lambda f: 2.0,
    confirm=f"dram_bytes and duration_ns fall together: {ROOFLINE}",
    gain=3,
    cost=2,
)
