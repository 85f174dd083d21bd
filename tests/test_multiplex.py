"""capture --multiplex: the roofline list one counter group a launch, none replayed (ncu/multiplex.py),
and the launches merged back on read (ingest/multiplexed.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import kernelscope
import kernelscope.manifest
from kernelscope import catalogue
from kernelscope.analysis.derive import derive
from kernelscope.cli import main
from kernelscope.errors import PlanError
from kernelscope.ingest import multiplexed as multiplexed_ingest
from kernelscope.model import Assessment, RawKernel
from kernelscope.ncu import multiplex
from kernelscope.ncu.argv import capture_argv
from kernelscope.ncu.metric_sets import metric_list
from kernelscope.ncu.plan import POLICIES, Attach, CapturePlan, one_session, validate


def test_the_groups_cover_the_list_once_each_with_the_duration_in_every_one() -> None:
    for addons in ((), ("stalls",)):
        groups = multiplex.groups(addons)  # type: ignore[arg-type]
        assert all(g[0] == catalogue.DURATION for g in groups)
        counters = [m for g in groups for m in g[1:]]
        assert sorted(counters) == sorted(set(metric_list(addons)) - {catalogue.DURATION})  # type: ignore[arg-type]


def test_a_multiplexed_plan_runs_each_group_once_for_every_kernel_with_its_own_list() -> None:
    plan = CapturePlan(kernels=("fma_loop", "copy"), launch_skip=5, multiplex=True, target=("/tmp/toy", "60"))
    units = plan.units()
    groups = multiplex.groups()
    assert [(u.kernels, u.group, u.launch_count) for u in units] == [
        (("fma_loop", "copy"), g, 2) for g in range(1, len(groups) + 1)]  # a launch of each kernel a run
    for u in units:
        argv = capture_argv(plan, u, "/b/r.ncu-rep")
        assert argv[argv.index("--metrics") + 1] == ",".join(groups[u.group - 1])  # type: ignore[operator]
        assert argv.count("--section") == 2 and "--set" not in argv  # Occupancy, LaunchStats: no pass
        assert argv[argv.index("--kernel-name") + 1].startswith("regex:(") and "copy" in argv[argv.index(
            "--kernel-name") + 1]
        assert argv[argv.index("--launch-skip") + 1] == "5" and argv[argv.index("--launch-count") + 1] == "2"


@pytest.mark.parametrize("change,said", [
    ({"metric_set": "full"}, "--set full is ncu's own set"),
    ({"addons": ("sol",)}, "--multiplex with --add sol"),
    ({"kernels": ()}, "--multiplex needs --kernel"),
    ({"replay_mode": "application"}, "--replay-mode application reruns the program"),
])
def test_what_cannot_be_multiplexed_is_refused_with_the_reason(change: dict[str, object], said: str) -> None:
    plan = CapturePlan(**{"kernels": ("fma_loop",), "multiplex": True, **change})  # type: ignore[arg-type]
    with pytest.raises(PlanError, match=said.replace("-", r"\-").replace("(", r"\(")):
        validate(plan, POLICIES["local"])


def test_one_wrapped_session_cannot_be_multiplexed() -> None:
    with pytest.raises(PlanError, match="--one-run: one ncu session for the whole capture, and --multiplex needs one "
                                        "a counter group"):
        one_session(CapturePlan(kernels=("a",), multiplex=True), "--one-run")


def test_the_dry_run_says_the_groups_and_the_cost(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["capture", "--kernel", "fma_loop", "--kernel", "copy", "--multiplex", "--dry-run",
                 "--out", str(tmp_path / "b"), "--ncu", "/usr/bin/true", "--", "/tmp/toy", "60"]) == 0
    out = capsys.readouterr().out.splitlines()
    n = len(multiplex.groups())
    assert out[0] == (f"# multiplexed: {n} counter groups (measured on {multiplex.MEASURED_ON}), one ncu run a group "
                      f"for 2 kernel(s), 1 launch(es) each: {n} runs, {2 * n} profiled launches, each of one pass "
                      "but 14 group(s) of a counter that takes 3-5 passes even alone (the whole list replayed: 12 "
                      "passes on one launch)")
    assert len(out) == 1 + n and all(line.startswith("/usr/bin/true ") for line in out[1:])


@pytest.mark.parametrize("addons", [(), ("stalls",)])
def test_against_a_held_process_no_session_is_of_one_pass(addons: tuple[str, ...]) -> None:
    """After a one-pass attach session a held process cannot be profiled again (ncu 2025.3.1, H200):
    every session carries a counter that takes several passes alone, and together they hold the
    list once, each led by the duration."""
    groups = multiplex.groups(addons)  # type: ignore[arg-type]
    sessions = multiplex.attach_sessions(groups)
    assert len(sessions) == 14  # the lone counters of 3-5 passes
    for s in sessions:
        assert s[0] == catalogue.DURATION and s[1] in multiplex.PASSES_ALONE
        assert catalogue.DURATION not in s[1:] and len(set(s)) == len(s)
    assert sorted(m for s in sessions for m in s[1:]) == sorted(m for g in groups for m in g[1:])
    plan = CapturePlan(kernels=("copy",), multiplex=True, attach=Attach("127.0.0.1", 49152), addons=addons)  # type: ignore[arg-type]
    assert [u.metrics for u in plan.units()] == list(sessions)
    assert multiplex.attach_sessions(((catalogue.DURATION, "a"), (catalogue.DURATION, "b"))) == (
        (catalogue.DURATION, "a", "b"),)  # nothing to carry one-pass groups: the list in one session


def test_the_attach_dry_run_says_every_launch_is_replayed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["capture", "--kernel", "copy", "--multiplex", "--attach", "127.0.0.1:49152", "--dry-run",
                 "--out", str(tmp_path / "b"), "--ncu", "/usr/bin/true"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"# multiplexed: {len(multiplex.groups())} counter groups (measured on {multiplex.MEASURED_ON}), "
                      "in attach sessions for 1 kernel(s), 1 launch(es) each: 14 sessions, 14 profiled launches, "
                      "each session a counter that takes several passes alone with the one-pass groups dealt over "
                      "them: every launch replayed, for fewer passes (the whole list replayed: 12 passes on one "
                      "launch); after a session of one pass a held process cannot be profiled again (ncu 2025.3.1)")
    assert len(out) == 15 and all("--mode attach" in line for line in out[1:])


MUX = Path(__file__).parent / "fixtures" / "multiplex"  # captured on the H200: see its README
TOY = ("copy",)  # bench/workloads/toy.cu's HBM-bound kernel
captured = pytest.mark.skipif(not (MUX / "toy-multiplexed").is_dir(), reason="no multiplexed capture in fixtures")


def _by_kernel(path: Path) -> dict[str, Assessment]:
    items, _ = kernelscope.analyze([path])
    return {a.record.name: a for a in items}


@captured
def test_a_multiplexed_bundle_reads_as_one_launch_a_kernel_from_every_group() -> None:
    """Each toy kernel's groups (one ncu run each, one launch each, none replayed) merged into one
    launch: marked multiplexed, every group's launch named, and each figure's launch in `sources`."""
    runs = kernelscope.manifest.read(MUX / "toy-multiplexed" / "manifest.json").captures
    groups = multiplex.groups()
    assert [r.group for r in runs] == list(range(1, len(groups) + 1))
    for r in runs:  # one pass, but a counter that takes more even alone: as measured
        assert r.passes == (multiplex.PASSES_ALONE.get(groups[r.group - 1][-1], 1),), r  # type: ignore[operator]
    got = _by_kernel(MUX / "toy-multiplexed")
    assert sorted(got) == sorted(TOY)
    for name, a in got.items():
        assert a.capture is not None and a.capture.multiplexed
        head = a.record.notes[0]
        assert head.startswith(f"multiplexed: {len(groups)} launches of this kernel, one counter group each (launch 0 "
                               "of each group's run), 14 replayed (group 4: 5 passes, 8: 3 passes, "), (name, head)
        assert "; duration_ns is their median (131.01-134.37 µs)" in head
        assert a.record.sources["duration_ns"] == "every launch"
        assert a.record.sources["dram_bytes"] == "launch 0 (group 1)"  # dram__bytes_read/write: group 1
        assert a.record.sources["l2_bytes"] == "launch 0 (group 2)"
        # as the replayed capture of the same list: sm_busy_pct and memory_busy_pct are --add sol's
        assert a.record.unmeasured == ("sm_busy_pct", "memory_busy_pct", "warp_stalls", "register_spill_pct")


@captured
def test_multiplexed_figures_match_the_replayed_capture_within_5_percent() -> None:
    """The same kernels captured with every counter on one replayed launch: each figure of the
    multiplexed capture within 5 % (or 1 point of a percent near 0), and the same verdict."""
    replayed, multiplexed = _by_kernel(MUX / "toy-replayed"), _by_kernel(MUX / "toy-multiplexed")
    for name in TOY:
        r, m = replayed[name].record, multiplexed[name].record
        for fig in ("duration_ns", "flops_total", "dram_bytes", "l2_bytes", "achieved_occupancy_pct",
                    "sm_active_pct", "tensor_pipe_active_pct", "issue_active_pct", "dram_throughput_pct"):
            a, b = getattr(r, fig), getattr(m, fig)
            assert a is not None and b is not None, (name, fig)
            assert b == pytest.approx(a, rel=0.05, abs=1.0 if fig.endswith("_pct") else 0), (name, fig, a, b)
        assert replayed[name].bound == multiplexed[name].bound and replayed[name].limiter.key == \
            multiplexed[name].limiter.key, name


@captured
def test_a_launch_that_did_other_work_is_not_merged_and_its_figures_stay_unmeasured() -> None:
    """Another grid, or a duration past DURATION_SPREAD_PCT: that group's counters are left out,
    with the reason, and the figures only they feed are unmeasured (never taken from other work)."""
    from kernelscope.ingest import bundle_manifest, bundle_reports, iter_file

    manifest = bundle_manifest(MUX / "toy-multiplexed")
    assert manifest is not None
    runs = [c for c in manifest.captures if c.report is not None]
    launches = [(run.group or 0, 1, raw) for run, path in zip(runs, bundle_reports(MUX / "toy-multiplexed"),
                                                              strict=True)
                for raw in iter_file(path) if raw.name == "copy"]
    l2 = next(i for i, (_, _, raw) in enumerate(launches) if catalogue.L2_BYTES in raw.metrics)
    group, passes, raw = launches[l2]
    for odd, said in ((replace(raw, grid="(1, 1, 1)"), "grid (1, 1, 1)"),
                      (replace(raw, metrics={**raw.metrics, catalogue.DURATION: 2 * raw.metrics[catalogue.DURATION]}),
                       "(+100.0 %, over the 10 % (at least 1 µs) two launches of one kernel may differ)")):
        merged = multiplexed_ingest.merge([*launches[:l2], (group, passes, odd), *launches[l2 + 1:]])
        assert catalogue.L2_BYTES not in merged.metrics
        rec = derive(merged)
        assert rec.l2_bytes is None and "l2_bytes" in rec.unmeasured
        assert any(n.startswith(f"multiplexed: group {group}'s launch {raw.launch_id} not merged: ") and said in n
                   for n in rec.notes), rec.notes


@captured
def test_one_kernel_on_two_shapes_merges_each_shape_with_its_own_launches() -> None:
    """vLLM runs its fused MoE kernel on two shapes a layer, and each group's session starts at
    another point of a step: a run that met the shapes in the other order still merges each shape's
    launches with each other, and nothing is refused."""
    from kernelscope.ingest import bundle_manifest, bundle_reports, iter_file

    manifest = bundle_manifest(MUX / "toy-multiplexed")
    assert manifest is not None
    reports = bundle_reports(MUX / "toy-multiplexed")
    first = {path: next(raw for raw in iter_file(path) if raw.name == "copy") for path in reports}

    def two_shapes(path: Path) -> Iterator[RawKernel]:
        raw = first[path]
        other = replace(raw, grid="(7, 1, 1)", launch_id=raw.launch_id + 1,
                        metrics={**raw.metrics, catalogue.DURATION: 3 * raw.metrics[catalogue.DURATION]})
        return iter((raw, other) if reports.index(path) % 2 else (other, raw))

    merged = list(multiplexed_ingest.read(manifest, MUX / "toy-multiplexed", reports, two_shapes))
    assert sorted(m.grid or "" for m in merged) == sorted(["(7, 1, 1)", first[reports[0]].grid or ""])
    for m in merged:
        assert len(m.parts) == len(reports) and all(p.refused is None for p in m.parts), (m.grid, m.parts)
    slow = next(m for m in merged if m.grid == "(7, 1, 1)")
    fast = next(m for m in merged if m.grid != "(7, 1, 1)")
    assert min(p.duration_ns or 0 for p in slow.parts) > 2 * max(p.duration_ns or 0 for p in fast.parts)


@captured
def test_a_multiplexed_bundle_whose_reports_are_not_its_runs_is_one_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Hand-edited: a report the manifest lists that no capture run produced. Its launches cannot be
    put in their groups, so the bundle is refused with the file and the reason, not merged wrongly."""
    import json
    import shutil

    bundle = tmp_path / "b"
    shutil.copytree(MUX / "toy-multiplexed", bundle)
    doc = json.loads((bundle / "manifest.json").read_text())
    doc["captures"][3]["report"] = "ncu-profiles/elsewhere.ncu-rep"
    (bundle / "manifest.json").write_text(json.dumps(doc))
    assert main(["analyze", str(bundle)]) == 2
    err = capsys.readouterr().err
    assert err == (f"kernelscope: error: {bundle / 'manifest.json'}: a multiplexed bundle whose reports are not its "
                   "capture runs' (each report names the counter group it holds): it cannot be merged\n")


@captured
def test_a_group_whose_run_failed_leaves_its_figures_unmeasured_and_says_so(tmp_path: Path) -> None:
    import json
    import shutil

    bundle = tmp_path / "b"
    shutil.copytree(MUX / "toy-multiplexed", bundle)
    doc = json.loads((bundle / "manifest.json").read_text())
    run = doc["captures"][3]  # group 4: lts__throughput alone
    assert run["group"] == 4 and multiplex.groups()[3][1] == catalogue.L2_PCT
    doc["reports"].remove(run["report"])
    run.update(report=None, error="ncu exited 9")
    (bundle / "manifest.json").write_text(json.dumps(doc))
    (a,) = kernelscope.analyze([bundle])[0]
    assert a.record.l2_throughput_pct is None and "l2_throughput_pct" in a.record.unmeasured
    assert a.record.dram_bytes is not None and a.bound == "memory"
    assert "multiplexed: counter group(s) 4 failed to capture (the bundle's manifest says why): the figures they " \
           "feed are unmeasured" in a.record.notes


def test_the_dry_run_with_stalls_says_what_was_not_measured(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The stall add-on's lone counters were never measured alone, and its whole list takes 18 passes."""
    assert main(["capture", "--kernel", "copy", "--multiplex", "--add", "stalls", "--dry-run", "--out",
                 str(tmp_path / "b"), "--ncu", "/usr/bin/true", "--", "/tmp/toy", "60"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(
        "14 group(s) of a counter that takes 3-5 passes even alone, 4 of a counter whose passes alone are not "
        "measured (the whole list replayed: 18 passes on one launch)")


def _figures(a: Assessment) -> dict[str, float]:
    """A launch's scalar figures, by name."""
    return {f: v for f, v in vars(a.record).items() if isinstance(v, float)}


def test_attach_sessions_against_a_serving_loop_give_the_replayed_figures(attach_dir: Path) -> None:
    """bench/multiplex_cost.py on the H200: the serving loop's GEMM captured through attach sessions,
    replayed (12 passes) and multiplexed (14 sessions of 3-5 passes, none of one): every figure within
    5 % (a percent within 1 point), the same bound and limiter, and the process took a replayed session
    again afterwards."""
    (r,), _ = kernelscope.analyze([attach_dir / "loop-replayed"])
    (m,), _ = kernelscope.analyze([attach_dir / "loop-multiplexed"])
    assert m.capture is not None and m.capture.multiplexed
    runs = kernelscope.manifest.read(attach_dir / "loop-multiplexed" / "manifest.json").captures
    assert sorted(p for run in runs for p in run.passes) == [3] * 11 + [4, 4, 5]
    replayed, multiplexed = _figures(r), _figures(m)
    assert len(replayed) >= 20 and set(replayed) == set(multiplexed)
    for fig, a in replayed.items():
        near = 1.0 if fig.endswith("_pct") else 0
        assert multiplexed[fig] == pytest.approx(a, rel=0.05, abs=near), (fig, a, multiplexed[fig])
    assert (r.bound, r.limiter.key) == (m.bound, m.limiter.key) == ("memory", "h200-sxm.memory.hbm")


def test_vllm_held_by_launch_gives_one_pass_figures_then_refuses_every_later_session(attach_dir: Path) -> None:
    """vLLM (a MoE of Qwen3-30B-A3B layer shapes) held by `kernelscope launch`, its FA3, cuBLAS, fused
    MoE and RMS norm kernels captured replayed, then multiplexed before sessions carried a counter of
    several passes: the first group's launches (one pass: DRAM bytes and throughput, duration) match
    the replayed ones, and every later group failed, each figure it feeds unmeasured and said so (a
    verdict short of FLOP is provisional where it needed them)."""
    replayed, _ = kernelscope.analyze([attach_dir / "moe-replayed"])
    multiplexed, _ = kernelscope.analyze([attach_dir / "moe-multiplexed"])
    key = {(a.record.name_full, a.record.grid, a.record.block): a for a in replayed}
    assert len(multiplexed) == 8 and {a.record.name for a in multiplexed} >= {
        "fused_moe_kernel", "FlashAttnFwdSm90", "triton_red_fused_fused_add_rms_norm_moe_forward_0"}
    for m in multiplexed:
        r = key[(m.record.name_full, m.record.grid, m.record.block)]  # each shape of a kernel with its own
        assert m.record.duration_ns == pytest.approx(r.record.duration_ns, rel=0.05, abs=250), m.record.name
        if m.record.name != "FlashAttnFwdSm90":  # its KV-cache reads grow a token a decode step between the two
            for fig in ("dram_bytes", "achieved_dram_tbps", "dram_throughput_pct"):
                assert getattr(m.record, fig) == pytest.approx(getattr(r.record, fig), rel=0.05), (m.record.name, fig)
        assert m.bound == r.bound and not r.provisional  # the same bound: HBM-bound MoE, latency for the rest
        assert m.provisional == (m.bound != "memory")  # a latency verdict that FLOP might have overturned
        assert m.record.flops_total is None and "flops" in m.record.unmeasured
        assert any(n.startswith("multiplexed: counter group(s) 2, 3, 4,") and "failed to capture" in n
                   for n in m.record.notes)


def test_vllm_through_attach_sessions_of_several_passes_gives_the_replayed_verdicts(attach_dir: Path) -> None:
    """vLLM's MoE server held by `kernelscope launch` (H200, 2026-12-03), its FA3, nvjet, fused MoE and
    RMS norm kernels captured replayed (12 passes) and then through 14 attach sessions of 3-5 passes:
    every shape of a kernel both captured has the same bound; the work counted agrees within 5 % (but
    FA3's DRAM bytes: its KV-cache reads grow a token a decode step, which neither grid nor duration
    shows) and each duration within 5 % or 0.3 µs (3 µs RMS norms jitter 3.20-3.94 µs launch to
    launch); a figure the multiplexed capture lacks is one whose group's session met no launch of that
    shape (8 launches a session cover part of a decode step), said in its notes, never a number."""
    replayed, _ = kernelscope.analyze([attach_dir / "moe-sessions-replayed"])
    multiplexed, _ = kernelscope.analyze([attach_dir / "moe-sessions-multiplexed"])
    runs = kernelscope.manifest.read(attach_dir / "moe-sessions-multiplexed" / "manifest.json").captures
    assert len(runs) == 14 and all(r.report for r in runs) and sorted({p for r in runs for p in r.passes}) == [3, 4, 5]
    shapes = {(a.record.name_full, a.record.grid, a.record.block): a for a in multiplexed}
    assert len(replayed) == 8 and len(multiplexed) == 10
    for r in replayed:
        m = shapes[(r.record.name_full, r.record.grid, r.record.block)]
        name = f"{r.record.name} {r.record.grid}"
        assert m.bound == r.bound, name
        assert m.record.duration_ns == pytest.approx(r.record.duration_ns, rel=0.05, abs=300), name
        for fig in ("flops_total", "l2_bytes", *(() if r.record.name == "FlashAttnFwdSm90" else ("dram_bytes",))):
            a, b = getattr(r.record, fig), getattr(m.record, fig)
            if b is None:
                assert fig in m.record.unmeasured and any("collected no launch of this kernel on this grid" in n
                                                          for n in m.record.notes), (name, fig)
            else:
                assert b == pytest.approx(a, rel=0.05), (name, fig, a, b)
    moe = [a for a in multiplexed if a.record.name == "fused_moe_kernel"]
    assert sorted((a.bound, a.limiter.key) for a in moe)[-1] == ("memory", "h200-sxm.memory.hbm")
