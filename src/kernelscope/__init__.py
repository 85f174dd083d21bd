"""kernelscope: per-kernel roofline verdicts from NVIDIA Nsight Compute reports.

    import kernelscope
    records = kernelscope.load("gemm.ncu-rep")        # list[KernelRecord]; record.metrics holds the raw counters
    items, ceilings = kernelscope.analyze("gemm.ncu-rep")
    df = kernelscope.to_dataframe(items)               # the columns of kernels.csv

Every error raised on purpose is a KernelscopeError (InputError for a bad file).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .analysis.pipeline import analyze, load
from .errors import CeilingsError, InputError, KernelscopeError
from .model import Assessment, KernelRecord, Lever, RawKernel

if TYPE_CHECKING:
    import pandas

__version__ = "0.2.0"


def to_dataframe(items: Sequence[KernelRecord | Assessment]) -> pandas.DataFrame:
    """One row a kernel launch, the same columns as kernels.csv."""
    import pandas

    from .columns import flatten, kernel_object, record_object

    frame: pandas.DataFrame = pandas.DataFrame([flatten(kernel_object(i) if isinstance(i, Assessment)
                                                        else record_object(i)) for i in items])
    return frame


__all__ = [
    "Assessment", "CeilingsError", "InputError", "KernelRecord", "KernelscopeError", "Lever",
    "RawKernel", "analyze", "load", "to_dataframe", "__version__",
]
