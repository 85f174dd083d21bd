"""Single-op harness: call one library op on fixed synthetic shapes, warm up, then loop.

Run under ncu by `kernelscope op`, which skips exactly the warm-up launches with --launch-skip.
The op's analytic work (FLOP and the fewest DRAM bytes: each input read once, output written once)
comes from its shapes alone (`work`, no GPU needed), so `op --dry-run` shows it and the bundle
records it for counted-vs-analytic figures.

    python3 -m kernelscope.capture.harness gemm --m 256 --n 4096 --k 8192 --dtype fp8
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from ..analysis.categories import pattern
from ..argtypes import amount, count, positive
from ..errors import UsageError

if TYPE_CHECKING:  # imported in work(): `kernelscope --help` builds the op parser and must start fast
    from ..report_manifest import Analytic

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1}

# The kernel filter that finds each op's main kernel (ncu syntax); GEMM and attention use the
# kernel categories' own patterns (analysis/categories.py), so the two never disagree.
KERNELS: dict[str, str] = {
    "gemm": "regex:" + pattern("GEMM/cuBLAS"),
    "attention": "regex:" + pattern("attention/FMHA"),
    "rmsnorm": "regex:norm|reduce",
    "softmax": "regex:[Ss]oft[Mm]ax",
}
OPS = ("attention", "callable", "gemm", "rmsnorm", "softmax")
# the options each op reads (argparse dests) with their defaults; every op also reads --warmup, --iters
SHAPES: dict[str, dict[str, Any]] = {
    "gemm": {"dtype": "bf16", "m": 4096, "n": 4096, "k": 4096},
    "attention": {"dtype": "bf16", "batch": 4, "heads": 32, "seq": 2048, "head_dim": 128, "causal": False},
    "rmsnorm": {"dtype": "bf16", "rows": 8192, "cols": 8192},
    "softmax": {"dtype": "bf16", "rows": 8192, "cols": 8192},
    "callable": {"callable": None, "arg": [], "flops": None, "bytes": None},
}
FP8_OPS = ("gemm",)  # torch._scaled_mm; the others have no fp8 path here


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


_G, _A, _R = SHAPES["gemm"], SHAPES["attention"], SHAPES["rmsnorm"]


@dataclass(frozen=True)
class OpSpec:
    """One op's call, settled: the shapes it reads (the defaults are SHAPES'), its warm-up and its
    captured calls. Built by `settle`; what work, call and harness_argv read."""

    op: str
    warmup: int
    iters: int
    dtype: str = _G["dtype"]
    m: int = _G["m"]
    n: int = _G["n"]
    k: int = _G["k"]
    batch: int = _A["batch"]
    heads: int = _A["heads"]
    seq: int = _A["seq"]
    head_dim: int = _A["head_dim"]
    causal: bool = _A["causal"]
    rows: int = _R["rows"]
    cols: int = _R["cols"]
    callable: str = ""
    arg: tuple[str, ...] = ()
    flops: float | None = None
    bytes: float | None = None


def settle(options: Mapping[str, Any]) -> OpSpec:
    """The op's call from the options add_op_arguments defines (a parsed command line's values):
    refuse an option the op does not read (`op softmax --m 8` would have run 8192x8192 and said
    nothing), and the callable op without its callable."""
    op = options["op"]
    mine = SHAPES[op]
    given = [d for d in {d for shape in SHAPES.values() for d in shape} - set(mine) if options.get(d) is not None]
    if given:
        takes = ", ".join(_flag(d) for d in mine) or "none"
        raise UsageError(f"op {op} takes no {', '.join(sorted(map(_flag, given)))} (it reads {takes})")
    if op not in FP8_OPS and options.get("dtype") == "fp8":
        raise UsageError(f"op {op} --dtype fp8: only {', '.join(FP8_OPS)} has an fp8 path here "
                         f"(bf16, fp16 or fp32)")
    if op == "callable" and not options.get("callable"):
        raise UsageError("op callable needs --callable MODULE:FUNCTION (the function to call)")
    values = {f.name: options[f.name] for f in fields(OpSpec) if options.get(f.name) is not None}
    return OpSpec(**{**values, "arg": tuple(values.get("arg", ()))})


def work(a: OpSpec) -> Analytic:
    """Analytic FLOP and bytes of one call, from the shapes (conventions noted per op)."""
    from ..report_manifest import Analytic

    if a.op == "callable":
        return Analytic("callable", f"{a.callable}({', '.join(a.arg)})", a.flops, a.bytes, a.warmup, a.iters)
    b = DTYPE_BYTES[a.dtype]
    if a.op == "gemm":
        out = 2 if a.dtype == "fp8" else b  # fp8 _scaled_mm writes bf16
        return Analytic("gemm", f"{a.dtype} GEMM M={a.m} N={a.n} K={a.k}", 2.0 * a.m * a.n * a.k,
                        float(a.m * a.k * b + a.k * a.n * b + a.m * a.n * out), a.warmup, a.iters)
    if a.op == "attention":  # QK^T and PV: 4*B*H*S^2*D, half of it unmasked when causal
        full = 4.0 * a.batch * a.heads * a.seq * a.seq * a.head_dim
        kind = "causal" if a.causal else "non-causal"
        return Analytic("attention", f"{a.dtype} SDPA flash {kind} B={a.batch} H={a.heads} S={a.seq} "
                        f"D={a.head_dim}", full / 2 if a.causal else full,
                        4.0 * a.batch * a.heads * a.seq * a.head_dim * b, a.warmup, a.iters)
    n = a.rows * a.cols
    if a.op == "rmsnorm":  # x*x, sum, x*rsqrt, *w: 4 FLOP an element (bytes are the figure that matters)
        return Analytic("rmsnorm", f"{a.dtype} RMSNorm {a.rows}x{a.cols}", 4.0 * n,
                        float(2 * n * b + a.cols * b), a.warmup, a.iters)
    # softmax: max, sub, exp, sum, div: 5 FLOP an element
    return Analytic("softmax", f"{a.dtype} softmax {a.rows}x{a.cols}", 5.0 * n, float(2 * n * b), a.warmup, a.iters)


def _torch() -> Any:
    import torch

    return torch


def _dtype(name: str) -> Any:
    torch = _torch()
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def _tensor(spec: str) -> Any:
    """'bf16[8,8192]' -> a random CUDA tensor of that dtype and shape."""
    torch = _torch()
    dtype, _, dims = spec.partition("[")
    shape = [int(d) for d in dims.rstrip("]").split(",") if d.strip()]
    return torch.randn(*shape, device="cuda", dtype=_dtype(dtype))


def call(a: OpSpec) -> Callable[[], Any]:
    """The op, ready to call on random CUDA tensors."""
    torch = _torch()
    if a.op == "gemm" and a.dtype == "fp8":
        x = torch.randn(a.m, a.k, device="cuda").to(torch.float8_e4m3fn)
        w = torch.randn(a.n, a.k, device="cuda").to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device="cuda")
        return lambda: torch._scaled_mm(x, w, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    if a.op == "gemm":
        x = torch.randn(a.m, a.k, device="cuda", dtype=_dtype(a.dtype))
        w = torch.randn(a.k, a.n, device="cuda", dtype=_dtype(a.dtype))
        return lambda: x @ w
    if a.op == "attention":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        q, k, v = (torch.randn(a.batch, a.heads, a.seq, a.head_dim, device="cuda", dtype=_dtype(a.dtype))
                   for _ in range(3))

        def sdpa() -> Any:
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=a.causal)
        return sdpa
    if a.op == "rmsnorm":
        x = torch.randn(a.rows, a.cols, device="cuda", dtype=_dtype(a.dtype))
        g = torch.randn(a.cols, device="cuda", dtype=_dtype(a.dtype))
        return lambda: torch.nn.functional.rms_norm(x, (a.cols,), g, eps=1e-6)
    if a.op == "softmax":
        x = torch.randn(a.rows, a.cols, device="cuda", dtype=_dtype(a.dtype))
        return lambda: torch.softmax(x, dim=-1)
    module, _, name = a.callable.partition(":")
    fn = getattr(importlib.import_module(module), name)
    tensors = [_tensor(s) for s in a.arg]
    return lambda: fn(*tensors)


def add_op_arguments(p: argparse.ArgumentParser) -> None:
    """The harness's options, defined once: the harness and `kernelscope op` both call this. An
    op's options default to None here and to their values in `settle`, which refuses the others."""
    p.add_argument("op", choices=OPS, help="the library op to call")
    p.add_argument("--dtype", choices=sorted(DTYPE_BYTES), help="operand precision (default bf16; fp8: gemm only; "
                                                                "callable: the dtypes of its --arg)")
    def shape(op: str, dest: str, what: str) -> None:  # its help's default is SHAPES', the one `settle` applies
        p.add_argument(_flag(dest), type=positive, help=f"{what} (default {SHAPES[op][dest]})")

    shape("gemm", "m", "GEMM rows of A and C")
    shape("gemm", "n", "GEMM columns of B and C")
    shape("gemm", "k", "GEMM reduction dimension")
    shape("attention", "batch", "attention batch")
    shape("attention", "heads", "attention heads")
    shape("attention", "seq", "attention sequence length")
    shape("attention", "head_dim", "attention head dimension")
    p.add_argument("--causal", action="store_true", default=None, help="causal attention mask")
    shape("rmsnorm", "rows", "rmsnorm/softmax rows")
    shape("rmsnorm", "cols", "rmsnorm/softmax columns")
    p.add_argument("--callable", help="module:function for op 'callable'")
    p.add_argument("--arg", action="append", help="tensor argument, e.g. bf16[8,8192] (repeat)")
    p.add_argument("--flops", type=amount, help="analytic FLOP of one call (op 'callable')")
    p.add_argument("--bytes", type=amount, help="analytic DRAM bytes of one call (op 'callable')")
    p.add_argument("--warmup", type=count, default=3,
                   help="calls before the captured one (the capture skips this many launches; default 3)")
    p.add_argument("--iters", type=positive, default=2, help="calls after the warm-up, the first captured (default 2)")


def harness_argv(ns: OpSpec) -> list[str]:
    """The harness command line of a settled call: every option add_op_arguments defines that the
    op reads is forwarded, so the two can never disagree."""
    probe = argparse.ArgumentParser(add_help=False)
    add_op_arguments(probe)
    argv = [ns.op]
    reads = {*SHAPES[ns.op], "warmup", "iters"}
    for action in probe._actions:  # the options add_op_arguments defined, nothing else
        if not action.option_strings or action.dest not in reads:
            continue
        value = getattr(ns, action.dest)
        flag = action.option_strings[0]
        if action.nargs == 0:  # a switch (store_true)
            argv += [flag] if value else []
        elif isinstance(value, (list, tuple)):  # repeated (append; settled as a tuple)
            for v in value:
                argv += [flag, str(v)]
        elif value is not None:
            argv += [flag, str(value)]
    return argv


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="kernelscope.capture.harness")
    add_op_arguments(p)
    try:
        a = settle(vars(p.parse_args(argv)))
    except UsageError as exc:
        p.error(str(exc))
    fn = call(a)
    for _ in range(a.warmup + a.iters):
        fn()
    _torch().cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
