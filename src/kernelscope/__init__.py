"""kernelscope: per-kernel roofline verdicts from NVIDIA Nsight Compute reports.

    import kernelscope
    records = kernelscope.load("gemm.ncu-rep")        # list[KernelRecord]
    df = kernelscope.to_dataframe(records)
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from .analysis.pipeline import analyze, load
from .errors import CeilingsError, InputError, KernelscopeError
from .model import Assessment, KernelRecord, Lever, RawKernel

if TYPE_CHECKING:
    import pandas

try:
    __version__ = version("kernelscope")
except PackageNotFoundError:  # running from a source tree (PYTHONPATH=src)
    __version__ = "0+source"


def to_dataframe(items: Sequence[KernelRecord | Assessment]) -> pandas.DataFrame:
    """One row a kernel launch, the same columns as kernels.csv."""
    import pandas

    from .report.tables import flat_row

    return pandas.DataFrame([flat_row(i) for i in items])


__all__ = [
    "Assessment", "CeilingsError", "InputError", "KernelRecord", "KernelscopeError", "Lever",
    "RawKernel", "analyze", "load", "to_dataframe", "__version__",
]
