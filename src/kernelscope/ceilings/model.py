"""The plain data of ceilings: a roof with its source and clock, a device's roofs, an architecture's
per-SM rates. Read by ceilings/__init__.py (datasheet files) and ceilings/from_report.py (report attributes)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

# Which compute ceiling a precision class is held against.
PRECISION_CEILING: dict[str, str] = {
    "tensor_bf16": "bf16",
    "tensor_fp16": "fp16",
    "tensor_tf32": "tf32",
    "tensor_fp8": "fp8",
    "tensor_int8": "int8",
    "tensor_fp64": "fp64_tensor",
    "tensor_fp4": "fp4",
    "fp64": "fp64",
    "fp32": "fp32",
    "fp16": "fp16_simt",
}


def called(from_report: bool) -> str:
    """A roof as a verdict names it: a datasheet's figure, or one derived from the report's attributes."""
    return "report-derived" if from_report else "datasheet"


@dataclass(frozen=True)
class Ceiling:
    """One sourced peak (TFLOP/s or TB/s) at its clock, and how it checks against the report."""

    key: str  # full key path, e.g. "h200-sxm.compute.bf16"
    value: float | None  # TFLOP/s or TB/s; None: no sourced figure
    source: str
    clock_hz: float | None = None  # the clock the figure is computed at; None: not sourced
    clock_source: str = ""
    check: str = ""  # a datasheet figure against the one the report's attributes derive (ceilings/from_report.py)
    derive: bool = True  # False: a report's attributes must not fill it (the part differs from its architecture)
    agrees: bool | None = None  # None: not checked
    from_report: bool = False  # derived from the report's device attributes (from_report.py), no datasheet's

    @property
    def called(self) -> str:
        """What the figure is, as a verdict's evidence names it."""
        return called(self.from_report)

    def at_clock(self, clock_hz: float | None) -> float | None:
        """The figure scaled to the clock a kernel ran at (peaks are per-clock rates times the clock);
        None when either clock is unknown."""
        if self.value is None or self.clock_hz is None or clock_hz is None:
            return None
        return self.value * clock_hz / self.clock_hz


@dataclass(frozen=True)
class PathRoof:
    """The share of the tensor peak one instruction path reaches (mma.sync vs wgmma on Hopper)."""

    path: str
    ratio: float | None  # None: not sourced
    source: str


@dataclass(frozen=True)
class LinkCeiling:
    """A GPU-to-GPU link's bandwidth (links.<name>): a rate of the link's own, held at no SM or DRAM
    clock. `tbps` is both directions together when `bidirectional` (NVIDIA's "NVLink: 900GB/s"),
    one direction's otherwise; a kernel's received plus sent bytes are held to both directions'."""

    key: str  # e.g. "h200-sxm.links.nvlink"
    tbps: float | None  # TB/s as the file gives it; None: no sourced figure
    bidirectional: bool
    source: str
    direction_source: str = ""  # how it is known whether tbps counts both directions

    @property
    def both_ways_tbps(self) -> float | None:
        return None if self.tbps is None else self.tbps if self.bidirectional else 2 * self.tbps

    @property
    def each_way_tbps(self) -> float | None:
        return None if self.tbps is None else self.tbps / 2 if self.bidirectional else self.tbps


@dataclass(frozen=True)
class Arch:
    """One architecture's row of architectures.yaml: what it does per SM per clock, and which tensor
    paths it has, for roofs derived from a report and for levers that name a path or a precision."""

    cc: str  # "9.0"
    name: str  # "Hopper"
    chip: str  # "GH100"
    per_sm_clock: Mapping[str, float | None]  # precision -> dense FLOP (OP) a SM a clock; None: no unit
    tensor_paths: tuple[str, ...]  # fastest first; () for none
    path_ratio: Mapping[str, float]  # a slower path's share of the fastest's peak
    geforce_fp32_accumulate: bool  # GeForce parts halve tensor math that accumulates in fp32
    no_tensor_cores: tuple[str, ...]  # device-name words of parts built without tensor cores
    source: str

    def has(self, precision: str) -> bool:
        """Whether the chip has tensor (or SIMT) units for this ceilings precision."""
        return self.per_sm_clock.get(precision) is not None


@dataclass(frozen=True)
class DeviceCeilings:
    """One device's roofs: memory, each precision's compute, tensor paths and links."""

    hw_key: str
    name: str
    origin: str  # the file the figures came from
    match: tuple[str, ...]  # device names (as ncu reports them) that select this entry
    memory: Ceiling
    compute: Mapping[str, Ceiling]
    tensor_paths: Mapping[str, PathRoof] = field(default_factory=dict)
    links: Mapping[str, LinkCeiling] = field(default_factory=dict)
    cc: str | None = None  # compute capability (the entry's, or the report's): an entry matches an unnamed export by it
    sms: int | None = None
    arch: Arch | None = None  # the architecture's row, when the report or the entry says which
    notes: tuple[str, ...] = ()  # what a reader must know of these roofs (a disagreement, GeForce rates)
    how: str = "datasheet"  # datasheet | datasheet, checked against the report | derived | unidentified | a file
    memory_kind: str = "HBM"  # HBM, or GDDR on a bus under 1,024 bits (the report's bus width says which)

    @property
    def tensor_cores(self) -> bool | None:
        """Whether the device has tensor cores; None when nothing says."""
        if self.arch is None:
            return None
        return any(self.compute.get(p) is not None and self.compute[p].value is not None
                   for p in ("bf16", "fp16", "tf32", "fp8", "int8", "fp4"))

    @functools.cached_property  # asked for each launch judged: worked out once a device
    def from_report(self) -> frozenset[str]:
        """The keys of the figures derived from the report's attributes, not a datasheet's."""
        return frozenset(c.key for c in (self.memory, *self.compute.values()) if c.from_report)

    def has_path(self, path: str) -> bool | None:
        """Whether the chip runs this tensor instruction path (wgmma: Hopper only; tcgen05: Blackwell
        data-centre parts); None when the architecture is not known."""
        return None if self.arch is None else path in self.arch.tensor_paths

    def link(self, name: str) -> LinkCeiling:
        """A link's ceiling; one the file does not list is unknown, never 0."""
        return self.links.get(name) or LinkCeiling(f"{self.hw_key}.links.{name}", None, True, "absent")

    def for_precision(self, precision_class: str) -> Ceiling:
        name = PRECISION_CEILING[precision_class]
        return self.compute.get(name) or Ceiling(f"{self.hw_key}.compute.{name}", None, "absent")

    def path_roof(self, path: str | None) -> PathRoof:
        """A listed path's share of the peak; the datasheet peak is the fastest path's (wgmma,
        tcgen05), so any other path, or an unknown one, is held to the whole peak."""
        return self.tensor_paths.get(path or "") or PathRoof(path or "unknown", 1.0, "the datasheet peak")


