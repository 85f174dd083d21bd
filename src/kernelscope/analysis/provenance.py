"""Who owns a kernel's code, from its name and counters: a vendor library (nobody outside the vendor
recompiles it), an open project (FlashAttention, FlashInfer, PyTorch's own kernels, code that
torch.compile generated), or the user's own code. The owner decides which levers one can pull
(analysis/levers/): a library kernel is changed by choosing another algorithm, shape, precision or
fusion, never by its compiler flags. First matching rule wins."""

from __future__ import annotations

import re
from functools import lru_cache

from ..model import KernelRecord, Provenance, ProvenanceKind
from ..serving import VLLM_TRITON

# (owner, family, regex on the short or demangled name), first match wins: cuBLAS's own CUTLASS
# kernels (`cutlass::Kernel2<cutlass_80_tensorop_...>`) before open CUTLASS templates that a project
# instantiates itself (vLLM's `cutlass::device_kernel<vllm::cutlass_3x_gemm<...>>`), whose tile
# configuration is in reach
PROVENANCE_RULES: tuple[tuple[ProvenanceKind, str, str], ...] = (
    ("library", "NCCL", r"^nccl|nccl(Dev)?Kernel"),
    ("library", "cuBLAS", r"^nvjet_|^cublas|^gemmk1_kernel|^splitKreduce_kernel|^gemv2?[NT]?_kernel|^gemvx?_kernel"),
    ("library", "CUTLASS in cuBLAS", r"\bcutlass_\d+_|\bsm\d+_xmma_|^xmma_"),
    ("library", "cuDNN", r"cudnn"),
    # vLLM's FlashAttention-3 build (vllm-flash-attn): CuTe kernels inside cutlass::device_kernel
    ("open", "FlashAttention-3 (vLLM)", r"FlashAttn(Fwd|Bwd)\w*|\bflash::prepare_varlen"),
    ("open", "FlashAttention", r"^flash_(fwd|bwd)|\bflash::|flash_attn"),
    ("open", "FlashInfer", r"flashinfer"),
    ("open", "Marlin (vLLM)", r"\bmarlin\w*::|\bMarlin<"),
    ("open", "vLLM", r"\bvllm::"),
    ("open", "CUTLASS", r"\bcutlass::"),
    ("open", "Triton (torch.compile)", r"^triton_(poi|red|per|tem|for)_"),
    # vLLM's own Triton kernels (sampler, input preparation, speculative decoding), as vLLM 0.26 names them
    ("open", "Triton (vLLM)", VLLM_TRITON),
    # vLLM's fused-MoE Triton GEMM (SGLang carries a port of it under the same name)
    ("open", "Triton (vLLM)", r"^fused_moe_kernel(_gptq_awq)?$"),
    # CUB's and Thrust's kernels (a user's thrust::sort shows as _kernel_agent): the library's, tuned by its policies
    ("open", "CUB/Thrust", r"\bcub::|\bthrust::|^_kernel_agent$|^DeviceRadixSort|^DeviceReduce|^DeviceScan"),
    ("open", "PyTorch ATen", r"\bat::native::|^(vectorized|unrolled)_elementwise_kernel|^reduce_kernel|^cunn_"
                             r"|^CatArrayBatchedCopy|^distribution_elementwise"),
)
USER: tuple[ProvenanceKind, str] = ("user", "your CUDA")

# Warp specialisation (producer warpgroup feeding consumer warpgroups through barriers): by name, or
# by a warpgroup-MMA path with at least three warpgroups a block, the shape of CUTLASS 3, cuBLAS,
# cuDNN and FlashAttention-3 kernels on Hopper (one producer, two consumers: 384 threads).
WARP_SPECIALISED_NAME = r"warp_?speciali[sz]ed|_ws_|ping_?pong|cooperative|_coop[AB]?_"
WARP_SPECIALISED_MIN_THREADS = 384
WARPGROUP_PATHS = frozenset({"wgmma", "tcgen05"})


@lru_cache(maxsize=1024)
def threads_per_block(block: str | None) -> int | None:
    """'(384, 1, 1)' -> 384."""
    dims = re.findall(r"\d+", block or "")
    if len(dims) != 3:
        return None
    x, y, z = (int(d) for d in dims)
    return x * y * z


@lru_cache(maxsize=4096)  # a campaign repeats a few hundred names over many launches
def _by_name(name: str, name_full: str) -> tuple[ProvenanceKind, str, str, str | None]:
    """(owner, family, what matched, the warp-specialised word in the name) from the names alone."""
    names = (name, name_full)
    kind, family = USER
    why = "no library or open-kernel name matched: the user's own code"
    for owner, fam, pattern in PROVENANCE_RULES:
        hit = next((m for n in names if (m := re.search(pattern, n))), None)
        if hit is not None:
            kind, family, why = owner, fam, f"name matches {hit.group(0)!r}"
            break
    by_name = next((m.group(0) for n in names if (m := re.search(WARP_SPECIALISED_NAME, n, re.IGNORECASE))), None)
    return kind, family, why, by_name


# A Triton kernel's source file says whose it is (the report's line information, ingest/ncu_rep.code_file).
TRITON_FILES: tuple[tuple[ProvenanceKind, str, str], ...] = (
    # inductor's generated code: its own cache, or under vLLM's torch_compile_cache (before the /vllm/ rule)
    ("open", "Triton (torch.compile)", r"torchinductor|/_inductor/|inductor_cache|torch_compile_cache"),
    ("open", "Triton (vLLM)", r"/vllm/"),
    ("open", "Triton (FlashInfer)", r"/flashinfer/"),
    ("user", "your Triton", r"\.py$"),
    ("user", "your CUDA", r"\.(cu|cuh|cc|cpp|cxx|h|hpp)$"),
)
# Without line info: nvcc mangles a C++ kernel, so its demangled name carries a parameter list;
# Triton emits a plain symbol. (An `extern "C"` CUDA kernel looks the same: the why says so.)
UNMANGLED = re.compile(r"^[A-Za-z_]\w*$")


def _by_file(path: str | None) -> tuple[ProvenanceKind, str, str] | None:
    for owner, family, pattern in TRITON_FILES:
        if path and re.search(pattern, path):
            return owner, family, f"its code is {path.rsplit('/', 1)[-1]} ({pattern!r} in the report's line info)"
    return None


def classify(rec: KernelRecord) -> Provenance:
    kind, family, why, by_name = _by_name(rec.name, rec.name_full)
    found = _by_file(rec.code_file) if kind == "user" or family.startswith("Triton") else None
    if found is not None:
        kind, family, why = found
    elif kind == "user" and UNMANGLED.match(rec.name_full):
        family = "your Triton"
        why = ("an unmangled name with no parameter list, as Triton emits (an extern \"C\" CUDA kernel looks "
               "the same; --set full keeps line info, whose .py file would confirm it)")
    threads = threads_per_block(rec.block) or 0
    by_shape = rec.tensor_path in WARPGROUP_PATHS and threads >= WARP_SPECIALISED_MIN_THREADS
    if by_name:
        why += f"; warp-specialised: name has {by_name!r}"
    elif by_shape:
        why += f"; warp-specialised: {rec.tensor_path} with {threads} threads a block ({threads // 128} warpgroups)"
    return Provenance(kind, family, bool(by_name) or by_shape, why)
