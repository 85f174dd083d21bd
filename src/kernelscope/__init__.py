"""kernelscope: per-kernel roofline verdicts from NVIDIA Nsight Compute reports.

    import kernelscope
    records = kernelscope.load("gemm.ncu-rep")        # list[KernelRecord]; record.metrics holds the raw counters
    items, ceilings = kernelscope.analyze("gemm.ncu-rep")
    df = kernelscope.to_dataframe(items)               # the columns of kernels.csv

Every error raised on purpose is a KernelscopeError (InputError for a bad file), and bad input of
any kind (a wrong type, a missing or hostile file) raises nothing else.

The names are imported on first use (PEP 562), so `kernelscope --help` and `--version` do not
pay for the analysis stack, YAML and the report readers.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas

    from .analysis.pipeline import analyze, load
    from .errors import CeilingsError, InputError, KernelscopeError
    from .model import Assessment, KernelRecord, Lever, RawKernel

__version__ = "0.2.0"

_LAZY = {
    "analyze": ".analysis.pipeline", "load": ".analysis.pipeline",
    "CeilingsError": ".errors", "InputError": ".errors", "KernelscopeError": ".errors",
    "Assessment": ".model", "KernelRecord": ".model", "Lever": ".model", "RawKernel": ".model",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'kernelscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def to_dataframe(items: Iterable[KernelRecord | Assessment]) -> pandas.DataFrame:
    """One row a kernel launch, the same columns as kernels.csv. Anything but KernelRecords and
    Assessments (what load and analyze return) is a KernelscopeError."""
    import pandas

    from .columns import FLAT, flat_values, kernel_object, record_object
    from .errors import KernelscopeError
    from .model import Assessment, KernelRecord

    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise KernelscopeError(f"to_dataframe: expected a list of KernelRecord or Assessment, got "
                               f"{type(items).__name__}")
    rows = []
    for i in items:
        if not isinstance(i, (Assessment, KernelRecord)):
            raise KernelscopeError(f"to_dataframe: expected KernelRecord or Assessment items, got {type(i).__name__}")
        rows.append(flat_values(kernel_object(i) if isinstance(i, Assessment) else record_object(i)))
    frame: pandas.DataFrame = pandas.DataFrame(rows, columns=list(FLAT))  # the columns even with no rows
    return frame


__all__ = [
    "Assessment", "CeilingsError", "InputError", "KernelRecord", "KernelscopeError", "Lever",
    "RawKernel", "analyze", "load", "to_dataframe", "__version__",
]
