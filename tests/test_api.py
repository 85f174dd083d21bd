"""The Python API as a user meets it: typed for mypy once installed (py.typed in what setuptools
ships), listed by dir(), and DataFrames whose columns have real dtypes, per launch or per kernel."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pandas
import pytest

import kernelscope
from kernelscope.columns import FLAT

ROOT = Path(__file__).resolve().parents[1]
MANY = ROOT / "bench" / "data" / "many.ncu-rep.gz"

SNIPPET = '''\
import kernelscope

items, ceilings = kernelscope.analyze("gemm.ncu-rep")
reveal_type(items)
reveal_type(ceilings)
reveal_type(kernelscope.load)
reveal_type(kernelscope.to_dataframe(items, per="kernel"))
'''


def test_mypy_strict_sees_the_installed_packages_types(tmp_path: Path) -> None:
    """setuptools builds the package as a wheel holds it (build_py: modules and package data) into a
    plain directory; mypy, finding it on the path as an installed package, reads its types only
    because py.typed is there (without it: `import-untyped` and every type Any)."""
    site = tmp_path / "site"
    build = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "egg_info",
                            "--egg-base", str(tmp_path), "build_py", "--build-lib", str(site)],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr
    assert (site / "kernelscope" / "py.typed").is_file()
    (tmp_path / "snippet.py").write_text(SNIPPET)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")} | {"PYTHONPATH": str(site)}
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "snippet.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    revealed = [line.split("Revealed type is ", 1)[1] for line in run.stdout.splitlines() if "Revealed type" in line]
    assert revealed[:2] == ['"list[kernelscope.model.Assessment]"', '"kernelscope.ceilings.CeilingsFile"']
    assert revealed[2].endswith('-> list[kernelscope.model.KernelRecord]"')
    assert revealed[3] == '"pandas.core.frame.DataFrame"'
    assert "Any" not in run.stdout


def test_dir_lists_the_api_before_it_is_imported() -> None:
    listed = dir(kernelscope)
    assert {"analyze", "load", "to_dataframe", "Assessment", "KernelRecord", "KernelscopeError"} <= set(listed)
    assert set(kernelscope.__all__) <= set(listed)
    assert all(getattr(kernelscope, name) is not None for name in kernelscope.__all__)
    assert "TYPE_CHECKING" not in listed and "importlib" not in listed  # the module's plumbing is not API


@pytest.fixture(scope="module")
def many() -> list[kernelscope.Assessment]:
    items, _ = kernelscope.analyze(MANY)
    return items


def test_a_kernel_frame_groups_launches_ranked_by_time(many: list[kernelscope.Assessment]) -> None:
    df = kernelscope.to_dataframe(many, per="kernel")
    assert len(df) == 4
    assert df["rank"].tolist() == [1, 2, 3, 4]
    assert df["launches"].tolist() == [99, 100, 100, 1] and df["launches"].sum() == len(many) == 300
    assert df["name"].tolist() == ["vectorized_elementwise_kernel"] * 3 + \
        ["distribution_elementwise_grid_stride_kernel"]
    assert df["total_duration_ns"].tolist() == [424_576.0, 419_072.0, 415_392.0, 6_080.0]
    assert df["mean_duration_ns"][1] == pytest.approx(4_190.72)
    assert df["grid_x"].tolist() == [1024, 1024, 1024, 1056] and df["block_x"].tolist() == [128, 128, 128, 256]
    assert df["grid_y"].tolist() == df["grid_z"].tolist() == [1, 1, 1, 1]
    assert str(df["grid_x"].dtype) == "Int64" and str(df["launches"].dtype) == "Int64"
    assert df.attrs["units"]["total_duration_ns"] == "ns" and df.attrs["units"]["duration_ns"] == "ns"
    cols = list(df.columns)
    assert cols[0] == "rank" and cols[cols.index("name_full") + 1: cols.index("name_full") + 4] == \
        ["launches", "total_duration_ns", "mean_duration_ns"]


def test_a_launch_frame_keeps_the_documented_default(many: list[kernelscope.Assessment]) -> None:
    """One row a launch in input order, as before; its columns are kernels.csv's, grid and block split."""
    df = kernelscope.to_dataframe(many)
    assert len(df) == 300 and df["launch_id"].tolist() == list(range(300))
    flat = [c for c in FLAT if c not in ("grid", "block")]
    assert [c for c in df.columns if c not in {f"{d}_{a}" for d in ("grid", "block") for a in "xyz"}] == flat
    dims = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]
    assert df.loc[0, dims].tolist() == [1056, 1, 1, 256, 1, 1]


def test_columns_have_their_kinds_dtypes(fx: Path) -> None:
    """A launch with no ceilings (a KernelRecord): its verdict columns are unmeasured, NaN in a
    float64 column, never an all-None object column; lists stay lists."""
    records = kernelscope.load(fx / "gemm_bf16.ncu-rep")
    df = kernelscope.to_dataframe(records)
    assert df["pct_sol"].dtype == "float64" and math.isnan(df["pct_sol"][0])
    assert df["compute_ceiling_tflops"].dtype == "float64" and df["limiter.pct"].dtype == "float64"
    assert df["duration_ns"][0] == records[0].duration_ns and df["flops.tensor_bf16"].dtype == "float64"
    assert df["bound"].dtype == "string" and df["bound"].isna().all()
    assert df["provisional"].dtype == "boolean"
    items, _ = kernelscope.analyze(fx / "gemm_bf16.ncu-rep")
    judged = kernelscope.to_dataframe(items)
    assert judged["bound"].tolist() == ["compute"] and judged["pct_sol"][0] == pytest.approx(items[0].limiter.pct)
    evidence, levers = judged["evidence"][0], judged["next_levers"][0]
    assert isinstance(evidence, list) and evidence == list(items[0].evidence)
    assert isinstance(levers, list) and [lv["rule"] for lv in levers] == [lv.rule for lv in items[0].next_levers]
    assert judged["ncu_rules"][0][0]["rule"] == items[0].record.ncu_rules[0].rule
    kinds = judged.dtypes.astype(str).value_counts().to_dict()
    assert set(kinds) == {"float64", "Int64", "boolean", "string", "object"}
    empty = kernelscope.to_dataframe([], per="kernel")
    assert len(empty) == 0 and empty["grid_x"].dtype == "Int64" and empty["pct_sol"].dtype == "float64"


def test_a_kernel_frame_needs_judged_launches(fx: Path) -> None:
    records = kernelscope.load(fx / "decode_gemm.ncu-rep")
    with pytest.raises(kernelscope.KernelscopeError, match=r"per='kernel'\) groups judged launches: pass"):
        kernelscope.to_dataframe(records, per="kernel")
    with pytest.raises(kernelscope.KernelscopeError, match=r"per must be 'launch' or 'kernel', got 'kernels'"):
        kernelscope.to_dataframe(records, per="kernels")  # type: ignore[arg-type]
    assert isinstance(kernelscope.to_dataframe(iter(records)), pandas.DataFrame)
