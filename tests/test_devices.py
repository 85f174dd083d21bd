"""Every report people have (issue 27): real reports published from other GPUs and ncu versions, read
from ../shared/reports-public (skipped when absent, never copied here), each held to roofs for its
own device; the H200's derived roofs against its datasheet; exports that name no device."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import kernelscope
from kernelscope.ceilings import DeviceFacts, architectures, load
from kernelscope.ceilings.from_report import derive
from kernelscope.cli import main
from kernelscope.ingest import iter_inputs, report_manifest
from kernelscope.report.context import summary

PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "reports-public"
needs_public = pytest.mark.skipif(not PUBLIC.is_dir(), reason="../shared/reports-public is not beside the checkout")

# report -> (the ceilings entry its device picks, the architecture, ncu's set as named from the report)
REPORTS = {
    "anuragdogra2192__MultipleNodesScalingCUDACPPApplications__report.ncu-rep": ("v100-sxm2-32gb", "7.0", "basic"),
    "armleth__cuda-mlp-inference__report.ncu-rep": ("t4", "7.5", "full"),
    "josiahls__cuda_learning_mojo__profile.ncu-rep": ("gtx-1660-ti", "7.5", "basic"),
    "bwd29__self-join-MiSTIC__profileSUSYNODE.out.ncu-rep": ("a100-pcie-40gb", "8.0", "full"),
    "panjd123__cutlass__report-s4.ncu-rep": ("a100-pcie-80gb", "8.0", "full"),
    "spymaster2h__spyinfer__report.ncu-rep": ("a10", "8.6", "basic"),
    "AveryClapp__ESMM-Research__profile_output.ncu-rep": ("a10g", "8.6", "ncu-roofline"),
    "DarrenLu666888__CUDATutorial__profile.ncu-rep": ("rtx-3050-laptop", "8.6", "basic"),
    "mlvl36667__blsongpu__test.ncu-rep": ("rtx-3080-ti", "8.6", "detailed"),
    "zloyaloha__GPU-programming__profile_report.ncu-rep": ("rtx-4060", "8.9", "basic"),
    "2388612861__GPU-DEMO__ncu_report.ncu-rep": ("rtx-5060-ti", "12.0", "custom"),
    "Abhishek7204__raytracingCuda__profile.ncu-rep": ("rtx-5060-laptop", "12.0", "basic"),
}


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    assert main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@needs_public
@pytest.mark.parametrize("report", sorted(REPORTS))
def test_every_published_report_reads_against_its_own_device(report: str) -> None:
    """Volta to Blackwell RTX, ncu 2020.3 to 2026.2, GUI captures and reports with no command line:
    each is read, held to its device's entry, and its set named from its sections."""
    key, cc, metric_set = REPORTS[report]
    items, table = kernelscope.analyze(str(PUBLIC / report))
    assert {a.hw_key for a in items} == {key}
    rec = items[0].record
    dev = table.pick(rec.device, None, DeviceFacts.of(rec.device, rec.metrics))
    assert dev.arch is not None and dev.arch.cc == cc and dev.how == "datasheet, checked against the report"
    manifest = report_manifest(PUBLIC / report)
    assert manifest is not None and manifest.metric_set == metric_set
    for a in items:  # a figure the report lacks is unmeasured, never 0
        if a.record.flops is None or a.record.flops_total is None:
            assert a.pct_sol_compute is None and a.record.arithmetic_intensity is None
        assert a.memory_ceiling_tbps is not None and a.memory_ceiling_tbps > 0


@needs_public
def test_no_recorded_command_line_is_a_whole_report() -> None:
    """ncu 2020.3 and the GUI record no ncu command line: the reports are whole, not cut, and their
    clock control is not recorded."""
    for report in ("bwd29__self-join-MiSTIC__profileSUSYNODE.out.ncu-rep",
                   "DarrenLu666888__CUDATutorial__profile.ncu-rep",
                   "anuragdogra2192__MultipleNodesScalingCUDACPPApplications__report.ncu-rep"):
        manifest = report_manifest(PUBLIC / report)
        assert manifest is not None and manifest.ncu_command == ()
        assert len(list(iter_inputs([PUBLIC / report]))) == 1
        assert "clock-control not recorded" in summary(manifest)  # not ncu's default: nothing says so


@needs_public
def test_an_old_ncus_untitled_bottleneck_is_read_from_its_message(capsys: pytest.CaptureFixture[str]) -> None:
    """ncu 2020.3 (A100) and the V100's ncu write SOLBottleneck with no title: its message says
    "low compute throughput and memory bandwidth", ncu's Latency Issue, which agrees with ours."""
    for report in ("bwd29__self-join-MiSTIC__profileSUSYNODE.out.ncu-rep",
                   "anuragdogra2192__MultipleNodesScalingCUDACPPApplications__report.ncu-rep"):
        (k,) = _json(capsys, "analyze", str(PUBLIC / report), "--format", "json")["kernels"]
        assert (k["ncu_bottleneck"], k["ncu_agrees"], k["bound"]) == ("Latency Issue", True, "latency")
        assert "this ncu wrote no title: read from its message" in k["ncu_why"]


@needs_public
def test_windows_capture_reads_as_written() -> None:
    """A Windows capture: ncu's quoted binary under C:\\Program Files whole, the process name without its NUL."""
    manifest = report_manifest(PUBLIC / "2388612861__GPU-DEMO__ncu_report.ncu-rep")
    assert manifest is not None
    assert manifest.ncu_command[0] == ("C:\\Program Files\\NVIDIA Corporation\\Nsight Compute 2025.2.1\\\\target\\"
                                       "windows-desktop-win7-x64\\ncu.exe")
    assert manifest.target == ("./MatrixTranspose.exe",)
    assert manifest.processes == ("pid 4232 F:\\CDUAtest\\MatrixTranspose\\MatrixTranspose\\MatrixTranspose.exe",)


@needs_public
def test_derived_roofs_of_published_devices() -> None:
    """What the report's own attributes give: HBM/GDDR from 2 x memory clock x bus width (or ncu's own
    DRAM peak), FP32 from SMs x the architecture's lanes x the maximum clock."""
    got = {}
    for report in REPORTS:
        raw = next(iter(iter_inputs([PUBLIC / report])))
        got[report.split("__")[0]] = derive(DeviceFacts.of(raw.device, raw.metrics))
    assert got["anuragdogra2192"].memory.value == pytest.approx(2 * 877e6 * 4096 / 8 / 1e12)  # V100: 0.898 TB/s
    assert got["armleth"].memory.value == pytest.approx(0.320, rel=1e-3)  # T4: 64 B/cycle x 5001 MHz
    assert got["panjd123"].memory.value == pytest.approx(1.935, rel=1e-3)  # A100 80GB PCIe: 1280 B/cycle x 1512 MHz
    assert got["panjd123"].compute["bf16"].value == pytest.approx(108 * 2048 * 1.41e9 / 1e12)  # 311.9 TFLOP/s
    # GeForce Ampere: tf32 and bf16 accumulate in fp32, at half the GA10x rate; fp16 (fp16 accumulate) in full
    rtx = got["mlvl36667"]
    assert rtx.compute["fp16"].value == pytest.approx(80 * 1024 * 1.665e9 / 1e12)
    assert rtx.compute["bf16"].value == pytest.approx(80 * 512 * 1.665e9 / 1e12)
    assert any(n.startswith("GeForce") for n in rtx.notes)
    # Turing's GTX 16 parts have no tensor cores: no tensor roof at all, said why
    gtx = got["josiahls"]
    assert gtx.tensor_cores is False and gtx.compute["fp16"].value is None
    assert "no tensor cores" in gtx.compute["fp16"].source
    assert got["spymaster2h"].has_path("wgmma") is False and got["2388612861"].has_path("tcgen05") is False


def test_h200_derived_roofs_agree_with_the_datasheet(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every H200 roof the report's attributes derive is within 2 % of the sourced datasheet figure
    (HBM -0.3 %: 1504 B/cycle x 3201 MHz; FP64 +1.6 %: 34 vs 33.45 at 1980 MHz; the rest under 0.2 %)."""
    doc = _json(capsys, "ceilings", "list", "--for", str(fx / "gemm_bf16.ncu-rep"), "--format", "json")
    checked = [r for r in doc["ceilings"] if r["check"]]
    assert len(checked) == 10  # HBM and every compute roof but fp4 (Hopper has none)
    for row in checked:
        assert row["check"].startswith("agrees"), row
        off = float(row["check"].rsplit("(", 1)[1].rstrip("%)"))
        assert abs(off) <= 2.0, row
    memory = next(r for r in checked if r["key"] == "h200-sxm.memory.hbm")
    assert "4.814 TB/s" in memory["check"] and "(-0.3%)" in memory["check"]


def test_details_export_of_the_h200_needs_no_hw(fx: Path) -> None:
    """ncu's --page details CSV has no device name: CC 9.0, 132 SMs and the 3.20 GHz DRAM clock pick the H200."""
    items, table = kernelscope.analyze(str(fx / "decode_gemm-details.csv"))
    rec = items[0].record
    dev = table.pick(rec.device, None, DeviceFacts.of(rec.device, rec.metrics))
    assert dev.hw_key == "h200-sxm" and dev.how == "datasheet, matched by CC"
    assert items[0].limiter.kind == "hbm" and items[0].pct_sol_memory == pytest.approx(80.9, abs=0.5)


@needs_public
def test_csv_export_with_ncu_log_lines_and_only_a_cc(capsys: pytest.CaptureFixture[str]) -> None:
    """`ncu --csv` stdout (==PROF== lines before the header) of an RTX 4090 whose export names CC 8.9 only:
    every launch read, no ceiling guessed, and one line saying which --hw values fit."""
    report = str(PUBLIC / "Lashi0812__CudaProgramming__results__ncu_reduceInteger.csv")
    doc = _json(capsys, "analyze", report, "--format", "json")
    assert len(doc["kernels"]) == 9
    assert {k["hw_key"] for k in doc["kernels"]} == {"cc8.9-unidentified"}
    assert all(k["memory_ceiling_tbps"] is None and k["pct_sol_memory"] is None for k in doc["kernels"])
    assert main(["analyze", report]) == 0
    assert "CC 8.9 fits --hw l4, l40, l40s, rtx-4090, rtx-4060, rtx-6000-ada" in capsys.readouterr().out
    held = kernelscope.analyze(report, hw="rtx-4090")[0]
    assert {a.hw_key for a in held} == {"rtx-4090"}
    first = next(a for a in held if a.record.name == "reduceNeighbored")
    assert first.record.dram_bytes == 104_040_704  # dram__bytes.sum, read as the report gives it


@needs_public
def test_a_roof_derived_from_the_report_is_not_called_a_datasheets(capsys: pytest.CaptureFixture[str]) -> None:
    """The A10G's datasheet entry gives no fp32 peak: the report's own (35.0208 TFLOP/s at 1710 MHz)
    fills it, and the evidence names it so; the entry's memory figure stays the datasheet's."""
    doc = _json(capsys, "analyze", str(PUBLIC / "AveryClapp__ESMM-Research__profile_output.ncu-rep"), "--format",
                "json")
    readings = [e for k in doc["kernels"] for e in k["evidence"] if "35.0208 TFLOP/s" in e]
    assert readings and all("35.0208 TFLOP/s report-derived peak" in e for e in readings)
    assert not any("35.0208 TFLOP/s datasheet" in e for k in doc["kernels"] for e in k["evidence"])


@needs_public
def test_divergence_from_the_uniform_share_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """The Lashi CSV holds smsp__sass_average_branch_targets_threads_uniform.pct (90.32 % for
    reduceNeighbored) but no divergent count: the divergence is 100 - uniform, not 'not captured'."""
    doc = _json(capsys, "analyze", str(PUBLIC / "Lashi0812__CudaProgramming__results__ncu_reduceInteger.csv"),
                "--format", "json")
    first = next(k for k in doc["kernels"] if k["name"] == "reduceNeighbored")
    assert first["branch_divergence_pct"] == pytest.approx(9.68) and "branch_divergence_pct" not in first["unmeasured"]


@needs_public
def test_unknown_gpu_gets_roofs_from_its_attributes(tmp_path: Path) -> None:
    """A device no ceilings entry names (here a user's file listing only the H200) is never exit 2: its
    roofs come from the report's attributes, said so."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("devices:\n  h200:\n    match: ['NVIDIA H200']\n    memory: {hbm: {tbps: 4.8}}\n"
                    "    compute: {bf16: {tflops: 989}}\n")
    items, table = kernelscope.analyze(str(PUBLIC / "zloyaloha__GPU-programming__profile_report.ncu-rep"),
                                       ceilings=str(mine))
    rec = items[0].record
    dev = table.pick(rec.device, None, DeviceFacts.of(rec.device, rec.metrics))
    assert dev.how == "derived" and dev.hw_key == "geforce-rtx-4060"
    assert dev.memory.value == pytest.approx(2 * 8501e6 * 128 / 8 / 1e12)  # 272 GB/s
    assert dev.compute["fp8"].value == pytest.approx(24 * 2048 * 2.67e9 / 1e12)  # Ada has fp8 tensor cores


def test_architecture_table_is_whole_and_sourced() -> None:
    """Volta to Blackwell: each architecture's rates sourced, wgmma only on Hopper, tcgen05 only on
    data-centre Blackwell, fp8 tensor cores from sm_89, fp4 from Blackwell."""
    archs = architectures()
    assert set(archs) == {"7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "10.3", "12.0"}
    assert [cc for cc, a in archs.items() if "wgmma" in a.tensor_paths] == ["9.0"]
    assert [cc for cc, a in archs.items() if "tcgen05" in a.tensor_paths] == ["10.0", "10.3"]
    assert [cc for cc, a in archs.items() if a.has("fp8")] == ["8.9", "9.0", "10.0", "10.3", "12.0"]
    assert [cc for cc, a in archs.items() if a.has("fp4")] == ["10.0", "10.3", "12.0"]
    assert all(a.source for a in archs.values())
    # each rate reproduces a datasheet figure: A100 312 TFLOPS bf16, H100 SXM 989 at 1830 MHz, L40S 733 fp8
    assert 108 * archs["8.0"].per_sm_clock["bf16"] * 1.41e9 == pytest.approx(312e12, rel=0.01)  # type: ignore[operator]
    assert 132 * archs["9.0"].per_sm_clock["bf16"] * 1.83e9 == pytest.approx(989e12, rel=0.01)  # type: ignore[operator]
    assert 142 * archs["8.9"].per_sm_clock["fp8"] * 2.52e9 == pytest.approx(733e12, rel=0.02)  # type: ignore[operator]


def test_datasheet_entries_name_their_devices_once() -> None:
    """Each device name selects one entry, and every entry that can match an export has its CC."""
    table = load()
    names = [m.lower() for d in table.devices.values() for m in d.match]
    assert len(names) == len(set(names))
    assert len(table.devices) >= 40
    assert all(d.cc for d in table.devices.values())
