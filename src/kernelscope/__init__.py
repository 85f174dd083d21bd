"""kernelscope: per-kernel roofline verdicts from NVIDIA Nsight Compute reports.

    import kernelscope
    records = kernelscope.load("gemm.ncu-rep")        # list[KernelRecord]; record.metrics holds the raw counters
    items, ceilings = kernelscope.analyze("gemm.ncu-rep")
    df = kernelscope.to_dataframe(items)               # one row a launch: the columns of kernels.csv, typed
    kernels = kernelscope.to_dataframe(items, per="kernel")  # one row a kernel, its launches together

Every error raised on purpose is a KernelscopeError (InputError for a bad file), and bad input of
any kind (a wrong type, a missing or hostile file) raises nothing else. The package is typed
(py.typed): `mypy --strict` sees these signatures.

The names are imported on first use (PEP 562), so `kernelscope --help` and `--version` do not
pay for the analysis stack, YAML and the report readers; dir() lists them all the same.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .analysis.pipeline import analyze, load
    from .errors import CeilingsError, InputError, KernelscopeError
    from .model import Assessment, KernelRecord, Lever, RawKernel
    from .report.frame import to_dataframe

__version__ = "0.2.0"

_LAZY = {
    "analyze": ".analysis.pipeline", "load": ".analysis.pipeline",
    "CeilingsError": ".errors", "InputError": ".errors", "KernelscopeError": ".errors",
    "Assessment": ".model", "KernelRecord": ".model", "Lever": ".model", "RawKernel": ".model",
    "to_dataframe": ".report.frame",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'kernelscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The API and the module's own dunders, whether or not a name has been imported yet."""
    return sorted({*__all__, *(n for n in globals() if n.startswith("__"))})


__all__ = [
    "Assessment", "CeilingsError", "InputError", "KernelRecord", "KernelscopeError", "Lever",
    "RawKernel", "analyze", "load", "to_dataframe", "__version__",
]
