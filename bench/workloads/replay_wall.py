"""A process that holds most of the GPU's memory: what kernel replay cannot save.

Kernel replay saves the device memory a launch may write before its first pass and restores it before
each later one; a process that fills the GPU (vLLM's KV cache, a TP=8 NVFP4 checkpoint) leaves the save
nowhere to go but host memory, and fails when that is short too. This allocates FRACTION of the GPU's
free memory as one bf16 tensor and scales it in place STEPS times (PyTorch splits each scaling into
elementwise launches over parts of it: 2.2 GB moved a launch on the H200 at 0.95), so a capture of
one of those launches meets that wall on one GPU.

    python3 bench/workloads/replay_wall.py FRACTION STEPS
"""

from __future__ import annotations

import sys

import torch


def main() -> None:
    fraction, steps = float(sys.argv[1]), int(sys.argv[2])
    free, total = torch.cuda.mem_get_info()
    x = torch.empty(int(free * fraction) // 2, dtype=torch.bfloat16, device="cuda")
    print(f"tensor {x.numel() * 2 / 2**30:.1f} GiB of {total / 2**30:.1f} GiB ({free / 2**30:.1f} GiB free)",
          flush=True)
    for _ in range(steps):
        x.mul_(0.5)
        torch.cuda.synchronize()
    print("done", flush=True)


if __name__ == "__main__":
    main()
