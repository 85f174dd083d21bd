"""vLLM's releases as a Kubernetes capture reads them (an image's tag, the server's own word), and
what turns its CUDA profiler on in each. Apart from kernelscope/serving.py: only the k8s verbs need
them, and their dataclass and patterns cost every analyze start-up ~1.5 ms."""

from __future__ import annotations

import re
from dataclasses import dataclass

# How POST /start_profile reaches cudaProfilerStart (the serving window `ncu --profile-from-start off`
# needs), by vLLM release, read from each release's source (vllm/envs.py, config/profiler.py, the GPU
# worker's profiler): 0.11.0 and older have only the torch profiler; 0.11.1-0.12 the env
# VLLM_TORCH_CUDA_PROFILE (VLLM_TORCH_PROFILER_DIR, when set, wins over it); 0.13 on
# `--profiler-config '{"profiler": "cuda"}'` (0.13-0.15 also take the env, deprecated; 0.16 dropped it).
CUDA_PROFILER_ENV = "VLLM_TORCH_CUDA_PROFILE"
TORCH_PROFILER_ENV = "VLLM_TORCH_PROFILER_DIR"
# the dotted form (vLLM 0.13 on): no JSON quotes for a shell, an `eval` (KServe's template) or YAML to break
PROFILER_OPTIONS = ("--profiler-config.profiler", "cuda")
VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")
# images whose tag is vLLM's own release (others, e.g. LMCache's vllm-openai, tag their own versions)
VLLM_RELEASE_IMAGE = re.compile(r"^(?:docker\.io/)?vllm/vllm-openai(?:-[a-z0-9]+)?:(v?\d+\.\d+(?:\.\d+)?)$")


def release(text: str | None) -> tuple[int, int, int] | None:
    """'0.11.0', 'v0.13.1', '0.16.0rc1.dev5+g1234' -> (0, 11, 0); anything else -> None."""
    m = VERSION.match((text or "").strip())
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def image_release(image: str) -> str | None:
    """vLLM's release from the project's own image tag (vllm/vllm-openai:v0.11.0 -> 0.11.0)."""
    m = VLLM_RELEASE_IMAGE.match(image.strip())
    return m.group(1).lstrip("v") if m else None


@dataclass(frozen=True)
class ProfilerSwitch:
    """What turns on vLLM's CUDA profiler in this release: options appended to the serving command,
    env set in (and env removed from) its container; None of either for a release that has none."""

    options: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    drop_env: tuple[str, ...] = ()
    why: str = ""

    @property
    def exists(self) -> bool:
        return bool(self.options or self.env)


def profiler_switch(version: str | None, source: str) -> ProfilerSwitch:
    """The switch for vLLM `version` (None: unknown, taken as current, which is said)."""
    v = release(version)
    if v is None:
        return ProfilerSwitch(PROFILER_OPTIONS, why=(
            f"vLLM's version is unknown ({source}): --profiler-config, which vLLM 0.13 and later take, is assumed; "
            "an older server fails at start with 'unrecognized arguments' (then pass --vllm-version)"))
    if v >= (0, 13, 0):
        return ProfilerSwitch(PROFILER_OPTIONS,
                              why=f"vLLM {version} ({source}): --profiler-config.profiler cuda (vLLM 0.13 and later)")
    if v >= (0, 11, 1):
        return ProfilerSwitch(env=((CUDA_PROFILER_ENV, "1"),), drop_env=(TORCH_PROFILER_ENV,),
                              why=f"vLLM {version} ({source}): env {CUDA_PROFILER_ENV}=1 (vLLM 0.11.1-0.12 have no "
                                  f"--profiler-config), {TORCH_PROFILER_ENV} removed from the sister (it would win)")
    return ProfilerSwitch(why=f"vLLM {version} ({source}) has no CUDA-profiler switch (its /start_profile runs the "
                              "torch profiler only; vLLM 0.11.1 added one)")
