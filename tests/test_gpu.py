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
WORKLOADS = [sys.executable, "tests/fixtures/make/workloads.py"]


def ks(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernelscope.cli", *argv], capture_output=True, text=True,
                          timeout=600)


def manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def test_harness_gemm_counts_2mnk(tmp_path: Path) -> None:
    out = tmp_path / "gemm"
    res = ks("op", "gemm", "--m", "2048", "--n", "4096", "--k", "1024", "--out", str(out))
    assert res.returncode == 0, res.stderr
    (rec,) = kernelscope.load(out)
    assert rec.flops is not None and rec.flops["tensor_bf16"] == 2 * 2048 * 4096 * 1024
    assert rec.tensor_path == "wgmma" and rec.sm_clock_hz and rec.shared_mem_driver_bytes == 1024
    m = manifest(out)
    assert m["analytic"]["flops"] == 2 * 2048 * 4096 * 1024
    assert m["ncu"]["version"].startswith("20") and m["gpu"]["name"] and m["gpu"]["driver_version"]
    assert m["captures"][0]["passes"] and m["captures"][0]["exports"]


def test_op_iters_and_warmup_are_honoured(tmp_path: Path) -> None:
    """--warmup N is the harness's N warm-up calls and the capture's --launch-skip N; --iters reaches
    the harness (both used to be lost between the CLI and the harness)."""
    out = tmp_path / "w"
    res = ks("op", "gemm", "--m", "1024", "--n", "1024", "--k", "1024", "--warmup", "5", "--iters", "4",
             "--out", str(out))
    assert res.returncode == 0, res.stderr
    m = manifest(out)
    assert m["scoping"]["launch_skip"] == 5 and m["analytic"]["warmup"] == 5 and m["analytic"]["iters"] == 4
    assert "--warmup 5 --iters 4" in " ".join(m["target"])
    assert len(kernelscope.load(out)) == 1


def test_fp8_harness_against_fp8_ceiling(tmp_path: Path) -> None:
    out = tmp_path / "fp8"
    res = ks("op", "gemm", "--m", "256", "--n", "4096", "--k", "8192", "--dtype", "fp8", "--out", str(out))
    assert res.returncode == 0, res.stderr
    (a,), _ = kernelscope.analyze(out)
    assert a.record.flops is not None and a.record.flops["tensor_fp8"] == 2 * 256 * 4096 * 8192
    assert a.compute_ceiling_key is not None and ".compute.fp8" in a.compute_ceiling_key


def test_env_wrapper_trap_reproduced_and_fixed(tmp_path: Path) -> None:
    app = [*WORKLOADS, "softmax"]
    raw = subprocess.run([NCU, "--clock-control", "none", "--target-processes", "application-only",
                          "--kernel-name", "regex:oft", "env", "FOO=1", *app], capture_output=True, text=True)
    assert "No kernels were profiled" in raw.stdout + raw.stderr
    out = tmp_path / "env"
    res = ks("capture", "--kernel", "regex:[Ss]oft[Mm]ax", "--launch-skip", "2", "--target-processes",
             "application-only", "--out", str(out), "--", "env", "FOO=1", "API_TOKEN=sk-secret-value", *app)
    assert res.returncode == 0, res.stderr
    assert "removed from the program" in res.stderr
    m = manifest(out)
    assert m["env_keys_set"] == ["API_TOKEN", "FOO"] and "sk-secret-value" not in json.dumps(m)
    assert kernelscope.load(out)[0].name == "cunn_SoftMaxForwardReg"


def test_filter_matching_nothing_lists_kernels(tmp_path: Path) -> None:
    res = ks("capture", "--kernel", "no_such_kernel", "--out", str(tmp_path / "x"), "--", *WORKLOADS, "softmax")
    assert res.returncode == 2
    assert "filter-matched-nothing" in res.stderr and "cunn_SoftMaxForwardReg" in res.stderr
    assert not (tmp_path / "x").exists()


def test_matches_skipped_and_what_worked_is_kept(tmp_path: Path) -> None:
    """Two kernels, the second skipped past its last launch: the bundle keeps the first, says
    why the second failed (skip, not a bad filter), and the command exits 1."""
    out = tmp_path / "two"
    res = ks("capture", "--kernel", "regex:[Ss]oft[Mm]ax", "--kernel", "regex:distribution", "--launch-skip", "3",
             "--out", str(out), "--", *WORKLOADS, "softmax")
    assert res.returncode == 1, res.stderr
    m = manifest(out)
    ok, failed = m["captures"]
    assert ok["report"] and not ok["error"] and failed["report"] is None
    assert "skipped-by-launch-skip" in failed["causes"] or "filter-matched-nothing" in failed["causes"]
    assert [r.name for r in kernelscope.load(out)] == ["cunn_SoftMaxForwardReg"]
    skipped = ks("capture", "--kernel", "regex:[Ss]oft[Mm]ax", "--launch-skip", "30", "--out", str(tmp_path / "s"),
                 "--", *WORKLOADS, "softmax")
    assert skipped.returncode == 2 and "skipped-by-launch-skip" in skipped.stderr


def test_attach_flow_on_localhost(tmp_path: Path) -> None:
    """launch -> an attach capture of two kernels (two sessions, one launch each) -> the process keeps
    serving and takes a third session (ncu 2025.3.1, each client ended once its report is whole)."""
    evidence = Path(os.environ.get("KERNELSCOPE_EVIDENCE_DIR", tmp_path))
    applog = (evidence / "attach-app.log").open("w")
    app = subprocess.Popen([sys.executable, "-m", "kernelscope.cli", "launch", "--",
                            sys.executable, "bench/workloads/serve_loop.py", "--seconds", "40"],
                           stdout=applog, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out = tmp_path / "live"
        res = ks("capture", "--attach", "127.0.0.1:49152", "--kernel", "regex:nvjet|gemm", "--kernel",
                 "regex:norm", "--out", str(out))
        assert res.returncode == 0, res.stderr
        names = [r.name for r in kernelscope.load(out)]
        assert len(names) == 2 and "norm" in names[1] and ("nvjet" in names[0] or "gemm" in names[0]), names
        assert len(manifest(out)["captures"]) == 2  # one session each
        again = ks("capture", "--attach", "127.0.0.1:49152", "--kernel", "regex:norm", "--out", str(tmp_path / "b"))
        assert again.returncode == 0, again.stderr
        assert app.poll() is None  # still serving
        app.wait(timeout=120)  # the loop ends by itself after 40 s
    finally:
        if app.poll() is None:
            os.killpg(app.pid, signal.SIGKILL)
        applog.close()
    log = (evidence / "attach-app.log").read_text()
    assert log.count("us_per_step") > 10 and '"event": "exit"' in log


@pytest.mark.skipif(not os.environ.get("KERNELSCOPE_GPU_KUBE"), reason="needs ../shared/kube in GPU-host mode "
                    "(KERNELSCOPE_GPU_KUBE=1 after gpu-up)")
def test_live_pod_wrap_end_to_end(tmp_path: Path) -> None:
    """bench/device/k8s_gpu_e2e.py: a 2-worker server in a pod, captured through a wrapped sister."""
    res = subprocess.run([sys.executable, "bench/device/k8s_gpu_e2e.py", str(tmp_path)], capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    said = (tmp_path / "capture.txt").read_text()[-3000:]  # the capture's own words, when it fails
    assert result["capture_exit"] in (0, 1) and result["production_untouched"], (result, said)
    assert result["left_behind"] == {"pods": [], "releases": []}
    assert any("nvjet" in k["name"] for k in result["kernels"])
