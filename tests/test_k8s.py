"""k8s inspect / capture / cleanup against a real API server with real kubectl and helm
(../shared/kube, or whatever cluster KUBECONFIG points at). ncu does not exist in the emulated
containers, so a capture must fail cleanly there and leave nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelscope.capture.plan import Attach, CapturePlan
from kernelscope.cli import main
from kernelscope.k8s.inspect import inspect
from kernelscope.k8s.kubectl import Kube
from kernelscope.k8s.runbook import Runbook
from kernelscope.k8s.values import chart_path, sister_values

KUBE = Path(__file__).resolve().parents[1].parent / "shared" / "kube"
NS = "serving"


def kubectl(*args: str, check: bool = True) -> str:
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, check=check).stdout


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    started = None
    if not os.environ.get("KUBECONFIG"):
        if not (KUBE / "up").exists():
            pytest.skip(f"no test cluster: {KUBE}/up not found and KUBECONFIG unset")
        state = tmp_path_factory.mktemp("kube")
        subprocess.run([str(KUBE / "up")], env={**os.environ, "KUBE_STATE": str(state)}, check=True,
                       stdout=subprocess.DEVNULL)
        env = json.loads((state / "env.json").read_text())
        os.environ.update(KUBECONFIG=env["KUBECONFIG"], KUBECACHEDIR=env["KUBECACHEDIR"],
                          PATH=env["PATH_PREPEND"] + os.pathsep + os.environ["PATH"])
        started = state
    kubectl("create", "namespace", NS, check=False)
    node = kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}")
    kubectl("label", "node", node, "--overwrite", "nvidia.com/cuda.runtime-version.major=12",
            "nvidia.com/cuda.runtime-version.minor=8", "nvidia.com/cuda.driver-version.full=570.86.15")
    yield
    kubectl("delete", "namespace", NS, "--wait=false", check=False)
    if started is not None:
        subprocess.run([str(KUBE / "down"), str(started)], check=True)
        for key in ("KUBECONFIG", "KUBECACHEDIR"):
            os.environ.pop(key, None)


def deploy(name: str, replicas: int = 1, log: str = "INFO torch 2.9.0+cu128", env: dict[str, str] | None = None,
           args: list[str] | None = None) -> None:
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                 "command": ["sh", "-c", f"echo '{log}'; sleep 3600", "serve"], "args": args or [],
                 "env": [{"name": k, "value": v} for k, v in (env or {"HF_HOME": "/data"}).items()],
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"nodeSelector": {"nvidia.com/gpu.present": "true"}, "containers": [container],
                                          "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}}}}
    subprocess.run(["kubectl", "apply", "-f", "-"], input=json.dumps(doc), text=True, check=True, capture_output=True)
    kubectl("-n", NS, "rollout", "status", f"deploy/{name}", "--timeout=60s")
    deadline = time.monotonic() + 30
    while log.split()[0] not in kubectl("-n", NS, "logs", f"deploy/{name}", check=False):
        assert time.monotonic() < deadline, "no launch log"
        time.sleep(0.3)


def findings(name: str) -> dict[str, str]:
    ins = inspect(Kube(NS), f"deploy/{name}", "kernelscope-tools:ncu-2025.3.1")
    return {f.name: f.level for f in ins.findings} | {"path": ins.path}


def leftovers(release: str) -> str:
    pods = kubectl("-n", NS, "get", "pods", "-l", f"app.kubernetes.io/instance={release}", "-o", "name")
    releases = subprocess.run(["helm", "-n", NS, "list", "-q"], capture_output=True, text=True).stdout
    return (pods + (release if release in releases.split() else "")).strip()


def wait_gone(release: str) -> str:
    deadline = time.monotonic() + 20
    while leftovers(release) and time.monotonic() < deadline:
        time.sleep(0.3)
    return leftovers(release)


def test_inspect_plain_single_replica(cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    deploy("plain")
    f = findings("plain")
    assert f == {"replicas": "warn", "injection-free": "ok", "cuda-driver-skew": "ok", "tools-ncu": "info",
                 "path": "sister"}
    assert main(["k8s", "inspect", "-n", NS, "deploy/plain"]) == 0
    out = capsys.readouterr().out
    assert "application CUDA 12.8, node driver supports CUDA 12.8" in out and "path: sister" in out


def test_inspect_injection_in_use(cluster: None) -> None:
    deploy("profiled", env={"CUDA_INJECTION64_PATH": "/opt/other/libinjection.so"})
    f = findings("profiled")
    assert f["injection-in-use"] == "warn" and f["path"] == "sister"


def test_inspect_three_replicas_and_high_memory_utilisation(cluster: None) -> None:
    deploy("big", replicas=3, args=["--model", "m", "--gpu-memory-utilization", "0.92"])
    f = findings("big")
    assert f["replicas"] == "info" and f["gpu-memory-utilization"] == "warn"


def test_inspect_cuda_newer_than_driver_blocks(cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    deploy("newcuda", log="INFO vLLM: CUDA runtime version 13.0")
    assert findings("newcuda")["cuda-driver-skew"] == "block"
    assert main(["k8s", "inspect", "-n", NS, "deploy/newcuda"]) == 1
    assert "built for CUDA 13.0 but node" in capsys.readouterr().out
    assert main(["k8s", "capture", "-n", NS, "deploy/newcuda", "--kernel", "nvjet", "--out", "/tmp/x"]) == 2


def test_chart_lints_and_templates(cluster: None, tmp_path: Path) -> None:
    deploy("plain")
    deploy("profiled", env={"CUDA_INJECTION64_PATH": "/opt/other/libinjection.so"})
    ins = inspect(Kube(NS), "deploy/profiled", "tools:ncu-2025.3.1")
    vf = tmp_path / "values.json"
    vf.write_text(json.dumps(sister_values(ins, "nvcr.io/nvidia/pytorch:25.10-py3", "ngc-secret", None)))
    lint = subprocess.run(["helm", "lint", chart_path(), "-f", str(vf)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    out = subprocess.run(["helm", "template", "sis", chart_path(), "-f", str(vf)], capture_output=True, text=True,
                         check=True).stdout
    assert "replicas: 1" in out and "app: profiled" not in out  # the production Service's selector never matches
    assert "CUDA_INJECTION64_PATH" not in out and "emptyDir: {}" in out and "name: ngc-secret" in out
    assert '- "launch"' not in out and "- launch" in out and "nvidia.com/gpu" in out


def test_dry_run_lists_steps_and_changes_nothing(cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    deploy("plain")
    before = kubectl("-n", NS, "get", "pods", "-o", "name")
    assert main(["k8s", "capture", "-n", NS, "deploy/plain", "--kernel", "fmhaSm90", "--kernel", "regex:nvjet",
                 "--out", "/tmp/never", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "policy (single-replica target): launch count <= 3" in out
    for step in ("[change] helm -n serving upgrade --install plain-ncu",
                 "--share-processes --container=kernelscope-ncu",
                 "--kernel-name fmhaSm90", "--mode attach --hostname 127.0.0.1 --port 49152",
                 "kubectl -n serving cp '<sister-pod>:/tmp/kernelscope/01-fmhaSm90.ncu-rep'",
                 "[change] kubectl -n serving delete pod '<sister-pod>'",
                 "[change] helm -n serving uninstall plain-ncu"):
        assert step in out, step
    assert kubectl("-n", NS, "get", "pods", "-o", "name") == before and not leftovers("plain-ncu")
    assert not Path("/tmp/never").exists()


def test_policy_refuses_before_anything_runs(cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    deploy("plain")
    assert main(["k8s", "capture", "-n", NS, "deploy/plain", "--kernel", "k", "--launch-count", "4",
                 "--out", "/tmp/x", "--dry-run"]) == 2
    assert main(["k8s", "capture", "-n", NS, "deploy/plain", "--kernel", "k", "--set", "full", "--out", "/tmp/x"]) == 2
    assert main(["k8s", "capture", "-n", NS, "deploy/plain", "--out", "/tmp/x"]) == 2
    err = capsys.readouterr().err
    assert "--launch-count 4 > 3" in err and "--set full not allowed" in err and "unscoped" in err
    assert not leftovers("plain-ncu")


def test_full_sequence_fails_cleanly_without_ncu(cluster: None, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    deploy("plain")
    out = tmp_path / "live"
    code = main(["k8s", "capture", "-n", NS, "deploy/plain", "--kernel", "fmhaSm90", "--out", str(out),
                 "--ncu-home", "/etc", "--timeout", "60"])
    err = capsys.readouterr().err
    assert code == 2 and "no working ncu in the sidecar" in err
    assert wait_gone("plain-ncu") == "" and not out.exists()


@pytest.mark.parametrize("step", ["install", "running", "sidecar"])
def test_cleanup_after_interrupt_at_each_step(cluster: None, tmp_path: Path, step: str) -> None:
    deploy("plain")
    kube = Kube(NS, timeout=60)
    ins = inspect(kube, "deploy/plain", "tools")
    plan = CapturePlan(kernels=("k",), attach=Attach("127.0.0.1", 49152))
    rb = Runbook(kube, ins, plan, f"ks-{step}", "tools", ncu_home="/etc", wait_s=60, interrupt_after=step)
    with pytest.raises(KeyboardInterrupt):
        rb.run(tmp_path / "b", ["test"])
    assert wait_gone(f"ks-{step}") == ""
    assert any(s.argv[3:5] == ["uninstall", f"ks-{step}"] for s in kube.steps)
    if step == "sidecar":
        assert any("rm" in s.argv and "/tmp/kernelscope" in s.argv for s in kube.steps)  # files removed first


def test_cleanup_after_helm_failure(cluster: None, tmp_path: Path) -> None:
    deploy("plain")
    kube = Kube(NS, timeout=60)
    ins = inspect(kube, "deploy/plain", "tools")
    plan = CapturePlan(kernels=("k",), attach=Attach("127.0.0.1", 49152))
    with pytest.raises(Exception, match="failed"):
        Runbook(kube, ins, plan, "Bad_Name", "tools", wait_s=60).run(tmp_path / "b", ["test"])
    assert any(s.argv[3:5] == ["uninstall", "Bad_Name"] for s in kube.steps)


def test_cleanup_command_removes_a_left_behind_release(cluster: None, tmp_path: Path) -> None:
    deploy("plain")
    ins = inspect(Kube(NS), "deploy/plain", "tools")
    vf = tmp_path / "v.json"
    vf.write_text(json.dumps(sister_values(ins, "tools", None, "/etc")))
    subprocess.run(["helm", "-n", NS, "upgrade", "--install", "left-behind", chart_path(), "-f", str(vf)], check=True,
                   capture_output=True)
    assert main(["k8s", "cleanup", "-n", NS, "--release", "left-behind", "--timeout", "60"]) == 0
    assert wait_gone("left-behind") == ""
