"""Preflight lint: rewrite or flag command lines that make ncu profile the wrong process.

Measured traps (H200, ncu 2025.3.1): `ncu ... -- env FOO=1 python3 x.py` with
`--target-processes application-only` profiles `env`, not python ("No kernels were profiled");
a shell wrapper has the same problem; `--profile-from-start off` with vLLM captures nothing unless
vLLM's CUDA profiler calls cudaProfilerStart (its /start_profile endpoint, or LLM.start_profile).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..ncu.plan import CapturePlan

ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SHELLS = {"sh", "bash", "dash", "zsh", "ksh"}


@dataclass(frozen=True)
class Finding:
    code: str
    level: str  # "fixed" (rewritten for you), "warning" (flagged), "refused", "note" (how it will run)
    message: str


def _unwrap_env(plan: CapturePlan) -> tuple[CapturePlan, list[Finding]]:
    target = list(plan.target)
    if not target or os.path.basename(target[0]) != "env":
        return plan, []
    args = target[1:]
    env = dict(plan.env)
    while args and ASSIGNMENT.match(args[0]):
        key, _, value = args.pop(0).partition("=")
        env[key] = value
    if not args or args[0].startswith("-"):
        return plan, [Finding("env-wrapper", "warning",
                              "`env` with options wraps the program: ncu would profile `env`; "
                              "set the variables yourself and run the program directly")]
    keys = ", ".join(k for k, _ in env.items() if (k, env[k]) not in plan.env)
    new = replace(plan, target=tuple(args), env=tuple(env.items()))
    return new, [Finding("env-wrapper", "fixed",
                         f"`env {keys} ...` removed from the program: ncu would profile `env`, not "
                         f"{args[0]}; the variables are set on ncu itself, which passes them on")]


def vllm_cuda_profiler(target: Sequence[str]) -> bool:
    """The vLLM command turns on its CUDA profiler (`--profiler-config` with profiler cuda): its
    /start_profile and /stop_profile call cudaProfilerStart/Stop in the worker, which is the
    serving window `--profile-from-start off` needs."""
    args = list(target)
    for i, a in enumerate(args):
        value = a.split("=", 1)[1] if a.startswith("--profiler-config=") else \
            args[i + 1] if a == "--profiler-config" and i + 1 < len(args) else None
        if a.startswith("--profiler-config.profiler"):
            value = a.split("=", 1)[1] if "=" in a else (args[i + 1] if i + 1 < len(args) else "")
        if value is not None and '"cuda"' in value or value == "cuda":
            return True
    return False


def lint(plan: CapturePlan) -> tuple[CapturePlan, list[Finding]]:
    plan, findings = _unwrap_env(plan)
    program = os.path.basename(plan.target[0]) if plan.target else ""
    if plan.target and (program in SHELLS or program.endswith(".sh")):
        if plan.target_processes == "application-only":
            findings.append(Finding("shell-wrapper", "warning",
                                    f"{program} is a shell: with --target-processes application-only ncu profiles "
                                    "the shell, not the program it starts; use --target-processes all"))
    if plan.kernels:
        findings.append(Finding("kernel-base", "note", f"--kernel filters match ncu's {plan.name_base} kernel names "
                                f"(--kernel-name-base {plan.name_base}; --kernel-base to change)"))
    if not plan.profile_from_start and any("vllm" in a for a in plan.target) and not vllm_cuda_profiler(plan.target):
        findings.append(Finding("profile-from-start", "warning",
                                "--profile-from-start off profiles only between cudaProfilerStart and Stop: vLLM "
                                "calls them only with its CUDA profiler on (--profiler-config '{\"profiler\": "
                                "\"cuda\"}', then POST /start_profile, or LLM(profiler_config=...).start_profile()); "
                                "without that nothing is captured: use --launch-skip N instead"))
    return plan, findings
