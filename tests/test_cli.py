"""The CLI contract: JSON schema, --out files, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.cli import main

REQUIRED_KEYS = {
    "name", "name_full", "device", "duration_ns", "flops", "dominant_precision", "dram_bytes",
    "arithmetic_intensity", "achieved_tflops", "achieved_dram_tbps", "compute_ceiling_key",
    "memory_ceiling_key", "pct_sol_compute", "pct_sol_memory", "sm_busy_pct", "tensor_pipe_active_pct",
    "achieved_occupancy_pct", "theoretical_occupancy_pct", "occupancy_limiter", "registers_per_thread",
    "shared_mem_per_block_bytes", "branch_divergence_pct", "simt_efficiency_pct", "warp_stalls", "bound",
    "verdict", "next_levers", "unmeasured",
}


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["analyze", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_schema(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, str(fx / "gemm_bf16.ncu-rep"), str(fx / "decode_gemm-raw.csv"), "--kernel", "regex:nvjet")
    assert doc["schema_version"] == 4
    assert doc["context"]["kernel_filter"] == "regex:nvjet"
    assert len(doc["kernels"]) == 2
    for k in doc["kernels"]:
        assert REQUIRED_KEYS <= set(k)
        assert k["flops"]["total"] == sum(v for key, v in k["flops"].items() if key != "total")
    gemm = doc["kernels"][0]
    assert gemm["flops"]["tensor_bf16"] == 274_877_906_944 and gemm["bound"] == "compute"
    assert 0 <= gemm["pct_sol_compute"] <= 100


def test_unmeasured_is_null_in_json(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (k,) = run_json(capsys, str(fx / "gemm_basic.ncu-rep"))["kernels"]
    assert k["flops"] is None and k["dram_bytes"] is None and k["arithmetic_intensity"] is None
    # provisional: the busiest unit (the tensor pipe) names the side, and no %SoL is claimed
    assert (k["bound"], k["provisional"], k["pct_sol"], k["pct_sol_compute"]) == ("compute", True, None, None)
    assert k["limiter"]["name"] == "tensor pipe" and k["limiter"]["pct"] == pytest.approx(93.40, abs=0.01)
    assert {"flops", "dram_bytes", "pct_sol_compute"} <= set(k["unmeasured"])


def test_kernel_filter_exact_and_none_matching(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, str(fx / "divergent.ncu-rep"), str(fx / "fp8_gemm.ncu-rep"), "--kernel", "divergent_fma")
    assert [k["name"] for k in doc["kernels"]] == ["divergent_fma"]
    assert main(["analyze", str(fx / "fp8_gemm.ncu-rep"), "--kernel", "nothing"]) == 2
    assert "no kernel launch matches" in capsys.readouterr().err


def test_out_dir_writes_json_and_csv(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    assert main(["analyze", str(fx / "fp8_gemm.ncu-rep"), "--out-dir", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["kernels.csv", "kernels.json"]
    doc = json.loads((out / "kernels.json").read_text())
    assert doc["kernels"][0]["flops"]["tensor_fp8"] == 17_179_869_184
    header, row = (out / "kernels.csv").read_text().splitlines()[:2]
    assert "flops.tensor_fp8" in header.split(",") and "17179869184" in row


def _bad_inputs(fx: Path, d: Path) -> dict[str, tuple[Path, str]]:
    data = (fx / "decode_gemm.ncu-rep").read_bytes()
    (d / "empty.ncu-rep").write_bytes(b"")
    (d / "cut.ncu-rep").write_bytes(data[: len(data) - 100])
    (d / "garbage.ncu-rep").write_bytes(b"NVR\x00" + os.urandom(64))
    (d / "noheader.csv").write_text("a,b,c\n1,2,3\n")
    (d / "empty_dir").mkdir()
    (d / "notes.txt").write_bytes(b"\x00\x01binary junk")
    return {
        "empty": (d / "empty.ncu-rep", "empty file"),
        "truncated": (d / "cut.ncu-rep", "truncated or corrupt .ncu-rep"),
        "corrupt": (d / "garbage.ncu-rep", "truncated or corrupt .ncu-rep"),
        "no kernel name": (d / "noheader.csv", 'no "Kernel Name" column'),
        "empty dir": (d / "empty_dir", "directory holds no .ncu-rep reports"),
        "unknown format": (d / "notes.txt", "neither an .ncu-rep report nor an ncu CSV export"),
        "missing": (d / "nope.ncu-rep", "no such file or directory"),
    }


@pytest.mark.parametrize(
    "case", ["empty", "truncated", "corrupt", "no kernel name", "empty dir", "unknown format", "missing"]
)
def test_bad_input_one_line_exit_2_no_output(
    fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    path, problem = _bad_inputs(fx, tmp_path)[case]
    out = tmp_path / "out"
    code = main(["analyze", str(fx / "gemm_bf16.ncu-rep"), str(path), "--out-dir", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and str(path) in err and problem in err
    assert not out.exists()


def test_unknown_device_without_hw(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An export naming no device against a ceilings file whose entries give no compute capability:
    read, with no roof guessed (null, never 0) and one line saying to pass --hw."""
    out = tmp_path / "out"
    mine = str(fx / "measured-ceilings-h200.yaml")
    assert main(["analyze", str(fx / "decode_gemm-details.csv"), "--ceilings", mine, "--out-dir", str(out)]) == 0
    (k,) = json.loads((out / "kernels.json").read_text())["kernels"]
    assert k["hw_key"] == "cc9.0-unidentified" and k["memory_ceiling_tbps"] is None and k["pct_sol_memory"] is None
    assert main(["analyze", str(fx / "decode_gemm-details.csv"), "--ceilings", mine]) == 0
    assert "the input names no device; CC 9.0, 132 SMs fits no datasheet entry: pass --hw" in capsys.readouterr().out
    assert main(["analyze", str(fx / "decode_gemm-details.csv"), "--hw", "h200-sxm", "--format", "json"]) == 0


def test_console_script_runs_on_bundled_report(fx: Path) -> None:
    exe = shutil.which("kernelscope")
    cmd = [exe] if exe else [sys.executable, "-m", "kernelscope.cli"]
    res = subprocess.run([*cmd, "analyze", str(fx / "decode_gemm.ncu-rep"), "--details"], capture_output=True,
                         text=True, env={**os.environ, "COLUMNS": "200"}, check=True)
    assert "memory-bound" in res.stdout and "h200-sxm.memory.hbm" in res.stdout
