"""Where a verdict is decided (the verdict room): `assess` returns a launch's finished assessment.

Judge a KernelRecord against its device: place it on the roofline, read each roof at the clocks it
ran at, name the limiter with its evidence, set ncu's own verdict beside ours, and rank the levers
its owner can pull."""

from __future__ import annotations

import math
from dataclasses import replace

from ...ceilings import DeviceCeilings
from ...model import Assessment, Capture, KernelRecord, Limiter, Provenance
from ...report_manifest import Analytic
from ...serving import Serving
from .. import overshoot
from ..categories import categorize
from ..derive import arch, tensor_unseen
from ..levers import levers
from ..ncu_verdicts import compare
from ..provenance import classify
from ..rules import LIMITERS, PRECISION_STEP, RAMP_FLOOR_NS, Facts, TensorWork, not_judged, ramp_floor_ns
from .bound import judge, judge_graph_mode, judge_link, judge_workload
from .placement import place
from .roofs import candidates, link_unmeasured, nvlink_roof, unsettled

GEMM_CATEGORIES = frozenset({"GEMM/cuBLAS", "FP4/FP8 BMM", "MoE"})


def tail_idle_pct(waves: float | None) -> float | None:
    """Share of SM slots left idle by a partial last wave, over all waves launched."""
    if waves is None or waves <= 0:
        return None
    full = max(1, math.ceil(waves - 1e-9))  # a grid of under 1e-9 waves still launched one
    return 100.0 * (full - waves) / full


def precision_step(rec: KernelRecord, dev: DeviceCeilings) -> tuple[str, float] | None:
    """The next cheaper tensor precision the device has a peak for, and that peak over this one's."""
    cls = rec.dominant_precision or ""
    nxt = PRECISION_STEP.get(cls)
    if nxt is None:
        return None
    here, there = dev.for_precision(cls).value, dev.for_precision(nxt).value
    return None if not here or not there else (nxt, there / here)


def path_ratio(rec: KernelRecord, dev: DeviceCeilings) -> float | None:
    """The kernel's tensor path's share of the chip's peak, when a sourced one is under 1."""
    if rec.tensor_path is None:
        return None
    ratio = dev.path_roof(rec.tensor_path).ratio
    return ratio if ratio is not None and ratio < 1 else None


def most_possible(rec: KernelRecord, dev: DeviceCeilings) -> dict[str, float]:
    """For each missing FLOP class with a known most, that most as % of its datasheet peak: from
    flops_at_most, and for a tensor class from the tensor pipe's busy share (a class runs at most at
    that share of its own peak: a pipe busy with HMMA register moves only lowers the FLOP it held)."""
    out = {}
    for cls, flop in (rec.flops_at_most or {}).items():
        peak = dev.for_precision(cls).value
        if peak and rec.duration_ns:
            out[cls] = 100 * flop / (rec.duration_ns * 1e3) / peak
    pipe = rec.tensor_pipe_active_pct
    if pipe is not None:
        for cls in rec.flops_missing:
            if cls.startswith("tensor_") and cls not in out and dev.for_precision(cls).value:
                out[cls] = pipe
    return out


def tensor_work(rec: KernelRecord) -> TensorWork:
    """Whether the kernel ran tensor-core math, and whether the report counted it (rules.TensorWork)."""
    if any(v for c, v in (rec.flops or {}).items() if c.startswith("tensor_")):
        return "counted"
    unseen = tensor_unseen(rec.metrics, rec.tensor_pipe_active_pct, rec.flops_missing, arch(rec.metrics))
    if unseen is None:
        return "none" if rec.flops is not None else "unknown"
    return "uncounted" if unseen.startswith("tensor work not counted") else "unknown"


def verdict_roof(a: Assessment) -> Limiter | None:
    """The roof the verdict stands on: the limiter, or for a latency-bound kernel (no roof reached)
    the nearest roof, so a row says how far it is from any. Provisional: the busiest unit."""
    if a.limiter.pct is not None:
        return a.limiter
    return a.runner_up if a.runner_up is not None and a.runner_up.pct is not None else None


def roof_pct(a: Assessment) -> float | None:
    """The verdict's roof %: what `pct_sol` and every table's "roof %" show. None when provisional:
    a unit's busy share is not a %SoL."""
    roof = verdict_roof(a)
    return None if roof is None or a.provisional else roof.pct


def assess(rec: KernelRecord, dev: DeviceCeilings, serving: Serving | None = None, graph_mode: bool = False, *,
           capture: Capture | None = None, analytic: Analytic | None = None,
           measured: tuple[DeviceCeilings, str] | None = None, ceilings_origin: str | None = None) -> Assessment:
    """The finished assessment of one launch, built here and nowhere else: the bound itself is picked
    by bound.judge (which roofs may be named, in which order) from rules.py's lines. `serving`:
    the configuration the kernel was captured under (a vLLM server's flags), for the levers a user of
    that engine pulls; `graph_mode` (or a `capture` under `--graph-profiling graph`): ncu's durations
    of the launches outside the graphs are not theirs (bound.judge_graph_mode); `capture`: how it was
    captured, kept beside it; `analytic`: a harness op's own work, counted work set against it;
    `measured`: --achievable's ceilings for this device and their file; `ceilings_origin`: the
    ceilings file, named in the notes of a figure past 100 % (overshoot.py)."""
    graph_mode = graph_mode or (capture is not None and capture.graph_profiling == "graph")
    a = _judged(rec, dev, serving, graph_mode, capture)
    if measured is not None:
        m = place(rec, measured[0])
        a = replace(a, achievable={
            "ceilings_file": measured[1], "compute_ceiling_key": m.compute_ceiling_key,
            "pct_compute": m.pct_sol_compute, "memory_ceiling_key": m.memory_ceiling_key,
            "pct_memory": m.pct_sol_memory})
    if analytic is not None:
        a = counted_vs_analytic(a, analytic)
    over = overshoot.notes(a, ceilings_origin, None if measured is None else measured[1]) \
        if ceilings_origin is not None else ()
    return replace(a, record=replace(rec, notes=rec.notes + over)) if over else a


def counted_vs_analytic(a: Assessment, analytic: Analytic) -> Assessment:
    """Counted work over the op's analytic work, e.g. a causal attention computing masked tiles."""
    out: dict[str, float | str] = {"describe": analytic.describe}
    lines = []
    for key, expected, counted in (("flops", analytic.flops, a.record.flops_total),
                                   ("bytes", analytic.bytes, a.record.dram_bytes)):
        if expected and counted is not None:
            ratio = counted / expected
            out[key] = expected
            out[f"counted_over_analytic_{key}"] = ratio
            if abs(ratio - 1) > 0.05:
                lines.append(f"counted {key} are {ratio:.2f}x the analytic {key} of {analytic.describe}"
                             + (" (work beyond the op's need, e.g. masked tiles)" if ratio > 1 else ""))
    return replace(a, analytic=out, limiters=a.limiters + tuple(lines))


def _judged(rec: KernelRecord, dev: DeviceCeilings, serving: Serving | None, graph_mode: bool,
            capture: Capture | None) -> Assessment:
    """The launch's bound, limiter story, ncu's verdict beside it and its levers, from its own figures;
    `capture` kept beside them."""
    p = place(rec, dev)
    stalls = rec.warp_stalls or {}
    top = max(stalls, key=stalls.__getitem__) if stalls else None
    why = unsettled(rec, p)
    roofs = candidates(rec, dev, p, provisional=why is not None)
    category = categorize(rec.name, rec.name_full)[0]
    communication = category == "NCCL"  # a collective is held to its link, not to this GPU's own roofs
    if rec.workload != "kernel":
        j = judge_workload(rec)
    elif graph_mode:
        j = judge_graph_mode(rec)
    elif communication:
        j = judge_link(rec, nvlink_roof(rec, dev), link_unmeasured(rec, dev))
    else:
        j = judge(rec, p, roofs, top, why, most_possible(rec, dev), ramp_floor_ns(rec.dram_bytes, dev.hw_key),
                  measured_here=dev.hw_key in RAMP_FLOOR_NS, from_report=dev.from_report)
    prov = classify(rec) if rec.workload == "kernel" else Provenance(
        "user", f"CUDA {rec.workload}", False, f"a whole CUDA {rec.workload} (ncu --graph-profiling graph): the "
        "program's graph of kernels, each of which has its own owner")
    if serving is not None and serving.recognised:  # say what the engine's levers rest on
        prov = replace(prov, evidence=f"{prov.evidence}; run under vLLM, recognised from {serving.recognised}")
    facts = Facts(
        rec=rec, bound=j.bound, provisional=j.provisional, limiter=j.limiter, runner_up=j.runner_up, prov=prov,
        top_stall=top, top_stall_pct=stalls.get(top) if top else None, tail_idle_pct=tail_idle_pct(rec.waves_per_sm),
        gemm_like=category in GEMM_CATEGORIES, attention_like=category == "attention/FMHA",
        split_k_reduce=category == "GEMM split-K reduce", category=category,
        communication=communication,
        path_ratio=path_ratio(rec, dev), step=precision_step(rec, dev),
        hbm_pct=next((r.pct for r in roofs if r.kind == "hbm"), None), ridge=p.ridge_flops_per_byte,
        serving=serving, hw_key=dev.hw_key, tensor_work=tensor_work(rec), device=dev,
        evidence=j.evidence,
    )
    story = tuple(rule.say(facts) for rule in LIMITERS if rule.when(facts))
    offered = levers(facts) if rec.workload == "kernel" and not graph_mode else ()
    if rec.workload == "kernel" and not communication and not graph_mode:
        story += not_judged(rec, facts.tensor_work, dev.tensor_cores, {lv.rule for lv in offered})
    return Assessment(
        record=rec,
        hw_key=dev.hw_key,
        compute_ceiling_key=p.compute_ceiling_key,
        memory_ceiling_key=p.memory_ceiling_key,
        compute_ceiling_tflops=p.compute_ceiling_tflops,
        memory_ceiling_tbps=p.memory_ceiling_tbps,
        ridge_flops_per_byte=p.ridge_flops_per_byte,
        pct_sol_compute=p.pct_sol_compute,
        pct_sol_memory=p.pct_sol_memory,
        bound=j.bound,
        provisional=j.provisional,
        verdict=j.verdict,
        limiter=j.limiter,
        runner_up=j.runner_up,
        evidence=j.evidence,
        provenance=prov,
        ncu=compare(rec, j.bound, j.limiter, j.runner_up),
        limiters=story + p.notes,
        next_levers=offered,
        capture=capture,
    )
