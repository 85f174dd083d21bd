"""Speed-of-light ceilings: the packaged datasheet file, a user's override, and device lookup."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CeilingsError, InputError, KernelscopeError
from ..files import load_yaml, parse_packaged_yaml
from ..model import in_range

PACKAGED = "sol-ceilings.yaml"

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


@dataclass(frozen=True)
class Ceiling:
    key: str  # full key path, e.g. "h200-sxm.compute.bf16"
    value: float | None  # TFLOP/s or TB/s; None: no sourced figure
    source: str
    clock_hz: float | None = None  # the clock the figure is computed at; None: not sourced
    clock_source: str = ""

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
class DeviceCeilings:
    hw_key: str
    name: str
    origin: str  # the file the figures came from
    match: tuple[str, ...]  # device names (as ncu reports them) that select this entry
    memory: Ceiling
    compute: Mapping[str, Ceiling]
    tensor_paths: Mapping[str, PathRoof] = field(default_factory=dict)
    links: Mapping[str, LinkCeiling] = field(default_factory=dict)

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


@dataclass(frozen=True)
class CeilingsFile:
    origin: str
    devices: Mapping[str, DeviceCeilings]

    def pick(self, device_name: str | None, hw_key: str | None = None) -> DeviceCeilings:
        """`hw_key` wins; otherwise the entry whose `match` names the report's device exactly."""
        if hw_key is not None and not isinstance(hw_key, str):
            raise CeilingsError(f"--hw: expected a ceilings key (text), got {type(hw_key).__name__}")
        if hw_key:
            if hw_key not in self.devices:
                known = ", ".join(sorted(self.devices))
                raise CeilingsError(f"{self.origin}: no ceilings for --hw {hw_key} (known: {known})")
            return self.devices[hw_key]
        wanted = str(device_name or "").strip().lower()
        for dev in self.devices.values():
            if wanted and wanted in {m.lower() for m in dev.match}:
                return dev
        raise CeilingsError(
            f"{self.origin}: unknown device {device_name!r}; pass --hw KEY "
            f"(one of {', '.join(sorted(self.devices))}) or --ceilings FILE"
        )


def _number(value: Any, where: str, origin: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value > 0 and in_range(value)):
        raise InputError(origin, f"{where} must be a positive number from 1e-30 to 1e30, or null, got {value!r:.80}")
    return float(value)


def _map(value: Any, where: str, origin: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(origin, f"{where} must be a map, got {type(value).__name__}")
    return {str(k): v for k, v in value.items()}


def _text(value: Any, where: str, origin: str, default: str = "") -> str:
    if value is None:
        return default
    if isinstance(value, (dict, list)):
        raise InputError(origin, f"{where} must be text, got {type(value).__name__}")
    return str(value)


def _device(key: str, spec: Any, origin: str) -> DeviceCeilings:
    """One device entry, every field type-checked: a hand-edited file is one clear error, never a crash."""
    spec = _map(spec, f"device {key!r}", origin)
    if "memory" not in spec or "compute" not in spec:
        raise InputError(origin, f"device {key!r} needs 'memory' and 'compute' maps")
    hbm = _map(_map(spec["memory"], f"{key}.memory", origin).get("hbm"), f"{key}.memory.hbm", origin)
    tbps = _number(hbm.get("tbps"), f"{key}.memory.hbm.tbps", origin)
    if tbps is None:
        raise InputError(origin, f"{key}.memory.hbm.tbps is required")
    compute = {}
    for prec, entry in _map(spec["compute"] or {}, f"{key}.compute", origin).items():
        entry = _map(entry, f"{key}.compute.{prec}", origin)
        value = _number(entry.get("tflops"), f"{key}.compute.{prec}.tflops", origin)
        compute[prec] = _ceiling(f"{key}.compute.{prec}", value, entry, origin)
    paths = {}
    for path, entry in _map(spec.get("tensor_paths") or {}, f"{key}.tensor_paths", origin).items():
        entry = _map(entry, f"{key}.tensor_paths.{path}", origin)
        ratio = _number(entry.get("ratio"), f"{key}.tensor_paths.{path}.ratio", origin)
        paths[path] = PathRoof(path, ratio, _text(entry.get("source"), f"{key}.tensor_paths.{path}.source", origin))
    links = {name: _link(f"{key}.links.{name}", entry, origin)
             for name, entry in _map(spec.get("links") or {}, f"{key}.links", origin).items()}
    match = spec.get("match") or []
    if not isinstance(match, list):
        raise InputError(origin, f"{key}.match must be a list of device names, got {type(match).__name__}")
    return DeviceCeilings(
        hw_key=key,
        name=_text(spec.get("name"), f"{key}.name", origin, key),
        origin=origin,
        match=tuple(_text(m, f"{key}.match", origin) for m in match),
        memory=_ceiling(f"{key}.memory.hbm", tbps, hbm, origin),
        compute=compute,
        tensor_paths=paths,
        links=links,
    )


def _link(key: str, entry: Any, origin: str) -> LinkCeiling:
    entry = _map(entry, key, origin)
    both = entry.get("bidirectional")
    if not isinstance(both, bool):
        raise InputError(origin, f"{key}.bidirectional must be true (tbps is both directions' total) or false "
                                 f"(one direction's), got {both!r:.80}")
    return LinkCeiling(key, _number(entry.get("tbps"), f"{key}.tbps", origin), both,
                       _text(entry.get("source"), f"{key}.source", origin),
                       _text(entry.get("direction_source"), f"{key}.direction_source", origin))


def _ceiling(key: str, value: float | None, entry: dict[str, Any], origin: str) -> Ceiling:
    mhz = _number(entry.get("clock_mhz"), f"{key}.clock_mhz", origin)
    return Ceiling(key, value, _text(entry.get("source"), f"{key}.source", origin), None if mhz is None else mhz * 1e6,
                   _text(entry.get("clock_source"), f"{key}.clock_source", origin))


def load(path: str | os.PathLike[str] | None = None) -> CeilingsFile:
    """The packaged datasheet ceilings, or a user's file with the same schema."""
    if path is None:
        origin = f"kernelscope/ceilings/{PACKAGED}"
        doc = parse_packaged_yaml(Path(__file__).with_name(PACKAGED).read_text())  # importlib.resources: +25 ms
    elif not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise KernelscopeError(f"ceilings: expected the path of a YAML file, got {path!r:.80}")
    else:
        origin = str(path)
        doc = load_yaml(Path(path), "ceilings file")
    if not isinstance(doc, dict) or not isinstance(doc.get("devices"), dict) or not doc["devices"]:
        raise InputError(origin, "ceilings file needs a non-empty 'devices' map")
    return CeilingsFile(origin, {str(k): _device(str(k), v, origin) for k, v in doc["devices"].items()})
