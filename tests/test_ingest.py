"""Readers: formats by content, units normalised, and .ncu-rep vs CSV agreement on real captures."""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from pathlib import Path

import pytest

import kernelscope
from kernelscope.errors import InputError
from kernelscope.ingest import iter_inputs, ncu_rep
from kernelscope.ingest.names import short_name
from kernelscope.ingest.units import parse_number, unit_factor

FIGURES = (
    "duration_ns", "dram_bytes", "flops_total", "achieved_occupancy_pct", "theoretical_occupancy_pct",
    "registers_per_thread", "shared_mem_per_block_bytes", "waves_per_sm", "tensor_pipe_active_pct",
    "sm_busy_pct", "branch_divergence_pct", "simt_efficiency_pct", "sm_clock_hz", "l2_bytes",
)


def test_number_parsing_handles_separators_and_na() -> None:
    assert parse_number("548,099") == 548099.0
    assert parse_number("1,073,741,824") == 1073741824.0
    assert parse_number("n/a") is None
    assert parse_number("") is None


def test_units_scale_to_base() -> None:
    assert unit_factor("Kbyte") == 1e3
    assert unit_factor("Gbyte") == 1e9
    assert unit_factor("Kbyte/block") == 1e3
    assert unit_factor("us") == 1e3
    assert unit_factor("msecond") == 1e6
    assert unit_factor("Gbyte/s") == 1e9
    assert unit_factor("%") == 1.0


@pytest.mark.parametrize("name", ["gemm_bf16", "decode_gemm"])
def test_ncu_rep_and_raw_csv_agree(fx: Path, name: str) -> None:
    rep = kernelscope.load(str(fx / f"{name}.ncu-rep"))[0]
    csv = kernelscope.load(str(fx / f"{name}-raw.csv"))[0]
    assert csv.name == rep.name and csv.device == rep.device == "NVIDIA H200"
    assert csv.grid == rep.grid and csv.block == rep.block
    for figure in FIGURES:
        a, b = getattr(rep, figure), getattr(csv, figure)
        assert a is not None and b is not None, figure
        assert b == pytest.approx(a, rel=0.005, abs=0.01), figure
    assert csv.flops == rep.flops


def test_details_csv_reads_labels_and_metric_rows(fx: Path) -> None:
    """A --metrics capture lists raw metric names; a --set capture lists section labels."""
    decode = kernelscope.load(str(fx / "decode_gemm-details.csv"))[0]
    assert decode.flops is not None and decode.flops["tensor_bf16"] == 1_073_741_824
    assert decode.dram_bytes == pytest.approx(136.79e6, rel=0.001)  # Mbyte, 2 decimals
    assert decode.device is None  # the details page carries only the device index
    # section labels (Launch Statistics, Speed Of Light) map onto the same metrics
    assert decode.registers_per_thread == 168 and decode.shared_mem_per_block_bytes == pytest.approx(165_332, rel=1e-4)
    assert decode.sm_busy_pct == pytest.approx(10.23, abs=0.01) and decode.dram_clock_hz == pytest.approx(3.2e9)
    # our own sm__cycles_elapsed row; its section's "SM Frequency" (1.79 GHz) is gpc__cycles_elapsed: not mixed in
    assert decode.sm_clock_hz == pytest.approx(1.74e9)


def test_format_is_detected_by_content_not_name(fx: Path, tmp_path: Path) -> None:
    disguised = tmp_path / "report.txt"
    shutil.copy(fx / "gemm_bf16.ncu-rep", disguised)
    csv_as_rep = tmp_path / "export.ncu-rep"
    shutil.copy(fx / "gemm_bf16-raw.csv", csv_as_rep)
    a, b = kernelscope.load([str(disguised), str(csv_as_rep)])
    assert a.flops == b.flops and a.flops is not None


def test_several_inputs_merge_in_order(fx: Path) -> None:
    raws = list(iter_inputs([fx / "gemm_bf16.ncu-rep", fx / "decode_gemm-raw.csv", fx / "softmax.ncu-rep.gz"]))
    assert [r.name for r in raws] == [
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
        "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT",
        "cunn_SoftMaxForwardReg",
    ]


def test_directory_of_reports(fx: Path, tmp_path: Path) -> None:
    shutil.copy(fx / "fp8_gemm.ncu-rep", tmp_path / "a.ncu-rep")
    shutil.copy(fx / "decode_gemm.ncu-rep", tmp_path / "b.ncu-rep")
    shutil.copy(fx / "decode_gemm-raw.csv", tmp_path / "b-raw.csv")  # an export of b: not read twice
    assert len(kernelscope.load(str(tmp_path))) == 2


def test_short_names_from_demangled() -> None:
    full = ("void at::native::(anonymous namespace)::cunn_SoftMaxForwardReg<c10::BFloat16, float, "
            "c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue, long, 8>(T3 *, const T1 *, T5)")
    assert short_name(full) == "cunn_SoftMaxForwardReg"
    assert short_name("divergent_fma(float *, int)") == "divergent_fma"
    assert short_name("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT") == "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT"


def test_full_name_is_demangled_from_rep(fx: Path) -> None:
    rec = kernelscope.load(str(fx / "softmax.ncu-rep.gz"))[0]
    assert rec.name == "cunn_SoftMaxForwardReg"
    assert rec.name_full.startswith("void at::native::") and "cunn_SoftMaxForwardReg<" in rec.name_full


def test_a_report_moved_while_read_is_an_error(tmp_path: Path) -> None:
    """ncu_report reads each launch from the file when it is reached: one reached after the file was
    renamed comes back with no metrics at all, which is refused rather than read as unmeasured."""
    path = tmp_path / "many.ncu-rep"
    path.write_bytes(gzip.decompress((Path(__file__).parents[1] / "bench" / "data" / "many.ncu-rep.gz").read_bytes()))
    launches = ncu_rep.read(path)
    assert next(launches).device == "NVIDIA H200"
    path.rename(tmp_path / "moved.ncu-rep")
    with pytest.raises(InputError, match=r"launch 1 holds no metrics: the file is damaged, or was moved"):
        next(launches)


@pytest.mark.parametrize(("given", "expected"), [("nvjet_sm90", "nvjet_sm90"), ("gemm<é>", "gemm<é>"),
                                                 ("k\udcff\udcfe_bad", "k\ufffd\ufffd_bad")])
def test_report_strings_are_valid_text(given: str, expected: str) -> None:
    """ncu_report passes bytes of a damaged name that are not UTF-8 through as lone surrogates, which
    no writer can encode (orjson, the CSV's bytes, HTML): they become U+FFFD."""
    out = ncu_rep.text(given)
    assert out == expected and out.encode("utf-8")


def test_a_report_whose_name_is_not_utf8_is_read(fx: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ncu_report opens a report by a text name, which a legacy file name's bytes are not (Python
    holds them as surrogates): it is read through a link with a plain name, and the launch keeps
    its own path as its source. The temp folder is this test's own: tests in other workers make
    and remove kernelscope-* folders in the shared one meanwhile."""
    path = Path(os.fsdecode(os.fsencode(tmp_path) + b"/legacy-\xe9\xff.ncu-rep"))
    path.write_bytes((fx / "gemm_bf16.ncu-rep").read_bytes())
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    assert ncu_rep.launches(path) == 1
    (raw,) = ncu_rep.read(path)
    assert raw.device == "NVIDIA H200" and raw.source == str(path) and raw.metrics
    assert not list(temp.iterdir())  # the link's folder went with the read


def test_a_report_read_for_its_context_then_its_launches_loads_each_launch_once(
        fx: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """report_manifest (its context: the first launches' names) then iter_inputs (its launches): the
    launches the first loaded are handed to the second, not loaded again (ncu_report loads a launch
    each time it is asked, ~0.5-2 ms each, and never frees one; bench/scale.py), nor loaded again when the
    file is read again. A file changed in between is read anew."""
    from kernelscope.ingest import report_manifest

    mod = ncu_rep._ncu_report()
    asked: list[int] = []
    real = mod.IRange.action_by_idx
    monkeypatch.setattr(mod.IRange, "action_by_idx", lambda self, i: (asked.append(i), real(self, i))[1])
    report = tmp_path / "r.ncu-rep"
    shutil.copy(fx / "decode_gemm.ncu-rep", report)
    manifest = report_manifest(report)
    launches = list(iter_inputs([report]))
    assert manifest is not None and launches and len(asked) == len(launches)  # each loaded once
    asked.clear()
    assert list(iter_inputs([report])) == launches and not asked  # read again, unchanged: nothing loaded again
    assert [k.name for k in launches] == [k.name for k in iter_inputs([fx / "decode_gemm.ncu-rep"])]
    os.utime(report, ns=(1, 1))  # changed (its mtime): nothing kept is used
    asked.clear()
    assert len(list(iter_inputs([report]))) == len(launches) and len(asked) == len(launches)
