"""A serving-like process: a decode step of small kernels in a loop, printing its step time.

Every --every seconds it prints one JSON line {"t": s since start, "steps": n, "us_per_step": x}
so that a profiler's effect on the serving loop can be read before, during and after a capture.
--graph replays the step as one CUDA graph (as vLLM does for decode).

    python3 bench/workloads/serve_loop.py --seconds 30 [--graph]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch


def make_step(graph: bool):  # type: ignore[no-untyped-def]
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(4096, device="cuda", dtype=torch.bfloat16)

    def step() -> None:  # ~6 small kernels: norm, gemm, activation, residual
        h = torch.nn.functional.rms_norm(x, (4096,), g)
        y = h @ w
        z = torch.nn.functional.silu(y) + x
        x.copy_(z * 0.5)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    if not graph:
        return step
    cuda_graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(cuda_graph):
        step()
    return cuda_graph.replay


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--every", type=float, default=0.5)
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--wall", action="store_true", help="also print wall-clock time (to align with other logs)")
    a = ap.parse_args()
    print(json.dumps({"event": "process-start", "wall": time.time()}), flush=True)
    step = make_step(a.graph)
    t0 = last = time.monotonic()
    n = 0
    while (now := time.monotonic()) - t0 < a.seconds:
        step()
        torch.cuda.synchronize()
        n += 1
        if now - last >= a.every:
            row = {"t": round(now - t0, 3), "steps": n, "us_per_step": round((now - last) / n * 1e6, 1)}
            if a.wall:
                row["wall"] = time.time()
            print(json.dumps(row), flush=True)
            last, n = now, 0
    print(json.dumps({"event": "exit"}), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
