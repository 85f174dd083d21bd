"""The serving configuration a capture ran under, read from the serving command: which engine, the
model, tensor parallelism, dtype, batch limits, quantization, KV-cache dtype, CUDA-graph mode and
speculative decoding. It goes into every bundle's context and decides the levers a vLLM user can
pull (analysis/levers/): the flag to change, not the kernel.

Only what the command says is recorded; vLLM's defaults are named as such, never guessed values."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from .redact import shell_words

# vLLM options recorded (the context key is the option without its dashes, `-` as `_`)
VLLM_OPTIONS = ("--model", "--served-model-name", "--tensor-parallel-size", "--pipeline-parallel-size",
                "--data-parallel-size", "--dtype", "--max-num-seqs", "--max-num-batched-tokens", "--max-model-len",
                "--quantization", "--kv-cache-dtype", "--gpu-memory-utilization", "--speculative-config",
                "--compilation-config", "--enable-chunked-prefill", "--block-size")
SHORT = {"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-dp": "--data-parallel-size",
         "-q": "--quantization", "-O": "--compilation-config"}
FLAGS = ("--enforce-eager",)
# the context's keys a command may leave out, recorded as what vLLM (0.26, vllm/engine/arg_utils.py)
# does without them, never as a guessed figure; the levers name the same words
DEFAULTS = {
    "tensor_parallel_size": "not set: 1 GPU",
    "dtype": "not set: auto, the model's own dtype",
    "max_num_seqs": "not set: 1024 on a GPU of 70 GB or more other than A100, else 256",
    "max_num_batched_tokens": "not set: 8192 for the server on a GPU of 70 GB or more other than A100, else 2048",
    "quantization": "not set: none",
    "kv_cache_dtype": "not set: auto, the model's dtype",
}
SCRIPT = "set in the script, not on its command line"  # serving.options for a script that builds vllm.LLM
RECOGNISED = "not recorded: vLLM recognised from the capture, not from a serving command"
# what says a capture is vLLM's when its command does not: vLLM's own CUDA kernels live in its `vllm::`
# namespace (reshape_and_cache_flash_kernel, moe::topkGating, cutlass_3x_gemm_sm90_fp8, act_and_mul);
# its images are vllm/vllm-openai and builds of it; its engine process is named EngineCore
VLLM_KERNEL = re.compile(r"\bvllm::")
# vLLM's own Triton kernels (sampler, input preparation, speculative decoding), as vLLM 0.26 names them;
# analysis/provenance.py files them under vLLM too
VLLM_TRITON = (r"^_(topk_topp|gumbel_sample|compute_slot_mappings?|prepare_\w+|get_num_\w+|penalties|min_p"
               r"|bincount|apply_grammar_bitmask|expand_idx_mapping|gather_block_tables|rejection"
               r"|post_update\w*|ranks|flatten_sampled|combine_sampled_and_draft_tokens|bad_words"
               r"|apply_write|resample|insert_resampled)_kernel$")
_VLLM_TRITON = re.compile(VLLM_TRITON)
VLLM_IMAGE = re.compile(r"(^|/)vllm[-_a-z]*(:|@|$)|vllm-openai|/vllm/")
VLLM_PROCESS = re.compile(r"EngineCore|VLLM::", re.IGNORECASE)


def recognise(kernels: Sequence[str], image: str | None, processes: Sequence[str] = ()) -> str | None:
    """What in a capture says it is vLLM's, when its serving command does not (a script of another
    name, an attach capture with no command): its kernels, the pod's image, the process. None: nothing."""
    seen = []
    ours = sorted({_short(k) for k in kernels if VLLM_KERNEL.search(k) or _VLLM_TRITON.match(_short(k))})
    if ours:
        seen.append(f"vLLM's own kernels ({', '.join(ours[:3])}{', ...' if len(ours) > 3 else ''})")
    if image and VLLM_IMAGE.search(image.lower()):
        seen.append(f"the pod's image {image}")
    named = [p for p in processes if VLLM_PROCESS.search(p)]
    if named:
        seen.append(f"the process {named[0]}")
    return "; ".join(seen) or None


def _short(kernel: str) -> str:
    """'void vllm::moe::topkGating<...>(...)' -> 'vllm::moe::topkGating'; a plain symbol as it is."""
    found = re.search(r"\bvllm::(?:\w+::)*\w+", kernel)
    return found.group(0) if found else kernel.split("(", 1)[0].strip()


SHELLS = re.compile(r"^(/usr)?(/bin/)?(ba|da|z)?sh$")
SEPARATORS = frozenset({";", "&&", "||"})  # between a script's simple commands (redact.shell_words' tokens)


def _separates(token: str) -> bool:
    """A punctuation token that ends a simple command: `;`, `&&`, `||`, also run together with a
    parenthesis (`$(X);` splits as `$`, `(`, `X`, `);`)."""
    return token in SEPARATORS or (set(token) <= set(";&|()") and any(sep in token for sep in SEPARATORS))


def script_at(command: Sequence[str]) -> int | None:
    """Where the script is in `sh -c SCRIPT` (`bash -lc`, `/bin/sh -ec` ...), the form vLLM's own
    Kubernetes guide uses (`command: ["/bin/sh", "-c"]`, the server in args): None for an exec form."""
    words = list(command)
    if len(words) >= 3 and SHELLS.match(words[0]) and words[1].startswith("-") and "c" in words[1]:
        return 2
    return None


# where a script starts its server: `vllm serve`, `python3 -m vllm.entrypoints...` (an `exec`, an
# `eval "exec ..."` before it, as KServe's template has)
SERVER_IN_SCRIPT = re.compile(r"(?:^|(?<=[\s;&|(\"']))((?:\S*/)?vllm[ \t]+serve\b|(?:\S*/)?python[\d.]*[ \t]+-m[ \t]+"
                              r"vllm\.entrypoints\S*)")
POSITIONAL = frozenset({"$@", "${@}", "$*", "${*}"})


def _server_in(script: str, positional: Sequence[str]) -> list[str] | None:
    """The server's words in a script too long or too shell-specific to split whole (RoCE set-up,
    `[[ ]]`, comments with quotes): from its last `vllm serve` to the end of that command line
    (backslash-newlines joined), `$@` as the script's positional words; quotes that do not close
    there (an `eval "..."` string) are dropped rather than guessed."""
    found = list(SERVER_IN_SCRIPT.finditer(script))
    if not found:
        return None
    line = script[found[-1].start(1):].replace("\\\n", " ").split("\n", 1)[0]
    try:
        tokens = shell_words(line)
    except ValueError:
        tokens = line.replace('"', " ").replace("'", " ").split()
    tokens = tokens[:next((i for i, t in enumerate(tokens) if _separates(t)), len(tokens))]
    return [w for t in tokens for w in (positional if t in POSITIONAL else [t])]


def words(command: Sequence[str]) -> list[str]:
    """The command's words, a `sh -c` script split as the shell would (its last simple command, the
    server: `pip install x && exec vllm serve m` -> `vllm serve m`), then any words after the script
    (`sh -c 'exec "$@"' vllm serve m`: the script's $0, $1...). A script that does not split whole
    gives its server's own line (_server_in)."""
    at = script_at(command)
    if at is None:
        return list(command)
    try:
        tokens = shell_words(command[at])
    except ValueError:
        tokens = None
    script = tokens[max((i + 1 for i, t in enumerate(tokens) if _separates(t)), default=0):] if tokens else None
    if script is None or not any("vllm" in w for w in script):
        server = _server_in(command[at], command[at + 2:])
        if server is not None:
            return server
    if script is None:
        return list(command)
    return [*script, *command[at + 1:]]


def with_options(command: Sequence[str], extra: Sequence[str]) -> list[str]:
    """The command with options appended: to the end of a `sh -c` script (quoted) when the script is
    the whole command, else to the argv (words after a script are its "$@")."""
    at = script_at(command)
    if at is None or len(command) > at + 1:
        return [*command, *extra]
    out = list(command)
    out[at] = f"{out[at].rstrip()} {' '.join(shlex.quote(e) for e in extra)}"
    return out


def is_vllm(command: Sequence[str]) -> bool:
    """`vllm serve`, `python3 -m vllm.entrypoints.openai.api_server`, or a wrapper script whose name
    says vllm (one handing its arguments to the server); inside a `sh -c` script too."""
    return any(w == "vllm" or w.endswith("/vllm") or w.startswith("vllm.") or "vllm" in w.rsplit("/", 1)[-1]
               for w in words(command))


def spelled(word: str) -> str:
    """A command-line word with its long option's name as vLLM's parser reads it: vLLM's
    FlexibleArgumentParser takes `--max_num_batched_tokens` (its own Kubernetes guide's form) as
    `--max-num-batched-tokens`; the value after `=` is kept as given."""
    if not word.startswith("--"):
        return word
    name, eq, value = word.partition("=")
    return name.replace("_", "-") + eq + value


def _key(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


def vllm_options(command: Sequence[str]) -> dict[str, str]:
    """The recorded options as given (`--opt V`, `--opt=V`, short forms), the flags as "true", and
    the model as the word after `serve` when no --model is given."""
    argv = words(command)
    out: dict[str, str] = {}
    for i, word in enumerate(argv):
        name, eq, value = spelled(word).partition("=")
        name = SHORT.get(name, name)
        if name in FLAGS:
            out[_key(name)] = "true"
        elif name in VLLM_OPTIONS:
            given = value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
            if given is not None and not (given.startswith("-") and not eq):
                out[_key(name)] = given
    if "model" not in out and "serve" in argv:
        at = argv.index("serve") + 1
        if at < len(argv) and not argv[at].startswith("-"):
            out["model"] = argv[at]
    return out


class Serving(NamedTuple):
    """What the levers read of a serving configuration."""

    engine: str  # "vllm"
    options: Mapping[str, str]
    in_script: bool = False  # the options were set in a script's code: what is not given is not known
    recognised: str = ""  # what says it is vLLM's when no serving command does; its options are not known

    @property
    def eager(self) -> bool:
        return self.options.get("enforce_eager") == "true"

    @property
    def cuda_graphs(self) -> bool:
        """vLLM replays decode inside CUDA graphs unless --enforce-eager (its default, V1 compiled)."""
        return not self.eager and '"cudagraph_mode": "NONE"' not in self.options.get("compilation_config", "")

    def get(self, key: str) -> str | None:
        return self.options.get(key)


def is_cli(command: Sequence[str]) -> bool:
    """vLLM's own command line (`vllm serve`, `-m vllm.entrypoints...`), whose options are all in the
    argv; a script that builds vllm.LLM sets them in its code, where the command does not show them."""
    argv = words(command)
    return any(w.startswith("vllm.entrypoints") for w in argv) or any(
        (w == "vllm" or w.endswith("/vllm")) and argv[i + 1:i + 2] == ["serve"] for i, w in enumerate(argv))


def cudagraph_mode(options: Mapping[str, str]) -> str:
    """How decode steps run, as the options say: vLLM replays them in CUDA graphs unless told not to."""
    if options.get("enforce_eager") == "true":
        return "none: --enforce-eager"
    given = re.search(r'"cudagraph_mode"\s*:\s*"([A-Z_]+)"', options.get("compilation_config", ""))
    return given.group(1) if given else "not set: FULL_AND_PIECEWISE, decode replayed in CUDA graphs"


def context_of(command: Sequence[str], recognised: str | None = None) -> dict[str, str]:
    """The bundle context keys for a serving command (serving.*): engine, its recorded options, and
    for a descriptor key the command leaves out, what vLLM does without it. `recognised`: what else
    says the capture is vLLM's (recognise), when the command does not."""
    if not is_vllm(command):
        if recognised is None:
            return {}
        given = {f"serving.{k}": v for k, v in vllm_options(command).items()}
        return {"serving.engine": "vllm", "serving.options": RECOGNISED, "serving.recognised": recognised, **given}
    given = vllm_options(command)
    if not is_cli(command):  # a script's own vllm.LLM(...) arguments are not on its command line
        return {"serving.engine": "vllm", "serving.options": SCRIPT, **{f"serving.{k}": v for k, v in given.items()}}
    return {"serving.engine": "vllm", **{f"serving.{k}": v for k, v in {**DEFAULTS, **given}.items()},
            "serving.cudagraph_mode": cudagraph_mode(given)}


def from_context(context: Mapping[str, str]) -> Serving | None:
    """The serving configuration a bundle's context records, if any: the options given (a default
    recorded as such is not an option the user set)."""
    engine = context.get("serving.engine")
    if not engine:
        return None
    return Serving(engine, {k: v for key, v in context.items() if key.startswith("serving.")
                            and (k := key.removeprefix("serving.")) not in ("engine", "cudagraph_mode", "options",
                                                                            "recognised")
                            and v != DEFAULTS.get(k)}, context.get("serving.options") in (SCRIPT, RECOGNISED),
                   context.get("serving.recognised", ""))
