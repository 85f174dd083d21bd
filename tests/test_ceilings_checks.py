"""Ceilings a kernel passes, and the clocks peaks are computed at: a figure over 100 % of a ceiling
is warned of (stderr, once a kernel) and noted in the launch's notes (JSON, CSV), whichever way the
documents are made; `ceilings list` shows each peak's clock. Real reports, the real measured file."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import pytest
import yaml

from kernelscope import app
from kernelscope.analysis.overshoot import OVER
from kernelscope.cli import main
from kernelscope.ingest import parts

MANY = Path(__file__).resolve().parents[1] / "bench" / "data" / "many.ncu-rep.gz"
PACKAGED = Path(__file__).resolve().parents[1] / "src" / "kernelscope" / "ceilings" / "sol-ceilings.yaml"
GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"


def warnings(err: str) -> list[str]:
    return [line.removeprefix("kernelscope: warning: ") for line in err.splitlines() if "warning:" in line]


def scaled(src: Path, dst: Path, device: str, path: tuple[str, ...], value: float) -> Path:
    """A copy of a ceilings file with one figure set to `value`."""
    doc = yaml.safe_load(src.read_text())
    entry = doc["devices"][device]
    for step in path[:-1]:
        entry = entry[step]
    entry[path[-1]] = value
    dst.write_text(yaml.safe_dump(doc))
    return dst


def test_the_real_measured_file_is_passed_by_the_gemm(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The H200's own measured bf16 matmul (770.9 TFLOP/s, torch at 8192) is slower than cuBLAS's
    GEMM in gemm_bf16: 105.4 % of it, which the run says instead of printing it silently."""
    measured = fx / "measured-ceilings-h200.yaml"
    assert main(["analyze", str(fx / "gemm_bf16.ncu-rep"), "--achievable", str(measured), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    said = (f"105.4 % of the measured ceiling h200-measured.compute.bf16 ({measured}): that ceiling is wrong, or "
            "was taken at a lower clock than the kernel ran at (it ran at 1,610 MHz)")
    assert warnings(err) == [f"{GEMM} in gemm_bf16.ncu-rep, 1 of its 1 launch(es) {OVER}, at most {said}"]
    (kernel,) = json.loads(out)["kernels"]  # stdout: the document alone
    assert kernel["pct_of_achievable"]["pct_compute"] == pytest.approx(105.36, abs=0.01)
    assert f"{OVER}: {said}" in kernel["notes"]


def test_a_measured_file_scaled_down_names_each_kernel_past_it(fx: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """HBM measured at 70 % of the real file's 4.22 TB/s: the axpy (3.16 TB/s) and the decode GEMM
    pass it; the table view warns as the streamed CSV does, and the CSV's notes column says it."""
    measured = fx / "measured-ceilings-h200.yaml"
    low = scaled(measured, tmp_path / "low.yaml", "h200-measured", ("memory", "hbm", "tbps"), 2.954)
    inputs = [str(fx / "nobranch.ncu-rep"), str(fx / "decode_gemm.ncu-rep"), str(fx / "attention_cudnn.ncu-rep")]
    assert main(["analyze", *inputs, "--achievable", str(low), "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    found = warnings(err)
    assert [w.split(",")[0] for w in found] == ["axpy_nobranch in nobranch.ncu-rep",
                                                "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT in decode_gemm.ncu-rep"]
    assert "at most 107.0 % of the measured ceiling h200-measured.memory.hbm" in found[0]
    assert "at most 131.3 % of the measured ceiling h200-measured.memory.hbm" in found[1]
    assert "(it ran at 3,199 MHz)" in found[0]  # the DRAM clock, for a memory ceiling
    notes = [row["notes"] for row in csv.DictReader(io.StringIO(out))]
    assert "107.0 % of the measured ceiling h200-measured.memory.hbm" in notes[0]
    assert OVER in notes[1] and OVER not in notes[2]  # the attention kernel: 14 % of it
    assert main(["analyze", *inputs, "--achievable", str(low)]) == 0
    assert warnings(capsys.readouterr().err) == found


def test_a_ceilings_file_below_a_kernel_at_its_clock(fx: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """--ceilings with bf16 at 700 TFLOP/s: the GEMM's 808 TFLOP/s is 116 % of the figure, and 132 %
    of the wgmma roof scaled to the 1,610 MHz it ran at (the peak is at 1,830 MHz): the most is said."""
    low = scaled(PACKAGED, tmp_path / "c.yaml", "h200-sxm", ("compute", "bf16", "tflops"), 700)
    assert main(["analyze", str(fx / "gemm_bf16.ncu-rep"), "--ceilings", str(low), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    (line,) = warnings(err)
    assert line.endswith(f"at most 131.9 % of h200-sxm.compute.bf16@wgmma scaled to the launch's clock ({low}): the "
                         "ceiling's figure, its clock_mhz or its tensor path ratio is wrong (it ran at 1,610 MHz)")
    notes = [n for n in json.loads(out)["kernels"][0]["notes"] if n.startswith(OVER)]
    assert len(notes) == 2 and "116.0 % of the ceiling h200-sxm.compute.bf16" in notes[1]


def test_the_datasheet_is_passed_by_no_fixture(fx: Path) -> None:
    inputs = (*sorted(fx.glob("*.ncu-rep*")), fx / "bundle_attn_causal")
    an = app.analyze(app.AnalyzeRequest(inputs))
    assert len(an.items) == 28 and an.warnings() == []
    assert not any(n.startswith(OVER) for a in an.items for n in a.record.notes)


def test_workers_warn_as_one_process(tmp_path: Path, fx: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """300 launches in two worker parts against HBM at 0.5 TB/s: the same three kernels, counted
    over both parts, named apart by their template arguments (as the table names them)."""
    report = tmp_path / "many.ncu-rep"
    report.write_bytes(gzip.decompress(MANY.read_bytes()))
    measured = fx / "measured-ceilings-h200.yaml"
    low = scaled(measured, tmp_path / "low.yaml", "h200-measured", ("memory", "hbm", "tbps"), 0.5)
    monkeypatch.setattr(parts, "REPORT_PART", 100)
    said: dict[int, list[str]] = {1: [], 2: []}
    for jobs in said:
        app.stream_results(app.AnalyzeRequest((report,), achievable=low), None, "json", jobs, warn=said[jobs].append)
    assert said[1] == said[2] and len(said[1]) == 3
    assert [w.split(" launch(es)")[0].rsplit(", ", 1)[1] for w in said[1]] == \
        ["100 of its 100", "100 of its 100", "99 of its 99"]
    assert said[1][1].startswith("vectorized_elementwise_kernel<…at::native::CUDAFunctorOnSelf_add<float>…> in ")
    assert "at most 213.4 % of the measured ceiling h200-measured.memory.hbm" in said[1][1]


def test_ceilings_list_shows_each_peaks_clock(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ceilings", "list", "--format", "json"]) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)["ceilings"]}
    bf16, hbm = rows["h200-sxm.compute.bf16"], rows["h200-sxm.memory.hbm"]
    assert bf16["clock_mhz"] == 1830 and bf16["clock_source"].startswith("tensor peaks are computed at 1,830 MHz")
    assert rows["h200-sxm.compute.fp32"]["clock_mhz"] == 1980 and hbm["clock_mhz"] == 3201
    h100 = rows["h100-sxm.memory.hbm"]  # implied from 3.35 TB/s over five 1024-bit HBM3 stacks
    assert h100["clock_mhz"] == 2619 and h100["clock_source"].startswith("implied: 3.35 TB/s")
    assert rows["b200.compute.bf16"]["clock_mhz"] is None and rows["b200.compute.bf16"]["clock_source"] is None
    assert main(["ceilings", "list", "--ceilings", str(fx / "measured-ceilings-h200.yaml")]) == 0
    table = capsys.readouterr().out.splitlines()
    assert "clock MHz" in table[1] and "a peak with a clock is scaled to the clock each kernel ran at" in table[0]
    bf16_line = next(line for line in table if line.startswith("h200-measured.compute.bf16"))
    assert bf16_line.split()[1:4] == ["770.9", "TFLOP/s", "—"]  # measured: at no recorded clock


def test_packaged_yaml_is_kept_parsed_beside_the_bytecode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ceilings table is parsed once and kept where Python keeps bytecode: a later run loads the
    kept copy (PyYAML unused), a changed file is parsed again, a damaged copy is ignored, and
    PYTHONDONTWRITEBYTECODE keeps nothing."""
    from kernelscope import files

    table = tmp_path / "table.yaml"
    table.write_text("devices: {a: {name: A}}\n")
    monkeypatch.setattr("sys.pycache_prefix", str(tmp_path / "pyc"))
    monkeypatch.setattr("sys.dont_write_bytecode", True)
    assert files.parse_packaged_yaml(table) == {"devices": {"a": {"name": "A"}}}
    assert not (tmp_path / "pyc").exists()
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    files.parse_packaged_yaml(table)
    [kept] = (tmp_path / "pyc").rglob("*.marshal")

    def no_yaml(*_: object, **__: object) -> None:
        raise AssertionError("parsed again")

    with monkeypatch.context() as m:
        m.setattr(yaml, "load", no_yaml)
        assert files.parse_packaged_yaml(table) == {"devices": {"a": {"name": "A"}}}
    table.write_text("devices: {b: {name: Bee}}\n")  # another size: mtimes may tie within a clock tick
    assert files.parse_packaged_yaml(table) == {"devices": {"b": {"name": "Bee"}}}
    kept.write_bytes(kept.read_bytes()[:5])
    assert files.parse_packaged_yaml(table) == {"devices": {"b": {"name": "Bee"}}}
