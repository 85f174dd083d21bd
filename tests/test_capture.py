"""Capture planning on CI (no GPU): argv, safety rules, preflight lint, flag checks, diagnosis
against real saved ncu output, and what `analyze` makes of a harness bundle."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

import kernelscope
from kernelscope.app import dry_run_lines, prepare
from kernelscope.capture.diagnose import available_kernels, diagnose
from kernelscope.cli import main
from kernelscope.errors import PlanError
from kernelscope.ncu.argv import capture_argv, launch_argv
from kernelscope.ncu.metric_sets import ROOFLINE, metric_list
from kernelscope.ncu.plan import Attach, CapturePlan, CaptureUnit, combined_filter, one_session
from kernelscope.ncu.version import parse_version, unsupported_flags

OUT = "ncu-output"
APP = ("python3", "serve_step.py")


def read(fx: Path, name: str) -> str:
    return (fx / OUT / name).read_text()


def test_local_capture_argv_is_scoped_and_clock_free() -> None:
    plan = CapturePlan(kernels=("regex:nvjet",), launch_skip=3, target=APP)
    argv = capture_argv(plan, plan.units()[0], "b/ncu-profiles/01-nvjet.ncu-rep")
    assert argv[:3] == ["ncu", "--clock-control", "none"]
    assert argv[argv.index("--kernel-name") + 1] == "regex:nvjet"  # data, never shell-quoted
    assert argv[argv.index("-o") + 1] == "b/ncu-profiles/01-nvjet"
    assert argv[argv.index("--launch-skip") + 1] == "3" and argv[-2:] == list(APP)
    assert argv[argv.index("--metrics") + 1] == ",".join(ROOFLINE)
    assert ["--section", "Occupancy", "--section", "LaunchStats"] == argv[argv.index("--section"):][:4]


def test_attach_argv_uses_mode_attach_and_no_target_processes(fx: Path) -> None:
    plan = CapturePlan(kernels=("fmha",), attach=Attach("127.0.0.1", 49152), metric_set="basic")
    argv = capture_argv(plan, CaptureUnit(1, "fmha", 1, ("fmha",)), "x.ncu-rep")
    assert argv[-6:] == ["--mode", "attach", "--hostname", "127.0.0.1", "--port", "49152"]
    assert "--target-processes" not in argv  # ncu: "Invalid option --target-processes ... --mode attach"
    assert "--attach" not in argv and ["--set", "basic"] == argv[argv.index("--set"):argv.index("--set") + 2]
    assert "Invalid option --target-processes" in read(fx, "attach-invalid-target-processes.txt")


def test_launch_argv() -> None:
    assert launch_argv(["python3", "-m", "srv"], 49200) == [
        "ncu", "--mode", "launch", "--target-processes", "all", "--forward-signals", "--port", "49200",
        "python3", "-m", "srv"]


def test_flags_checked_against_this_ncus_help(fx: Path) -> None:
    help_text = read(fx, "ncu-2025.3.1-help.txt")
    plan = CapturePlan(kernels=("k",), attach=Attach("h", 1))
    assert unsupported_flags(capture_argv(plan, plan.units()[0], "r.ncu-rep"), help_text) == []
    assert unsupported_flags(["ncu", "--attach", "1234"], help_text) == ["--attach"]  # gone in 2025.3+
    banner = "NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.1.0 (build 1)"
    assert parse_version(banner) == "2025.3.1.0"


def test_metric_sets() -> None:
    assert len(set(ROOFLINE)) == len(ROOFLINE)
    assert "sm__throughput.avg.pct_of_peak_sustained_elapsed" not in ROOFLINE  # +8 passes on its own
    stalls = metric_list(("stalls",))
    assert stalls[: len(ROOFLINE)] == ROOFLINE and len(stalls) == len(ROOFLINE) + 18  # "selected" is no stall


@pytest.mark.parametrize(
    ("plan", "kw", "message"),
    [
        (CapturePlan(kernels=(), target=APP), {}, "no --kernel given"),
        (CapturePlan(kernels=("k",), launch_count=6, target=APP), {}, "--launch-count 6 > 5"),
        (CapturePlan(kernels=("k",)), {}, "give either a program"),
        (CapturePlan(kernels=("--kubeconfig=x",), target=APP), {}, "no leading '-'"),
        (CapturePlan(kernels=("regex:(",), target=APP), {}, "bad regular expression"),
        (CapturePlan(kernels=("k",), metric_set="basic", addons=("stalls",), target=APP), {}, "extends the roofline"),
    ],
)
def test_safety_rules_refuse(plan: CapturePlan, kw: dict, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        prepare(plan, allow_unscoped=False, force=False)


def test_safety_overrides() -> None:
    assert prepare(CapturePlan(kernels=(), target=APP), allow_unscoped=True, force=False)[0].kernels == ()
    assert prepare(CapturePlan(kernels=("k",), launch_count=8, target=APP), False, force=True)[0].launch_count == 8


def test_env_wrapper_is_rewritten_onto_ncu(fx: Path) -> None:
    plan = CapturePlan(kernels=("k",), target=("env", "FOO=1", "HF_TOKEN=secret", "python3", "x.py"))
    fixed, findings = prepare(plan, False, False)
    assert fixed.target == ("python3", "x.py") and dict(fixed.env) == {"FOO": "1", "HF_TOKEN": "secret"}
    assert findings[0].code == "env-wrapper" and findings[0].level == "fixed"
    line = dry_run_lines(fixed, Path("out"), "ncu")[0]
    assert line.startswith("env FOO=1 'HF_TOKEN=<redacted>' ncu ") and line.endswith(" python3 x.py")
    assert "secret" not in line


def test_shell_wrapper_and_profile_from_start_flagged() -> None:
    _, findings = prepare(CapturePlan(kernels=("k",), target=("bash", "run.sh"),
                                      target_processes="application-only"), False, False)
    assert [f.code for f in findings] == ["shell-wrapper", "kernel-base"]
    kept, findings = prepare(CapturePlan(kernels=("k",), target=("vllm", "serve", "m"), profile_from_start=False),
                             False, False)
    assert not kept.profile_from_start and [(f.code, f.level) for f in findings][-1] == ("profile-from-start",
                                                                                          "warning")


def test_attach_of_several_kernels_is_one_session_each() -> None:
    """Sessions in a row work when each ends after its report (measured: docs/hopper-measurements.md,
    "Attach sessions"), so each kernel keeps its own launch count; a wrapped pod still runs one filter for all."""
    plan = CapturePlan(kernels=("fmhaSm90", "regex:nvjet"), launch_count=2, attach=Attach("127.0.0.1", 49152))
    prepared, _ = prepare(plan, False, False)
    assert [(u.label, u.launch_count) for u in prepared.units()] == [("fmhaSm90", 2), ("regex:nvjet", 2)]
    # an exact name is found in ncu's demangled names: as a function, a template or a wrapper's kernel
    assert prepared.units()[0].kernel_filter == "regex:(^|[ :<])fmhaSm90([<(>,]|$)"
    (unit,) = one_session(plan, "wrap").units()
    assert unit.kernel_filter == "regex:((^|[ :<])fmhaSm90([<(>,]|$))|(nvjet)" and unit.launch_count == 4
    assert unit.kernels == ("fmhaSm90", "regex:nvjet")
    assert combined_filter(("regex:a",)) == "regex:a"


def test_dry_run_prints_argv_and_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "b"
    assert main(["capture", "--kernel", "regex:nvjet", "--kernel", "fmha", "--set", "basic", "--out", str(out),
                 "--dry-run", "--ncu", "/opt/ncu", "--", "python3", "serve.py"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("/opt/ncu --clock-control none") for line in lines)
    assert "--kernel-name-base demangled --kernel-name regex:nvjet" in lines[0]
    assert "--kernel-name 'regex:(^|[ :<])fmha([<(>,]|$)'" in lines[1]
    assert not out.exists()


def test_op_options_are_the_harness_options(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`op` takes every harness option (one definition) and forwards them; --warmup is both the harness's
    warm-up calls and the capture's --launch-skip, so the captured launch is the first after warm-up."""
    assert main(["op", "gemm", "--m", "256", "--dtype", "fp8", "--iters", "5", "--warmup", "7", "--out",
                 str(tmp_path / "o"), "--dry-run", "--ncu", "ncu"]) == 0
    out, err = capsys.readouterr()
    (line,) = out.strip().splitlines()
    assert "--launch-skip 7 --launch-count 1" in line
    assert "kernelscope.capture.harness gemm --dtype fp8 --m 256 --n 4096 --k 4096" in line
    assert "--warmup 7 --iters 5" in line and "analytic-out" not in line
    assert "analytic work of fp8 GEMM M=256 N=4096 K=4096: 8589934592.0 FLOP" in err
    assert not (tmp_path / "o").exists() and not list(Path("/tmp").glob("kernelscope-op-*"))


def test_op_forwards_a_switch_and_a_repeated_option(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--causal (a switch) goes to the harness bare, each --arg (repeated) on its own, in order."""
    assert main(["op", "attention", "--causal", "--seq", "1024", "--out", str(tmp_path / "a"), "--dry-run"]) == 0
    assert "harness attention --dtype bf16 --batch 4 --heads 32 --seq 1024 --head-dim 128 --causal --warmup 3" \
        in capsys.readouterr().out
    assert main(["op", "callable", "--callable", "torch:add", "--arg", "bf16[8,8]", "--arg", "fp32[8]", "--flops",
                 "64", "--kernel", "regex:add", "--out", str(tmp_path / "c"), "--dry-run"]) == 0
    assert "harness callable --callable torch:add --arg 'bf16[8,8]' --arg 'fp32[8]' --flops 64.0 --warmup 3" \
        in capsys.readouterr().out


def test_diagnose_filter_matched_nothing_from_real_output(fx: Path) -> None:
    text = read(fx, "filter-matched-nothing.txt")
    assert available_kernels(text) == ["cunn_SoftMaxForwardReg", "distribution_elementwise_grid_stride_kernel"]
    (d,) = diagnose(text)
    assert d.cause == "filter-matched-nothing" and "cunn_SoftMaxForwardReg" in d.explanation


def test_diagnose_env_wrapper_from_real_output(fx: Path) -> None:
    causes = diagnose(read(fx, "env-wrapper-application-only.txt"), ("env", "FOO=1", "python3"))
    assert causes[0].cause == "child-processes" and "`env`" in causes[0].explanation


def test_diagnose_second_attach_from_real_output(fx: Path) -> None:
    (d,) = diagnose(read(fx, "second-attach.txt"))
    assert d.cause == "no-attachable-process" and "kernelscope launch" in d.fix


def test_diagnose_a_held_process_left_unprofilable_by_a_one_pass_session(fx: Path) -> None:
    """Real output: vLLM held by `kernelscope launch`, the session after one of a single pass."""
    text = read(fx, "held-after-one-pass.txt")
    (d,) = diagnose(text, attached=True)
    assert d.cause == "held-process-unprofilable" and "one pass" in d.explanation and "restart" in d.fix
    assert diagnose(text) == []  # a local run's unknown error is not this one


def test_diagnose_a_launch_replay_could_not_profile(fx: Path) -> None:
    """Real output: a launch in a process holding 132 GiB of an H200's 140, under a 5-pass counter; ncu then
    lists the kernel as available, which is neither a filter that matched nothing nor a launch skip."""
    text = read(fx, "replay-wall-five-passes.txt")
    (d,) = diagnose(text)
    assert d.cause == "replay-failed" and "unrolled_elementwise_kernel" in d.explanation and "--multiplex" in d.fix
    listed = text + "==WARNING== No kernels were profiled.\nAvailable Kernels:\n1. unrolled_elementwise_kernel\n"
    assert [d.cause for d in diagnose(listed, kernel_filter="regex:elementwise", launch_skip=1)] == ["replay-failed"]
    assert diagnose(read(fx, "replay-wall-one-pass.txt")) == []


def test_diagnose_documented_messages() -> None:
    perm = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
            "Counters on the target device 0.")
    assert diagnose(perm)[0].cause == "counter-permission"
    skew = diagnose("==WARNING== No kernels were profiled.", driver_cuda="12.4", app_cuda="13.0")
    assert skew[0].cause == "cuda-driver-skew" and "13.0" in skew[0].explanation
    assert diagnose("==ERROR== Unexpected number of profiled kernels")[0].cause == "app-replay-varying-kernels"
    assert diagnose("all fine") == []


def test_analyze_harness_bundle_counted_vs_analytic(fx: Path) -> None:
    (a,), _ = kernelscope.analyze(str(fx / "bundle_attn_causal"))
    assert a.record.name == "flash_fwd_kernel"
    assert a.analytic is not None and a.analytic["flops"] == 2 * 4 * 32 * 2048 * 2048 * 128  # causal half
    assert a.analytic["counted_over_analytic_flops"] == pytest.approx(147_566_886_912 / 137_438_953_472)
    assert any("masked tiles" in line for line in a.limiters)


def test_measured_ceilings_side_by_side(fx: Path) -> None:
    (a,), _ = kernelscope.analyze(str(fx / "gemm_bf16.ncu-rep"), achievable=str(fx / "measured-ceilings-h200.yaml"))
    assert a.compute_ceiling_key == "h200-sxm.compute.bf16"
    assert a.achievable is not None and a.achievable["compute_ceiling_key"] == "h200-measured.compute.bf16"
    assert a.achievable["pct_compute"] == pytest.approx(a.pct_sol_compute * 989 / 770.9, rel=1e-6)


def test_diagnose_skip_vs_nothing() -> None:
    listing = "==WARNING== No kernels were profiled.\nAvailable Kernels:\n1. nvjet_sm90_tst_x\n2. flash_fwd_kernel\n"
    (d,) = diagnose(listing, kernel_filter="regex:flash", launch_skip=30)
    assert d.cause == "skipped-by-launch-skip" and "--launch-skip 30" in d.explanation
    (d,) = diagnose(listing, kernel_filter="fmha", launch_skip=30)
    assert d.cause == "filter-matched-nothing"
    (d,) = diagnose(listing, kernel_filter="nvjet", launch_skip=0)
    assert "did you mean --kernel regex:nvjet?" in d.fix


def test_kernel_sets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kernelscope.capture.kernel_sets import kernels, load

    sets = load()
    assert "regex:bmm_E2m1" in kernels("b200-nvfp4") and len(kernels("h200-bf16-fp8")) == 5
    assert all({"kernel", "category", "expected", "measured"} <= set(e) for v in sets.values() for e in v)
    assert main(["capture", "--kernel-set", "h200-bf16-fp8", "--out", str(tmp_path / "b"), "--dry-run", "--",
                 "python3", "x.py"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 5


def test_a_report_gone_after_its_session_fails_that_run_alone(tmp_path: Path) -> None:
    """One report was seen whole and then gone when its attach session ended (H200, 2026-12-02): that
    run is recorded as failed, with the reason, and the bundle keeps the runs that worked."""
    import shutil
    from collections.abc import Mapping

    from kernelscope.capture import engine
    from kernelscope.capture.transport import LocalProcess, Outcome
    from kernelscope.report_manifest import GpuFacts, NcuFacts

    class Vanishing(LocalProcess):
        """ncu's part played by a real report copied where ncu writes it; the second run's then gone."""

        runs = 0

        def capture(self, argv: list[str], remote: str, local: Path, env: Mapping[str, str], timeout: float,
                    progress: object) -> Outcome:
            shutil.copy(Path(__file__).parent / "fixtures" / "gemm_bf16.ncu-rep", local)
            self.runs += 1
            if self.runs == 2:
                local.unlink()
            return Outcome(0, '==PROF== Profiling "gemm": 0%....50%....100% - 12 passes', True, 0.1)

        def run(self, argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None) -> tuple[int, str]:
            return 1, ""  # no CSV export

        def gpu_facts(self) -> GpuFacts:
            return GpuFacts(name="NVIDIA H200", driver_version="580.159.04", driver_cuda_version="13.0")

    plan = CapturePlan(kernels=("a", "b"), target=("/bin/prog",))
    ctx = engine.Context(("kernelscope",), NcuFacts("ncu", "2025.3.1"))
    manifest = engine.run(plan, tmp_path / "b", Vanishing(), ctx)
    first, second = manifest.captures
    assert first.report is not None and first.error is None
    assert second.report is None and second.error is not None
    assert second.error.startswith("the report ncu wrote could not be read after it ended: ") and \
        "no such file or directory" in second.error


def test_a_held_programs_secrets_never_reach_the_bundle(tmp_path: Path) -> None:
    """capture --attach records the held program as its target: an API key on its command line is
    masked in the manifest, as any program's is, and the engine it names is still read."""
    import shutil
    from collections.abc import Mapping

    from kernelscope.capture import engine
    from kernelscope.capture.transport import LocalProcess, Outcome
    from kernelscope.report_manifest import GpuFacts, NcuFacts

    class Session(LocalProcess):
        """ncu's part played by a real report copied where the attach session writes it."""

        def capture(self, argv: list[str], remote: str, local: Path, env: Mapping[str, str], timeout: float,
                    progress: object) -> Outcome:
            shutil.copy(Path(__file__).parent / "fixtures" / "decode_gemm.ncu-rep", local)
            return Outcome(0, '==PROF== Profiling "gemm": 0%....50%....100% - 12 passes', True, 0.1)

        def run(self, argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None) -> tuple[int, str]:
            return 1, ""

        def gpu_facts(self) -> GpuFacts:
            return GpuFacts(name="NVIDIA H200")

    key = "sk-held-program-secret-0123456789"
    program = ("python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m", "--api-key", key)
    plan = CapturePlan(kernels=("regex:nvjet",), attach=Attach("127.0.0.1", 49152))
    ctx = engine.Context(("kernelscope",), NcuFacts("ncu", "2025.3.1"), program=program)
    manifest = engine.run(plan, tmp_path / "b", Session(), ctx)
    assert manifest.context["serving.engine"] == "vllm" and manifest.target[:3] == program[:3]
    assert all(key.encode() not in f.read_bytes() for f in (tmp_path / "b").rglob("*") if f.is_file())


def test_after_a_launch_fails_under_replay_a_multiplexed_capture_runs_only_its_one_pass_groups(
        tmp_path: Path, fx: Path) -> None:
    """The H200's replay wall (tests/fixtures/ncu-output): a launch in a process holding 132 GiB profiles in one
    pass and fails at several, 72 s a failure. ncu's part is played by its real output for a group whose
    counter takes several passes alone and by a real report for the others: after the first failure the
    other replayed groups are not run, the one-pass groups are, and the merged launch says why its
    replayed counters are unmeasured."""
    import shutil
    from collections.abc import Mapping

    import kernelscope
    from kernelscope.capture import engine
    from kernelscope.capture.transport import LocalProcess, Outcome
    from kernelscope.ncu.multiplex import PASSES_ALONE
    from kernelscope.report_manifest import GpuFacts, NcuFacts

    wall = read(fx, "replay-wall-five-passes.txt")
    toy = Path(__file__).parent / "fixtures" / "multiplex" / "toy-multiplexed" / "ncu-profiles"

    class ReplayWall(LocalProcess):
        metrics: list[set[str]] = []

        def capture(self, argv: list[str], remote: str, local: Path, env: Mapping[str, str], timeout: float,
                    progress: object) -> Outcome:
            self.metrics.append(set(argv[argv.index("--metrics") + 1].split(",")))
            if self.metrics[-1] & set(PASSES_ALONE):
                return Outcome(9, wall, False, 72.0)
            shutil.copy(toy / f"{local.name[:2]}-copy.ncu-rep", local)  # that group's real report
            return Outcome(0, '==PROF== Profiling "copy": 0%....50%....100% - 1 pass', True, 6.0)

        def run(self, argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None) -> tuple[int, str]:
            assert "--import" in argv, "no listing pass after a replay failure"
            return 1, ""

        def gpu_facts(self) -> GpuFacts:
            return GpuFacts(name="NVIDIA H200")

    plan = CapturePlan(kernels=("regex:copy",), target=("/bin/prog",), multiplex=True)
    transport = ReplayWall()
    ctx = engine.Context(("kernelscope",), NcuFacts("ncu", "2025.3.1"))
    manifest = engine.run(plan, tmp_path / "b", transport, ctx)
    runs = {c.group: c for c in manifest.captures}
    assert len(runs) == len(plan.units()) == 31
    assert len(transport.metrics) == 31 - 13  # the one-pass groups and the first replayed one
    failed = [g for g, c in runs.items() if c.report is None]
    assert len(failed) == 14 and all(runs[g].causes == ("replay-failed",) for g in failed)
    first = runs[failed[0]]
    assert first.exit_code == 9 and 'Failed to profile "unrolled_elementwise_kernel"' in (first.error or "")
    assert all((runs[g].error or "").startswith(f"not run: counter group {failed[0]}'s launch") for g in failed[1:])
    (a,), _ = kernelscope.analyze(str(tmp_path / "b"))
    assert any("kernel replay failed" in n and ", ".join(map(str, failed)) in n for n in a.record.notes)
    assert a.bound == "memory" and "FLOP not collected for fp64, fp32, fp16" in a.verdict  # SASS counts: never 0
