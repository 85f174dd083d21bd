"""Single-op harness: call one library op on fixed synthetic shapes, warm up, then loop.

Run under ncu by `kernelscope op`, which skips the warm-up launches with --launch-skip. It writes
the op's analytic work (FLOP and the fewest DRAM bytes: each input read once, output written
once) to --analytic-out so that `analyze` can show counted against analytic work.

    python3 -m kernelscope.capture.harness gemm --m 256 --n 4096 --k 8192 --dtype fp8
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1}


@dataclass(frozen=True)
class Op:
    """A ready-to-call op with its analytic work."""

    fn: Callable[[], Any]
    flops: float
    bytes: float
    describe: str


# The kernel filter that finds each op's main kernel on Hopper with PyTorch 2.11 (ncu syntax).
KERNELS: dict[str, str] = {
    "gemm": "regex:nvjet|gemm|cutlass|xmma|sm90",
    "attention": "regex:flash|fmha|attention",
    "rmsnorm": "regex:norm|reduce",
    "softmax": "regex:[Ss]oft[Mm]ax",
}


def _torch() -> Any:
    import torch

    return torch


def _dtype(name: str) -> Any:
    torch = _torch()
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def gemm(a: argparse.Namespace) -> Op:
    torch = _torch()
    m, n, k = a.m, a.n, a.k
    if a.dtype == "fp8":
        x = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device="cuda")
        out_bytes = 2  # bf16 output

        def fn() -> Any:
            return torch._scaled_mm(x, w, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        dt = _dtype(a.dtype)
        x = torch.randn(m, k, device="cuda", dtype=dt)
        w = torch.randn(k, n, device="cuda", dtype=dt)
        out_bytes = DTYPE_BYTES[a.dtype]

        def fn() -> Any:
            return x @ w
    ib = DTYPE_BYTES[a.dtype]
    nbytes = float(m * k * ib + k * n * ib + m * n * out_bytes)
    return Op(fn, 2.0 * m * n * k, nbytes, f"{a.dtype} GEMM M={m} N={n} K={k}")


def attention(a: argparse.Namespace) -> Op:
    """SDPA on the flash backend. Analytic FLOP count only the unmasked half when causal."""
    torch = _torch()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dt = _dtype(a.dtype)
    q, k, v = (torch.randn(a.batch, a.heads, a.seq, a.head_dim, device="cuda", dtype=dt) for _ in range(3))

    def fn() -> Any:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=a.causal)
    full = 4.0 * a.batch * a.heads * a.seq * a.seq * a.head_dim
    flops = full / 2 if a.causal else full
    nbytes = 4.0 * a.batch * a.heads * a.seq * a.head_dim * DTYPE_BYTES[a.dtype]
    kind = "causal" if a.causal else "non-causal"
    return Op(fn, flops, nbytes, f"{a.dtype} SDPA flash {kind} B={a.batch} H={a.heads} S={a.seq} D={a.head_dim}")


def rmsnorm(a: argparse.Namespace) -> Op:
    torch = _torch()
    dt = _dtype(a.dtype)
    x = torch.randn(a.rows, a.cols, device="cuda", dtype=dt)
    w = torch.randn(a.cols, device="cuda", dtype=dt)

    def fn() -> Any:
        return torch.nn.functional.rms_norm(x, (a.cols,), w, eps=1e-6)
    n = a.rows * a.cols
    # x*x, sum, x*rsqrt, *w: 4 FLOP an element (a convention; bytes are the figure that matters)
    nbytes = float(2 * n * DTYPE_BYTES[a.dtype] + a.cols * DTYPE_BYTES[a.dtype])
    return Op(fn, 4.0 * n, nbytes, f"{a.dtype} RMSNorm {a.rows}x{a.cols}")


def softmax(a: argparse.Namespace) -> Op:
    torch = _torch()
    x = torch.randn(a.rows, a.cols, device="cuda", dtype=_dtype(a.dtype))

    def fn() -> Any:
        return torch.softmax(x, dim=-1)
    n = a.rows * a.cols
    # max, sub, exp, sum, div: 5 FLOP an element (a convention)
    return Op(fn, 5.0 * n, float(2 * n * DTYPE_BYTES[a.dtype]), f"{a.dtype} softmax {a.rows}x{a.cols}")


def _tensor(spec: str) -> Any:
    """'bf16[8,8192]' -> a random CUDA tensor of that dtype and shape."""
    torch = _torch()
    dtype, _, dims = spec.partition("[")
    shape = [int(d) for d in dims.rstrip("]").split(",") if d.strip()]
    return torch.randn(*shape, device="cuda", dtype=_dtype(dtype))


def callable_op(a: argparse.Namespace) -> Op:
    module, _, name = a.callable.partition(":")
    fn = getattr(importlib.import_module(module), name)
    tensors = [_tensor(s) for s in a.arg]
    return Op(lambda: fn(*tensors), float(a.flops) if a.flops else float("nan"),
              float(a.bytes) if a.bytes else float("nan"), f"{a.callable}({', '.join(a.arg)})")


OPS: dict[str, Callable[[argparse.Namespace], Op]] = {
    "gemm": gemm, "attention": attention, "rmsnorm": rmsnorm, "softmax": softmax, "callable": callable_op,
}


def add_op_arguments(p: argparse.ArgumentParser) -> None:
    """Shape arguments shared by the harness and `kernelscope op` (one definition)."""
    p.add_argument("op", choices=sorted(OPS))
    p.add_argument("--dtype", default="bf16", choices=sorted(DTYPE_BYTES))
    p.add_argument("--m", type=int, default=4096)
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--rows", type=int, default=8192)
    p.add_argument("--cols", type=int, default=8192)
    p.add_argument("--callable", help="module:function for op 'callable'")
    p.add_argument("--arg", action="append", default=[], help="tensor argument, e.g. bf16[8,8192] (repeat)")
    p.add_argument("--flops", type=float, help="analytic FLOP of one call (op 'callable')")
    p.add_argument("--bytes", type=float, help="analytic DRAM bytes of one call (op 'callable')")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=2)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="kernelscope.capture.harness")
    add_op_arguments(p)
    p.add_argument("--analytic-out", type=Path)
    a = p.parse_args(argv)
    op = OPS[a.op](a)
    if a.analytic_out:
        work = {"flops": op.flops, "bytes": op.bytes}
        a.analytic_out.write_text(json.dumps({"op": a.op, "describe": op.describe, "warmup": a.warmup,
                                              "iters": a.iters, **{k: v for k, v in work.items() if v == v}}))
    for _ in range(a.warmup + a.iters):
        op.fn()
    _torch().cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
