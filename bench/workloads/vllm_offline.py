"""vLLM offline generation for the capture flows (bench/device/vllm_e2e.py): 8 sequences x 64 tokens a
round. With --window, vLLM's CUDA profiler is on and only the last round runs between
llm.start_profile() and llm.stop_profile() (cudaProfilerStart/Stop in the worker), so `ncu
--profile-from-start off` profiles generation after start-up and warm-up, nothing else.
Prints one line a round: its time and ms per decode step.

    python3 bench/workloads/vllm_offline.py MODEL [ROUNDS] [--window] [--eager]
"""

from __future__ import annotations

import sys
import time


def main() -> None:
    from vllm import LLM, SamplingParams

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rounds = int(args[1]) if len(args) > 1 else 3
    window = "--window" in sys.argv
    llm = LLM(model=args[0], dtype="bfloat16", gpu_memory_utilization=0.30, max_model_len=1024,
              enforce_eager="--eager" in sys.argv, max_num_seqs=8, seed=0,
              **({"profiler_config": {"profiler": "cuda"}} if window else {}))
    sp = SamplingParams(max_tokens=64, temperature=0.0, ignore_eos=True)
    prompts = ["hello world the quick brown fox jumps over the lazy dog"] * 8
    for i in range(rounds):
        profiled = window and i == rounds - 1
        if profiled:
            llm.start_profile()
        t = time.time()
        llm.generate(prompts, sp, use_tqdm=False)
        dt = time.time() - t
        if profiled:
            llm.stop_profile()
        print(f"EVENT round {i}{' (profiled)' if profiled else ''} {dt * 1000:.1f} ms = {dt * 1000 / 64:.2f} ms/step",
              flush=True)


if __name__ == "__main__":
    main()
