"""The serving configuration a capture ran under, read from the serving command: which engine, the
model, tensor parallelism, dtype, batch limits, quantization, KV-cache dtype, CUDA-graph mode and
speculative decoding. It goes into every bundle's context (the seed's full-context descriptor) and
decides the levers a vLLM user can pull (analysis/levers.py): the flag to change, not the kernel.

Only what the command says is recorded; vLLM's defaults are named as such, never guessed values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# vLLM options recorded (the context key is the option without its dashes, `-` as `_`)
VLLM_OPTIONS = ("--model", "--served-model-name", "--tensor-parallel-size", "--pipeline-parallel-size",
                "--data-parallel-size", "--dtype", "--max-num-seqs", "--max-num-batched-tokens", "--max-model-len",
                "--quantization", "--kv-cache-dtype", "--gpu-memory-utilization", "--speculative-config",
                "--compilation-config", "--enable-chunked-prefill", "--block-size")
SHORT = {"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-dp": "--data-parallel-size",
         "-q": "--quantization", "-O": "--compilation-config"}
FLAGS = ("--enforce-eager",)


def is_vllm(command: Sequence[str]) -> bool:
    """`vllm serve`, `python3 -m vllm.entrypoints.openai.api_server`, or a wrapper script whose name
    says vllm (one handing its arguments to the server)."""
    return any(w == "vllm" or w.endswith("/vllm") or w.startswith("vllm.") or "vllm" in w.rsplit("/", 1)[-1]
               for w in command)


def _key(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


def vllm_options(command: Sequence[str]) -> dict[str, str]:
    """The recorded options as given (`--opt V`, `--opt=V`, short forms), the flags as "true", and
    the model as the word after `serve` when no --model is given."""
    words = list(command)
    out: dict[str, str] = {}
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        name = SHORT.get(name, name)
        if name in FLAGS:
            out[_key(name)] = "true"
        elif name in VLLM_OPTIONS:
            given = value if eq else (words[i + 1] if i + 1 < len(words) else None)
            if given is not None and not (given.startswith("-") and not eq):
                out[_key(name)] = given
    if "model" not in out and "serve" in words:
        at = words.index("serve") + 1
        if at < len(words) and not words[at].startswith("-"):
            out["model"] = words[at]
    return out


@dataclass(frozen=True)
class Serving:
    """What the levers read of a serving configuration."""

    engine: str  # "vllm"
    options: Mapping[str, str]

    @property
    def eager(self) -> bool:
        return self.options.get("enforce_eager") == "true"

    @property
    def cuda_graphs(self) -> bool:
        """vLLM replays decode inside CUDA graphs unless --enforce-eager (its default, V1 compiled)."""
        return not self.eager and '"cudagraph_mode": "NONE"' not in self.options.get("compilation_config", "")

    def get(self, key: str) -> str | None:
        return self.options.get(key)


def context_of(command: Sequence[str]) -> dict[str, str]:
    """The bundle context keys for a serving command: engine and its recorded options (serving.*)."""
    if not is_vllm(command):
        return {}
    return {"serving.engine": "vllm", **{f"serving.{k}": v for k, v in vllm_options(command).items()}}


def from_context(context: Mapping[str, str]) -> Serving | None:
    """The serving configuration a bundle's context records, if any."""
    engine = context.get("serving.engine")
    if not engine:
        return None
    return Serving(engine, {k.removeprefix("serving."): v for k, v in context.items()
                            if k.startswith("serving.") and k != "serving.engine"})
