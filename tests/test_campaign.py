"""Campaign cells, idempotent import, strict gates and the Parquet export, on real fixtures."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import duckdb
import pytest
import yaml

from kernelscope.campaign.check import krhpa_problems
from kernelscope.cli import main

GOOD_KRHPA = {"candidate": {"name": "fp8 weights", "K": 2, "R": 3, "H": 2, "P": 1, "A": 4},
              "baseline": {"name": "bf16", "K": 1, "R": 1, "H": 1, "P": 1, "A": 1}}


def imp(root: Path, cell: str, *sources: Path, slug: str = "decode-h200") -> int:
    argv = ["campaign", "import-ncu", "--root", str(root), "--campaign", slug, "--cell-id", cell]
    for s in sources:
        argv += ["--bundle", str(s)]
    return main(argv)


def cell_doc(root: Path, cell: str) -> dict:
    return json.loads((root / "decode-h200" / "cells" / cell / "ncu_kernels.json").read_text())


def set_config(root: Path, **changes: object) -> None:
    path = root / "decode-h200" / "config.yaml"
    doc = yaml.safe_load(path.read_text())
    doc.update(changes)
    path.write_text(yaml.safe_dump(doc))


def strict(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["campaign", "check", "--root", str(root), "--campaign", "decode-h200", "--strict"])
    return code, capsys.readouterr().out


def test_a_campaign_whose_import_failed_fails_the_strict_check(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """An import of a file that is no report fails, leaving the campaign's config and no cell: its
    gates passed on nothing before (0 cells, 0 failures, exit 0)."""
    junk = tmp_path / "junk.ncu-rep"
    junk.write_bytes(b"\x00not a report" * 20)
    assert imp(tmp_path, "c1", junk) == 2
    code, out = strict(tmp_path, capsys)
    assert code == 1 and "no cell: nothing was imported" in out and "0 cell(s), 1 failure(s)" in out


def test_cell_fields_from_real_gemm(fx: Path, tmp_path: Path) -> None:
    assert imp(tmp_path, "c1", fx / "gemm_bf16.ncu-rep", fx / "decode_gemm-raw.csv") == 0
    doc = cell_doc(tmp_path, "c1")
    assert doc["schema_version"] == 4 and doc["hw_key"] == "h200-sxm" and len(doc["captured_sources"]) == 2
    gemm, decode = doc["kernels"]
    assert gemm["category"] == "GEMM/cuBLAS" and gemm["flops"]["tensor_bf16"] == 274_877_906_944
    assert gemm["duration_ns"] == 338_432 and gemm["source"] == "sources/00-gemm_bf16.ncu-rep"
    assert gemm["bound"] == "compute" and gemm["ceiling_key"] == "h200-sxm.compute.bf16@wgmma"
    assert gemm["pct_sol_compute"] == pytest.approx(100 * 274_877_906_944 / 338_432e-9 / 989e12)  # the datasheet's
    # the verdict's roof: the bf16 peak at the 1,830 MHz it is quoted at, scaled to the clock the GEMM ran at
    at_clock = 989e12 * gemm["sm_clock_hz"] / 1.83e9
    assert gemm["pct_sol"] == pytest.approx(100 * 274_877_906_944 / 338_432e-9 / at_clock)
    assert gemm["registers_per_thread"] == 168 and gemm["occupancy_limiter"] == "registers+shared_mem"
    assert decode["dram_bytes"] == 136_788_736 and decode["ceiling_key"] == "h200-sxm.memory.hbm"
    assert decode["arithmetic_intensity"] == pytest.approx(1_073_741_824 / 136_788_736)
    assert decode["dram_throughput_pct"] == pytest.approx(80.4, abs=0.5)


def test_import_is_idempotent_and_accepts_every_input_kind(fx: Path, tmp_path: Path) -> None:
    assert imp(tmp_path, "c1", fx / "bundle_attn_causal") == 0
    first = (tmp_path / "decode-h200/cells/c1/ncu_kernels.json").read_bytes()
    assert imp(tmp_path, "c1", fx / "bundle_attn_causal") == 0
    assert (tmp_path / "decode-h200/cells/c1/ncu_kernels.json").read_bytes() == first
    # the export names no device: its CC 9.0, 132 SMs and 3.2 GHz DRAM clock pick the H200's ceilings
    assert imp(tmp_path, "c2", fx / "decode_gemm-details.csv") == 0
    assert main(["campaign", "import-ncu", "--root", str(tmp_path), "--campaign", "decode-h200", "--cell-id", "c2",
                 "--bundle", str(fx / "decode_gemm-details.csv"), "--hw", "h200-sxm"]) == 0
    assert not list((tmp_path / "decode-h200/cells").glob(".*"))  # no staging left behind


@pytest.mark.parametrize("bad", ["../escape", "a/b", "..", ".hidden"])
def test_slugs_and_cell_ids_are_checked(fx: Path, tmp_path: Path, bad: str) -> None:
    assert imp(tmp_path, bad, fx / "gemm_bf16.ncu-rep") == 2
    assert imp(tmp_path, "c1", fx / "gemm_bf16.ncu-rep", slug=bad) == 2
    assert not any(tmp_path.rglob("ncu_kernels.json"))


def test_strict_gate_each_reason_then_pass(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    imp(tmp_path, "base", fx / "gemm_bf16.ncu-rep")
    imp(tmp_path, "basic", fx / "gemm_basic.ncu-rep")
    imp(tmp_path, "cand", fx / "fp8_gemm.ncu-rep")
    # 1. an L4 campaign without a krhpa block
    code, out = strict(tmp_path, capsys)
    assert code == 1 and "krhpa block missing" in out
    # 2. a krhpa block with a boolean and an out-of-range axis
    bad = json.loads(json.dumps(GOOD_KRHPA))
    bad["candidate"]["K"], bad["baseline"]["A"], bad["baseline"]["name"] = True, 5, " "
    set_config(tmp_path, krhpa=bad)
    code, out = strict(tmp_path, capsys)
    assert code == 1 and "krhpa.candidate.K must be an integer 1..4, got True" in out
    assert "krhpa.baseline.A must be an integer 1..4, got 5" in out and "krhpa.baseline.name" in out
    # 3. a %SoL claim resting only on unmeasured kernels
    set_config(tmp_path, krhpa=GOOD_KRHPA, claims=[{"cell": "basic", "pct_sol": 80}])
    code, out = strict(tmp_path, capsys)
    assert code == 1 and "rests only on unmeasured or provisional kernels" in out
    # 4. a comparison whose arms differ in context (different ncu metric sets here)
    set_config(tmp_path, claims=[{"cell": "base", "pct_sol": 82}],
               comparisons=[{"baseline": "base", "candidate": "basic"}])
    code, out = strict(tmp_path, capsys)
    assert code == 1 and "arms differ in context" in out
    # a complete campaign passes
    set_config(tmp_path, comparisons=[{"baseline": "base", "candidate": "cand"}])
    code, out = strict(tmp_path, capsys)
    assert code == 0 and "0 failure(s)" in out, out


def test_h1_suggested_for_gemm_without_tensor_pipe() -> None:
    from kernelscope.campaign.check import h_suggestions

    cells = {"c": {"kernels": [{"name": "gemv_fp32", "category": "GEMM/cuBLAS", "tensor_pipe_active_pct": 0.1}]}}
    assert h_suggestions(cells) == ["suggest H1: c/gemv_fp32 is GEMM-class with tensor pipe 0.10 % active"]
    assert krhpa_problems(GOOD_KRHPA) == []


def test_export_parquet_reads_back_in_duckdb(fx: Path, tmp_path: Path) -> None:
    imp(tmp_path, "c1", fx / "gemm_bf16.ncu-rep")
    imp(tmp_path, "c2", fx / "fp8_gemm.ncu-rep")
    set_config(tmp_path, context={"model": "llama-3-8b", "hardware": "1x H200"})
    out = tmp_path / "pq"
    argv = ["campaign", "export", "--root", str(tmp_path), "--campaign", "decode-h200", "--parquet", str(out)]
    assert main(argv) == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet")) == [
        "campaign=decode-h200/cell_id=c1/kernels.parquet", "campaign=decode-h200/cell_id=c2/kernels.parquet"]
    rows = duckdb.sql(f"select cell_id, \"flops.tensor_fp8\", ceiling_key, context_model, cell_gpu_name "
                      f"from read_parquet('{out}/*/*/*.parquet', hive_partitioning = true) order by cell_id").fetchall()
    assert rows == [("c1", 0.0, "h200-sxm.compute.bf16@wgmma", "llama-3-8b", "NVIDIA H200"),
                    # latency-bound (a grid under one wave): the nearest roof is L2's data path
                    ("c2", 17_179_869_184.0, "lts__t_sectors.avg.pct_of_peak_sustained_elapsed", "llama-3-8b",
                     "NVIDIA H200")]


@pytest.mark.parametrize(("column", "key"), [("flops", "tensor_fp6"), ("warp_stalls", "new_reason"),
                                           ("analytic", "op")])
def test_a_cell_map_key_the_spec_lacks_is_refused(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   column: str, key: str) -> None:
    """A hand-edited cell, or one from another version: a map key the column spec does not name
    would have no flat column, so export would drop it silently; the cell is refused instead."""
    imp(tmp_path, "c1", fx / "gemm_bf16.ncu-rep")
    path = tmp_path / "decode-h200" / "cells" / "c1" / "ncu_kernels.json"
    doc = json.loads(path.read_text())
    doc["kernels"][0][column] = {**(doc["kernels"][0][column] or {}), key: 1.0}
    path.write_text(json.dumps(doc))
    out = tmp_path / "pq"
    argv = ["campaign", "export", "--root", str(tmp_path), "--campaign", "decode-h200", "--parquet", str(out)]
    assert main(argv) == 2 and not out.exists()
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"kernelscope: error: {path}: campaign cell: kernels[0].{column}: '{key}' not among its keys")


def test_the_guides_duckdb_query_over_many_campaigns(fx: Path, tmp_path: Path) -> None:
    """The guide's query, as printed there, over two campaigns exported into one directory: files
    of different campaigns (different columns, a cell's all-null figures) union by name."""
    for slug, cell, src in (("decode-h200", "c1", "decode_gemm.ncu-rep"), ("prefill-h200", "c1", "gemm_bf16.ncu-rep"),
                            ("prefill-h200", "c2", "attention_cudnn.ncu-rep")):
        assert main(["campaign", "import-ncu", "--root", str(tmp_path), "--campaign", slug, "--cell-id", cell,
                     "--bundle", str(fx / src)]) == 0
        assert main(["campaign", "export", "--root", str(tmp_path), "--campaign", slug, "--parquet",
                     str(tmp_path / "exports")]) == 0
    guide = (Path(__file__).parents[1] / "docs" / "guide.md").read_text()
    query = re.search(r"```sql\n(.*?)```", guide, re.S)
    assert query is not None
    con = duckdb.connect()
    con.execute(f"set file_search_path = '{tmp_path}'")
    rows = con.sql(query.group(1)).fetchall()
    assert {r[0] for r in rows} == {"decode-h200", "prefill-h200"}
    assert all(isinstance(r[2], float) and r[3] > 0 for r in rows if r[2] is not None)


def test_render_campaign_report(fx: Path, tmp_path: Path) -> None:
    imp(tmp_path, "c1", fx / "bundle_attn_causal")
    imp(tmp_path, "c2", fx / "fp8_gemm.ncu-rep")
    set_config(tmp_path, context={"model": "toy-attention", "quantisation": "bf16"})
    assert main(["campaign", "render", "--root", str(tmp_path), "--campaign", "decode-h200"]) == 0
    text = (tmp_path / "decode-h200" / "report.html").read_text()
    assert "toy-attention" in text and "<td>parallelism</td><td class='unknown'>unknown</td>" in text
    assert "<th class=''>cell</th>" in text  # the kernel table says which cell each kernel is from
    cells = re.findall(r"<tr id='k(\d)'>.*?<td class='name'>(c\d)</td>", text)
    assert sorted(cells) == [("1", "c1"), ("2", "c2")]
    assert str(tmp_path) not in text and "/usr/" not in text and sys.executable not in text  # no machine paths
    assert "python3 -m kernelscope.capture.harness attention" in text  # the workload, by program name
