"""Roofs for any GPU ncu supports, from what its report records: the device's attributes (SM count,
maximum SM clock, memory clock and bus width), the peaks ncu's roofline sections store
(`*.peak_sustained`, per cycle over the whole device) and a table of per-SM-per-clock rates by
architecture (architectures.yaml). A datasheet entry that names the device is checked against the
same figures, so every roof says where it came from and where two sources disagree."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import catalogue as C
from ..files import parse_packaged_yaml
from .model import Arch, Ceiling, DeviceCeilings, PathRoof

ARCHITECTURES = "architectures.yaml"
AGREE = 0.03  # two sources of one roof within 3 % agree (H200: HBM 0.3 %, bf16 per clock 0.04 %)
UNIT = {"int8": "TOP/s"}
# the report's own SIMT peaks: FLOP per thread-instruction (an HFMA2 is two fp16 FMAs: 4 FLOP)
OWN_PEAKS = {"fp32": ("ffma", 2), "fp64": ("dfma", 2), "fp16_simt": ("hfma", 4)}
# roofs GeForce parts run at half rate (they accumulate in fp32; architectures.yaml:
# geforce_fp32_accumulate); fp16 and fp8 run so only when the kernel accumulates in fp32, which a
# report does not say: derive() notes it, and keeps the full roof
GEFORCE_HALF = ("tf32", "bf16")


@functools.cache
def architectures() -> Mapping[str, Arch]:
    """The packaged per-architecture table, by compute capability ("9.0")."""
    doc = parse_packaged_yaml(Path(__file__).with_name(ARCHITECTURES))
    out = {}
    for cc, spec in doc["architectures"].items():
        rates = {k: None if v is None else float(v) for k, v in spec["per_sm_clock"].items()}
        out[str(cc)] = Arch(str(cc), spec["name"], str(spec["chip"]), rates, tuple(spec["tensor_paths"]),
                            {str(k): float(v) for k, v in (spec.get("path_ratio") or {}).items()},
                            bool(spec.get("geforce_fp32_accumulate")), tuple(spec.get("no_tensor_cores") or ()),
                            " | ".join(spec["sources"]))
    return out


@dataclass(frozen=True)
class DeviceFacts:
    """What a launch's report records of its device (None: not recorded; a CSV details export
    holds only the compute capability, the SM count and the clocks the launch ran at)."""

    name: str | None
    cc: str | None
    sms: int | None
    sm_clock_hz: float | None  # the device's maximum SM clock
    memory_clock_hz: float | None  # its maximum memory clock
    bus_bits: int | None
    dram_clock_mhz: int | None  # the DRAM clock the launch ran at, to 10 MHz: tells HBM parts of one CC apart
    peaks: tuple[tuple[str, float], ...] = ()  # the report's own peaks: ffma/dfma/hfma/dram, per cycle

    @classmethod
    def of(cls, name: str | None, metrics: Mapping[str, float]) -> DeviceFacts | None:
        """The facts of a launch's counters; None when they hold none (a --metrics CSV of a few counters)."""
        def whole(counter: str) -> int | None:
            v = metrics.get(counter)
            return None if v is None or v <= 0 else int(v)

        major, minor = metrics.get(C.COMPUTE_CAPABILITY), metrics.get(C.CC_MINOR)
        cc = None if major is None or minor is None else f"{int(major)}.{int(minor)}"
        khz = metrics.get(C.MAX_SM_CLOCK_KHZ)
        mem_khz = metrics.get(C.MEMORY_CLOCK_KHZ) or metrics.get(C.MAX_MEM_CLOCK_KHZ)
        dram = metrics.get(C.DRAM_CLOCK)
        peaks = tuple((op, metrics[n]) for op, n in C.PEAK_OPS.items() if metrics.get(n))
        if metrics.get(C.PEAK_DRAM_BYTES):
            peaks += (("dram", metrics[C.PEAK_DRAM_BYTES]),)
        recorded = (cc, whole(C.SM_COUNT), khz * 1e3 if khz else None, mem_khz * 1e3 if mem_khz else None,
                    whole(C.BUS_WIDTH), None if not dram else int(round(dram / 1e7)) * 10)
        return cls(name or None, *recorded, peaks) if peaks or any(x is not None for x in recorded) else None

    @property
    def memory_kind(self) -> str:
        """HBM stacks are 1,024 bits wide each; a GDDR bus is at most 512 (RTX 5090)."""
        return "GDDR" if self.bus_bits is not None and self.bus_bits < 1024 else "HBM"

    @property
    def arch(self) -> Arch | None:
        return None if self.cc is None else architectures().get(self.cc)

    @property
    def geforce(self) -> bool:
        return "geforce" in (self.name or "").lower()

    @property
    def tensorless(self) -> bool:
        """A part built without tensor cores (a GeForce GTX 16 is Turing, CC 7.5, with none)."""
        arch, name = self.arch, (self.name or "").lower()
        return arch is not None and any(words.lower() in name for words in arch.no_tensor_cores)


def slug(name: str) -> str:
    """A ceilings key from a device name: 'NVIDIA GeForce RTX 5060 Ti' -> 'geforce-rtx-5060-ti'."""
    text = re.sub(r"[^a-z0-9]+", "-", name.lower().removeprefix("nvidia ")).strip("-")
    return text[:60] or "device"


def _mhz(hz: float) -> str:
    return f"{hz / 1e6:.0f} MHz"


MEMORY_CLOCK_SAID = f"{C.MEMORY_CLOCK_KHZ}: the device's memory clock"


def _memory(f: DeviceFacts, key: str) -> Ceiling:
    """Device memory bandwidth: the report's own peak (bytes per DRAM cycle x the memory clock), else
    2 x memory clock x bus width / 8 (the CUDA programming guide's peak from the same attributes)."""
    own = dict(f.peaks).get("dram")
    clock = f.memory_clock_hz
    if own and clock:
        return Ceiling(key, own * clock / 1e12,
                       f"the report's own peak: dram__bytes.sum.peak_sustained {own:g} B/cycle x the {_mhz(clock)} "
                       f"memory clock ({C.MEMORY_CLOCK_KHZ})", clock, MEMORY_CLOCK_SAID, from_report=True)
    if clock and f.bus_bits:
        return Ceiling(key, 2 * clock * f.bus_bits / 8 / 1e12,
                       f"derived: 2 x {_mhz(clock)} x {f.bus_bits} bits / 8 ({C.MEMORY_CLOCK_KHZ}, {C.BUS_WIDTH})",
                       clock, MEMORY_CLOCK_SAID, from_report=True)
    return Ceiling(key, None, "not derivable: the report records no memory clock and bus width")


def _compute(f: DeviceFacts, prec: str, key: str) -> Ceiling:
    """A precision's peak: the report's own SIMT peak where ncu stored one, else SMs x the
    architecture's rate per SM per clock x the device's maximum clock; tensor roofs halved where a
    GeForce part accumulates in fp32."""
    arch, clock, sms = f.arch, f.sm_clock_hz, f.sms
    rate = None if arch is None else arch.per_sm_clock.get(prec)
    if prec in OWN_PEAKS and clock:
        op, flop = OWN_PEAKS[prec]
        own = dict(f.peaks).get(op)
        if own:
            note = ""
            off = own * flop / (rate * sms) - 1 if rate and sms else 0.0
            if abs(off) > AGREE:
                note = f"; {ARCHITECTURES}'s {rate:g} a SM x {sms} SMs differs ({off:+.0%})"
            return Ceiling(key, own * flop * clock / 1e12,
                           f"the report's own peak: {own:g} {op} a cycle x {flop} FLOP x {_mhz(clock)}{note}",
                           clock, f"{C.MAX_SM_CLOCK_KHZ}: the device's maximum SM clock", from_report=True)
    if arch is None:
        return Ceiling(key, None, f"no per-SM rates for compute capability {f.cc or 'unknown'} in {ARCHITECTURES}")
    tensor = prec not in OWN_PEAKS
    if tensor and prec != "fp64_tensor" and f.tensorless:
        return Ceiling(key, None, f"{f.name} has no tensor cores ({ARCHITECTURES}: {arch.chip} parts "
                                  f"{', '.join(arch.no_tensor_cores)})")
    if rate is None:
        return Ceiling(key, None, f"{arch.name} ({arch.chip}, sm_{f.cc and f.cc.replace('.', '')}) has no {prec} unit, "
                                  f"or its rate is not sourced ({ARCHITECTURES})")
    if not sms or not clock:
        return Ceiling(key, None, "not derivable: the report records no SM count or maximum SM clock")
    half = f.geforce and arch.geforce_fp32_accumulate and prec in GEFORCE_HALF
    per_sm = rate / 2 if half else rate
    halved = "; halved: a GeForce part accumulates it in fp32" if half else ""
    how = (f"derived: {sms} SMs x {per_sm:g} {'OP' if prec == 'int8' else 'FLOP'} a SM a clock "
           f"({arch.name} {arch.chip}, {ARCHITECTURES}{halved}) x {_mhz(clock)}")
    return Ceiling(key, sms * per_sm * clock / 1e12, how, clock, f"{C.MAX_SM_CLOCK_KHZ}: the device's maximum SM clock",
                   from_report=True)


PRECISIONS = ("fp64", "fp64_tensor", "fp32", "fp16_simt", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
DERIVED = "derived from the report's device attributes"


def derive(f: DeviceFacts) -> DeviceCeilings:
    """Every roof this report's attributes give (a roof they cannot give is None, with the reason)."""
    arch = f.arch
    key = slug(f.name) if f.name else f"cc{f.cc or 'unknown'}-{f.sms or 'unknown'}sm"
    notes = []
    if arch is not None and f.geforce and arch.geforce_fp32_accumulate:
        notes.append("GeForce: fp16 and fp8 tensor math that accumulates in fp32 runs at half the fp16/fp8 roofs "
                     "(NVIDIA's GeForce whitepaper appendices; tf32 and bf16 roofs are already halved)")
    if arch is None:
        notes.append(f"compute capability {f.cc or 'not recorded'} is not in {ARCHITECTURES}: tensor and SIMT roofs "
                     "are only those the report's own peaks give")
    paths = {} if arch is None else {p: PathRoof(p, r, arch.source) for p, r in arch.path_ratio.items()}
    return DeviceCeilings(
        hw_key=key, name=f.name or f"CC {f.cc} device", origin=f"{DERIVED} ({ARCHITECTURES})", match=(),
        memory=_memory(f, f"{key}.memory.hbm"),
        compute={p: _compute(f, p, f"{key}.compute.{p}") for p in PRECISIONS},
        tensor_paths=paths, cc=f.cc, arch=arch, notes=tuple(notes), how="derived", memory_kind=f.memory_kind)


def _per_clock(c: Ceiling) -> float | None:
    return None if c.value is None or not c.clock_hz else c.value / c.clock_hz


def _checked(sheet: Ceiling, derived: Ceiling, unit: str, top_hz: float | None, complete: bool) -> Ceiling:
    """A datasheet roof with the derived one beside it; `complete` (the packaged datasheet): where
    it has none, the derived figure; where its clock is not sourced, the clock the derived rate needs
    to give it (when the device reaches that clock), so it too is scaled to the clock a kernel ran
    at. A user's file (measured ceilings) is only checked: its figures are not peaks at a clock."""
    rate = _per_clock(derived)
    if derived.value is None or rate is None or (sheet.value is None and not (complete and sheet.derive)):
        return sheet
    if sheet.value is None:
        return replace(derived, source=f"{derived.source} (the datasheet entry gives none: {sheet.source})")
    if sheet.clock_hz:
        at = rate * sheet.clock_hz
        off = sheet.value / at - 1
        said = "agrees" if abs(off) <= AGREE else "DISAGREES"
        return replace(sheet, check=f"{said}: {derived.source} = {at:.4g} {unit} at the datasheet's "
                                    f"{_mhz(sheet.clock_hz)} ({off:+.1%})", agrees=abs(off) <= AGREE)
    implied = sheet.value / rate
    if not complete:
        at = derived.value
        return replace(sheet, check=f"derived {at:.4g} {unit} at the device's maximum clock ({derived.source}); this "
                                    f"file's {sheet.value:g} is {sheet.value / at:.0%} of it")
    if top_hz and implied <= top_hz * (1 + AGREE):
        return replace(sheet, clock_hz=implied, clock_source=(
            f"implied: {sheet.value:g} {unit} over the derived {rate * 1e6:.4g} {unit} a MHz = {_mhz(implied)}, "
            f"within the device's {_mhz(top_hz)} ({derived.source})"),
            check=f"agrees: the derived rate gives it at {_mhz(implied)}", agrees=True)
    return replace(sheet, check=(f"DISAGREES: {derived.source} = {derived.value:.4g} {unit}; the datasheet's "
                                 f"{sheet.value:g} would need {_mhz(implied)}, past the device's maximum"),
                   agrees=False)


def checked(entry: DeviceCeilings, f: DeviceFacts, complete: bool = True) -> DeviceCeilings:
    """A datasheet entry held against what the report's attributes derive (derive): each roof keeps
    its datasheet figure and says whether the derived one agrees (`complete`: see _checked)."""
    d = derive(f)
    compute = {p: _checked(c, d.compute[p], UNIT.get(p, "TFLOP/s"), f.sm_clock_hz, complete) if p in d.compute
               else c for p, c in entry.compute.items()}
    memory = _checked(entry.memory, d.memory, "TB/s", f.memory_clock_hz, complete)
    off = [c.key for c in (memory, *compute.values()) if c.agrees is False]
    said = entry.notes + tuple(n for n in d.notes if not (n.startswith("GeForce") and any(
        e.startswith("GeForce") for e in entry.notes)))
    notes = said + ((f"the datasheet and the report's attributes disagree on {', '.join(off)} by more than "
                        f"{AGREE:.0%}: `kernelscope ceilings list --for REPORT` shows both",) if off else ())
    return replace(entry, memory=memory, compute=compute, arch=d.arch, notes=notes if complete else said,
                   memory_kind=f.memory_kind,
                   tensor_paths=entry.tensor_paths or d.tensor_paths,
                   how="datasheet, checked against the report" if complete else entry.how)


def fits(entry: DeviceCeilings, f: DeviceFacts) -> bool:
    """Whether a datasheet entry can be the device of an export that names none: same compute
    capability, SM count and (where both are known) memory clock within 3 %."""
    if entry.cc is None or entry.cc != f.cc or (f.sms and entry.sms and entry.sms != f.sms):
        return False
    mem = entry.memory.clock_hz
    return not (mem and f.dram_clock_mhz and abs(f.dram_clock_mhz * 1e6 / mem - 1) > AGREE)


def same_roofs(a: DeviceCeilings, b: DeviceCeilings) -> bool:
    """Two entries whose memory and dense bf16/fp16 roofs agree within 3 %: either may stand for the other."""
    def near(x: float | None, y: float | None) -> bool:
        return x is None and y is None or (x is not None and y is not None and abs(x / y - 1) <= AGREE)

    return near(a.memory.value, b.memory.value) and all(near(a.compute[p].value if p in a.compute else None,
                                                             b.compute[p].value if p in b.compute else None)
                                                        for p in ("bf16", "fp16", "fp32"))


def unidentified(f: DeviceFacts, fitting: list[str]) -> DeviceCeilings:
    """No roof at all, and why: the export names no device and its CC fits several with other roofs."""
    key = f"cc{f.cc}-unidentified"
    why = (f"the input names no device; CC {f.cc}" + (f", {f.sms} SMs" if f.sms else "") +
           (f" fits --hw {', '.join(fitting)}" if fitting else " fits no datasheet entry") + ": pass --hw for roofs")
    return DeviceCeilings(hw_key=key, name=f"unidentified CC {f.cc} device", origin="no ceilings",
                          match=(), memory=Ceiling(f"{key}.memory.hbm", None, why),
                          compute={p: Ceiling(f"{key}.compute.{p}", None, why) for p in PRECISIONS},
                          cc=f.cc, arch=f.arch, notes=(why,), how="unidentified")


def spec_of(value: Any) -> str:
    """A compute capability as a datasheet entry writes it ("9.0", or 9.0 read as a number)."""
    return f"{float(value):.1f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
