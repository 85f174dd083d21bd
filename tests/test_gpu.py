"""GPU tests: run where ncu and a CUDA GPU exist (the GPU machine), skipped elsewhere.

    PYTHONPATH=src python3 -m pytest -m gpu tests/test_gpu.py
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import kernelscope

NCU = shutil.which("ncu") or ("/usr/local/cuda/bin/ncu" if Path("/usr/local/cuda/bin/ncu").exists() else None)
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(NCU is None, reason="needs ncu and an NVIDIA GPU")]


def ks(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernelscope.cli", *argv], capture_output=True, text=True,
                          timeout=600)


def test_harness_gemm_counts_2mnk(tmp_path: Path) -> None:
    out = tmp_path / "gemm"
    res = ks("op", "gemm", "--m", "2048", "--n", "4096", "--k", "1024", "--out", str(out))
    assert res.returncode == 0, res.stderr
    (rec,) = kernelscope.load(str(out))
    assert rec.flops is not None and rec.flops["tensor_bf16"] == 2 * 2048 * 4096 * 1024
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["analytic"]["flops"] == 2 * 2048 * 4096 * 1024
    assert manifest["ncu"]["version"].startswith("20") and manifest["gpu_name"]


def test_fp8_harness_against_fp8_ceiling(tmp_path: Path) -> None:
    out = tmp_path / "fp8"
    res = ks("op", "gemm", "--m", "256", "--n", "4096", "--k", "8192", "--dtype", "fp8", "--out", str(out))
    assert res.returncode == 0, res.stderr
    (a,), _ = kernelscope.analyze(str(out))
    assert a.record.flops is not None and a.record.flops["tensor_fp8"] == 2 * 256 * 4096 * 8192
    assert a.compute_ceiling_key is not None and a.compute_ceiling_key.endswith(".compute.fp8")


def test_env_wrapper_trap_reproduced_and_fixed(tmp_path: Path) -> None:
    app = [sys.executable, "tests/fixtures/make/workloads.py", "softmax"]
    raw = subprocess.run([NCU, "--clock-control", "none", "--target-processes", "application-only",
                          "--kernel-name", "regex:oft", "env", "FOO=1", *app], capture_output=True, text=True)
    assert "No kernels were profiled" in raw.stdout + raw.stderr
    out = tmp_path / "env"
    res = ks("capture", "--kernel", "regex:[Ss]oft[Mm]ax", "--launch-skip", "2", "--target-processes",
             "application-only", "--out", str(out), "--", "env", "FOO=1", *app)
    assert res.returncode == 0, res.stderr
    assert "removed from the program" in res.stderr
    assert json.loads((out / "manifest.json").read_text())["env_keys_set"] == ["FOO"]
    assert kernelscope.load(str(out))[0].name == "cunn_SoftMaxForwardReg"


def test_filter_matching_nothing_lists_kernels(tmp_path: Path) -> None:
    res = ks("capture", "--kernel", "no_such_kernel", "--out", str(tmp_path / "x"), "--",
             sys.executable, "tests/fixtures/make/workloads.py", "softmax")
    assert res.returncode == 2
    assert "filter-matched-nothing" in res.stderr and "cunn_SoftMaxForwardReg" in res.stderr
    assert not (tmp_path / "x").exists()


def test_attach_flow_on_localhost(tmp_path: Path) -> None:
    """launch -> one attach capture of two kernels -> the process keeps serving; a second attach
    session is refused by ncu 2025.3.1 and kernelscope says why. The app's step-time log is kept
    in $KERNELSCOPE_EVIDENCE_DIR when set."""
    evidence = Path(os.environ.get("KERNELSCOPE_EVIDENCE_DIR", tmp_path))
    applog = (evidence / "attach-app.log").open("w")
    app = subprocess.Popen([sys.executable, "-m", "kernelscope.cli", "launch", "--",
                            sys.executable, "bench/serve_loop.py", "--seconds", "40"],
                           stdout=applog, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out = tmp_path / "live"
        res = ks("capture", "--attach", "127.0.0.1:49152", "--kernel", "regex:nvjet|gemm", "--kernel",
                 "regex:norm", "--launch-count", "1", "--out", str(out))
        assert res.returncode == 0, res.stderr
        names = [r.name for r in kernelscope.load(str(out))]
        assert len(names) == 2 and any("norm" in n for n in names) and any("nvjet" in n or "gemm" in n for n in names)
        again = ks("capture", "--attach", "127.0.0.1:49152", "--kernel", "regex:norm", "--out", str(tmp_path / "b"))
        assert again.returncode == 2 and "no-attachable-process" in again.stderr
        assert app.poll() is None  # still serving
        app.wait(timeout=120)  # the loop ends by itself after 40 s
    finally:
        if app.poll() is None:
            os.killpg(app.pid, signal.SIGKILL)
        applog.close()
    log = (evidence / "attach-app.log").read_text()
    assert log.count("us_per_step") > 10 and '"event": "exit"' in log
