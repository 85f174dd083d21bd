"""`kernelscope ceilings measure`: achievable ceilings from short microbenchmarks on this GPU.

Device-to-device copy (bytes read + written) and a large dense matmul per precision the device
runs, each the median of timed repeats after warm-up, written as a ceilings YAML that
`analyze --ceilings` (or `--achievable`) accepts.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from datetime import date
from typing import Any

import yaml


def _median_ms(fn: Callable[[], Any], warmup: int = 3, reps: int = 10) -> float:
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(statistics.median(times))


def copy_tbps(nbytes: int = 4 << 30) -> float:
    import torch

    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    ms = _median_ms(lambda: dst.copy_(src))
    return float(2 * nbytes / (ms * 1e-3) / 1e12)


def matmul_tflops(precision: str, n: int = 8192) -> float | None:
    """Dense n x n x n matmul rate on random data; None where the device or torch lacks it."""
    import torch

    major, _ = torch.cuda.get_device_capability()
    if precision == "fp8":
        if major < 9:
            return None
        a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device="cuda")
        ms = _median_ms(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    elif precision == "int8":
        a = torch.randint(-8, 8, (n, n), device="cuda", dtype=torch.int8)
        b = torch.randint(-8, 8, (n, n), device="cuda", dtype=torch.int8)
        ms = _median_ms(lambda: torch._int_mm(a, b))
    else:
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32,
                 "fp64_tensor": torch.float64}[precision]
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        ms = _median_ms(lambda: a @ b)
        torch.backends.cuda.matmul.allow_tf32 = False
    return 2.0 * n**3 / (ms * 1e-3) / 1e12


PRECISIONS = ("bf16", "fp16", "tf32", "fp8", "int8", "fp32", "fp64_tensor")


def measure(hw_key: str | None = None) -> str:
    """The ceilings YAML text for this machine's GPU 0."""
    import torch

    name = torch.cuda.get_device_name(0)
    key = hw_key or (name.lower().replace("nvidia ", "").replace(" ", "-") + "-measured")
    today = date.today().isoformat()
    compute: dict[str, Any] = {}
    for prec in PRECISIONS:
        value = matmul_tflops(prec, 4096 if prec == "fp64_tensor" else 8192)
        how = "torch._int_mm" if prec == "int8" else "torch._scaled_mm e4m3" if prec == "fp8" else "torch matmul"
        compute[prec] = {"tflops": None if value is None else round(value, 1),
                         "source": f"measured {today} by kernelscope ceilings measure: {how}, random data, "
                                   "median of 10 after 3 warm-ups"}
    doc = {
        "schema_version": 1,
        "devices": {key: {
            "name": f"{name} (measured)", "match": [name],
            "memory": {"hbm": {"tbps": round(copy_tbps(), 3),
                               "source": f"measured {today}: 4 GiB device-to-device copy, bytes read + written"}},
            "compute": compute,
        }},
    }
    return yaml.safe_dump(doc, sort_keys=False)
