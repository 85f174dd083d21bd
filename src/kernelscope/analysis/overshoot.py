"""Figures past 100 % of a ceiling. A kernel cannot beat a true speed of light, so such a figure
says the ceiling is wrong: a measured (achievable) one taken at a lower clock or under load, a
hand-edited figure, or a clock the peak is scaled by. Each launch says it in its notes (JSON and
CSV), and each kernel once on stderr with the most it reached."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath

from ..model import Assessment
from .groups import Key, display_names, identity

OVER = "over 100 % of a ceiling"  # how each such note begins


@dataclass(frozen=True, order=True)
class Over:
    """One figure past 100 % of a ceiling: how far, of which ceiling, at which clock."""

    pct: float  # % of the ceiling
    key: str  # the ceiling's key (with @path for a tensor roof)
    measured: bool  # of the --achievable (measured) ceilings, not the ones the verdict is held to
    at_clock: bool  # the peak scaled to the launch's clock (the limiter), not the figure as the file gives it
    clock_hz: float | None = field(compare=False)  # the clock the launch ran at (SM for compute, DRAM for memory)


def over(a: Assessment) -> list[Over]:
    """Each figure of the launch past 100 % of its ceiling, the most first."""
    rec, ach = a.record, a.achievable or {}
    found = [(a.pct_sol_compute, a.compute_ceiling_key, False, False, rec.sm_clock_hz),
             (a.pct_sol_memory, a.memory_ceiling_key, False, False, rec.dram_clock_hz),
             (ach.get("pct_compute"), ach.get("compute_ceiling_key"), True, False, rec.sm_clock_hz),
             (ach.get("pct_memory"), ach.get("memory_ceiling_key"), True, False, rec.dram_clock_hz)]
    for roof in (a.limiter, a.runner_up):  # a FLOP or HBM roof at the measured clock
        if roof is not None and roof.kind in ("tensor", "simt", "hbm") and roof.clock_hz is not None:
            found.append((roof.pct, roof.key, False, True, roof.clock_hz))
    out = {Over(pct, key, measured, scaled, clock) for pct, key, measured, scaled, clock in found
           if isinstance(pct, float) and pct > 100.0 and isinstance(key, str)}
    return sorted(out, reverse=True)


def sentence(o: Over, ceilings: str, measured: str | None) -> str:
    """What the figure says, naming the ceiling's file (`ceilings`: the one verdicts are held to)."""
    where = measured if o.measured and measured else ceilings
    clock = "its clock was not collected" if o.clock_hz is None else f"it ran at {o.clock_hz / 1e6:,.0f} MHz"
    if o.at_clock:
        return (f"{o.pct:.1f} % of {o.key} scaled to the launch's clock ({where}): the ceiling's figure, its "
                f"clock_mhz or its tensor path ratio is wrong ({clock})")
    kind = "measured ceiling" if o.measured else "ceiling"
    return (f"{o.pct:.1f} % of the {kind} {o.key} ({where}): that ceiling is wrong, or was taken at a lower "
            f"clock than the kernel ran at ({clock})")


def notes(a: Assessment, ceilings: str, measured: str | None) -> tuple[str, ...]:
    """The launch's notes for its figures past 100 %."""
    return tuple(f"{OVER}: {sentence(o, ceilings, measured)}" for o in over(a))


@dataclass
class Overshoots:
    """Per kernel, its launches past 100 % of a ceiling and the most any reached: kept as launches
    stream past (in a worker's chunk too, then merged), so a kernel is warned of once, not a line a
    launch."""

    launches: dict[Key, int] = field(default_factory=dict)  # every launch seen, by kernel
    kernels: dict[Key, tuple[str, int, Over]] = field(default_factory=dict)  # name, launches over, the most

    def add(self, a: Assessment) -> None:
        key = identity(a.record)
        self.launches[key] = self.launches.get(key, 0) + 1
        found = over(a)
        if found:
            name, n, most = self.kernels.get(key, (a.record.name, 0, found[0]))
            self.kernels[key] = (name, n + 1, max(most, found[0]))

    def merge(self, later: Overshoots) -> None:
        for key, n in later.launches.items():
            self.launches[key] = self.launches.get(key, 0) + n
        for key, (name, n, most) in later.kernels.items():
            _, had, top = self.kernels.get(key, (name, 0, most))
            self.kernels[key] = (name, had + n, max(top, most))

    def lines(self, ceilings: str, measured: str | None) -> list[str]:
        """A warning a kernel, in order of first appearance, named as the table names it."""
        shown = display_names((name, full) for (_, full), (name, _, _) in self.kernels.items())
        return [f"{label} in {PurePath(key[0]).name}, {n} of its {self.launches[key]} launch(es) {OVER}, at most "
                f"{sentence(most, ceilings, measured)}"
                for label, (key, (_, n, most)) in zip(shown, self.kernels.items(), strict=True)]
