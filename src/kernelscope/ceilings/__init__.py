"""Speed-of-light ceilings: the packaged datasheet file, a user's override, and the device a launch
ran on. A device is found by its name in a datasheet entry (held against what its report's
attributes derive), else its roofs are derived from those attributes (ceilings/from_report.py),
else, for an export that names no device, by its compute capability and SM count."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import CeilingsError, InputError, KernelscopeError
from ..files import load_yaml, parse_packaged_yaml
from ..model import in_range
from .from_report import DeviceFacts, architectures, checked, derive, fits, same_roofs, spec_of, unidentified
from .model import PRECISION_CEILING, Arch, Ceiling, DeviceCeilings, LinkCeiling, PathRoof

__all__ = ["PRECISION_CEILING", "Arch", "Ceiling", "CeilingsFile", "DeviceCeilings", "DeviceFacts", "LinkCeiling",
           "PathRoof", "architectures", "described", "load"]

PACKAGED = "sol-ceilings.yaml"


@dataclass(frozen=True)
class CeilingsFile:
    """A ceilings file's devices, and the entry each device judged picks (one lookup a device)."""

    origin: str
    devices: Mapping[str, DeviceCeilings]
    _found: dict[tuple[str | None, str | None, DeviceFacts | None], DeviceCeilings] = field(
        default_factory=dict, compare=False, repr=False)  # one lookup a device, not a launch
    packaged: bool = False  # the packaged datasheet: its gaps are filled from the report (from_report.checked)

    def cc_of(self, hw_key: str) -> str | None:
        """The compute capability of the device launches were held to under `hw_key`: its entry's, or
        the report's for roofs derived from it or a device left unidentified (picked here before)."""
        dev = self.devices.get(hw_key) or next((d for d in self._found.values() if d.hw_key == hw_key), None)
        return None if dev is None else dev.cc

    def pick(self, device_name: str | None, hw_key: str | None = None,
             facts: DeviceFacts | None = None) -> DeviceCeilings:
        """`hw_key` wins; then the entry whose `match` names the report's device exactly; then, with
        the report's device facts, roofs derived from them, or for an export that names no device the
        entries its compute capability and SM count fit. Without facts an unknown device is an error."""
        if hw_key is not None and not isinstance(hw_key, str):
            raise CeilingsError(f"--hw: expected a ceilings key (text), got {type(hw_key).__name__}")
        key = (device_name, hw_key, facts)
        if key not in self._found:
            self._found[key] = self._pick(device_name, hw_key, facts)
        return self._found[key]

    def _pick(self, device_name: str | None, hw_key: str | None, facts: DeviceFacts | None) -> DeviceCeilings:
        if hw_key:
            if hw_key not in self.devices:
                known = ", ".join(sorted(self.devices))
                raise CeilingsError(f"{self.origin}: no ceilings for --hw {hw_key} (known: {known})")
            return self.devices[hw_key] if facts is None else checked(self.devices[hw_key], facts, self.packaged)
        wanted = str(device_name or "").strip().lower()
        named = next((d for d in self.devices.values() if wanted and wanted in {m.lower() for m in d.match}), None)
        if named is not None:
            return named if facts is None else checked(named, facts, self.packaged)
        if facts is None:
            raise CeilingsError(
                f"{self.origin}: unknown device {device_name!r}; pass --hw KEY "
                f"(one of {', '.join(sorted(self.devices))}) or --ceilings FILE")
        if facts.name or facts.sm_clock_hz:
            return derive(facts)
        fitting = [d for d in self.devices.values() if fits(d, facts)]
        clocked = [d for d in fitting if d.memory.clock_hz and facts.dram_clock_mhz]  # matched on the clock too
        fitting = clocked or fitting
        if fitting and all(same_roofs(fitting[0], d) for d in fitting[1:]):
            also = [d.hw_key for d in fitting[1:]]
            how = (f"the input names no device: {fitting[0].hw_key} fits its CC {facts.cc}"
                   + (f", {facts.sms} SMs" if facts.sms else "")
                   + (f" and {facts.dram_clock_mhz} MHz DRAM clock" if facts.dram_clock_mhz else "")
                   + (f" (so do {', '.join(also)}, whose roofs agree within 3 %)" if also else ""))
            return replace(checked(fitting[0], facts, self.packaged), notes=(how,), how="datasheet, matched by CC")
        return unidentified(facts, [d.hw_key for d in fitting])


def described(dev: DeviceCeilings, file: str) -> str:
    """How a device's roofs were had, in a few words: the datasheet file, or derived from the report."""
    if dev.how == "derived":
        return "derived from the report's device attributes, not checked against a datasheet"
    if dev.how == "unidentified":
        return dev.notes[0] if dev.notes else "no ceilings"
    said = f"{file}" + (", matched by compute capability" if dev.how == "datasheet, matched by CC" else "")
    off = [n for n in dev.notes if "disagree" in n]
    return said + (f"; {off[0]}" if off else "")


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
    # boost_mhz: the clock a GeForce or workstation whitepaper computes every peak at, unless a peak says
    boost = _number(spec.get("boost_mhz"), f"{key}.boost_mhz", origin)
    at_boost = {} if boost is None else {"clock_mhz": boost, "clock_source": _text(
        spec.get("boost_source"), f"{key}.boost_source", origin, f"{key}.boost_mhz: the entry's boost clock")}
    compute = {}
    for prec, entry in _map(spec["compute"] or {}, f"{key}.compute", origin).items():
        entry = _map(entry, f"{key}.compute.{prec}", origin)
        value = _number(entry.get("tflops"), f"{key}.compute.{prec}.tflops", origin)
        compute[prec] = _ceiling(f"{key}.compute.{prec}", value, entry if "clock_mhz" in entry else
                                 {**entry, **at_boost}, origin)
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
    sms = spec.get("sms")
    if sms is not None and (isinstance(sms, bool) or not isinstance(sms, int) or not 0 < sms < 1 << 20):
        raise InputError(origin, f"{key}.sms must be a whole number of SMs, got {sms!r:.80}")
    return DeviceCeilings(
        hw_key=key,
        name=_text(spec.get("name"), f"{key}.name", origin, key),
        origin=origin,
        match=tuple(_text(m, f"{key}.match", origin) for m in match),
        memory=_ceiling(f"{key}.memory.hbm", tbps, hbm, origin),
        compute=compute,
        tensor_paths=paths,
        links=links,
        cc=None if spec.get("cc") is None else spec_of(spec["cc"]),
        sms=sms,
        notes=_fp32_accumulate(key, spec.get("fp32_accumulate"), origin),
    )


def _fp32_accumulate(key: str, spec: Any, origin: str) -> tuple[str, ...]:
    """A GeForce entry's half-rate figures for tensor math that accumulates in fp32, as a note."""
    if spec is None:
        return ()
    spec = _map(spec, f"{key}.fp32_accumulate", origin)
    figures = [f"{p} {v:g} TFLOP/s" for p in ("fp16", "fp8")
               if (v := _number(spec.get(p), f"{key}.fp32_accumulate.{p}", origin)) is not None]
    if not figures:
        return ()
    return (f"GeForce: tensor math that accumulates in fp32 runs at half the fp16/fp8 roofs ({', '.join(figures)}; "
            f"{_text(spec.get('source'), f'{key}.fp32_accumulate.source', origin)})",)


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
    derive = entry.get("derive", True)
    if not isinstance(derive, bool):
        raise InputError(origin, f"{key}.derive must be true or false, got {derive!r:.80}")
    return Ceiling(key, value, _text(entry.get("source"), f"{key}.source", origin), None if mhz is None else mhz * 1e6,
                   _text(entry.get("clock_source"), f"{key}.clock_source", origin), derive=derive)


def load(path: str | os.PathLike[str] | None = None) -> CeilingsFile:
    """The packaged datasheet ceilings, or a user's file with the same schema."""
    if path is None:
        origin = f"kernelscope/ceilings/{PACKAGED}"
        doc = parse_packaged_yaml(Path(__file__).with_name(PACKAGED))  # importlib.resources: +25 ms
    elif not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise KernelscopeError(f"ceilings: expected the path of a YAML file, got {path!r:.80}")
    else:
        origin = str(path)
        doc = load_yaml(Path(path), "ceilings file")
    if not isinstance(doc, dict) or not isinstance(doc.get("devices"), dict) or not doc["devices"]:
        raise InputError(origin, "ceilings file needs a non-empty 'devices' map")
    return CeilingsFile(origin, {str(k): _device(str(k), v, origin) for k, v in doc["devices"].items()},
                        packaged=path is None)
