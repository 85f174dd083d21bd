"""k8s inspect / capture / cleanup against a real API server with real kubectl and helm
(../shared/kube, or whatever cluster KUBECONFIG points at). Containers there run no images and no
GPU code: the toy deployments' image "ships" a stand-in ncu (tests/k8s/fake-ncu.sh) that writes a
real H200 report, so every kubectl/helm step of the pod transport runs for real; the GPU run of the
same flow is bench/device/k8s_gpu_e2e.py (tests/test_gpu.py)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hostile import TALLY
from kernelscope.cli import main
from kernelscope.k8s import sister, transport, watch
from kernelscope.k8s.inspect import inspect
from kernelscope.k8s.kubectl import Kube
from toyk8s import FAKE_NCU, fake_ncu_configmap, planned_pods, port, toy

KUBE = Path(__file__).resolve().parents[1].parent / "shared" / "kube"
NS = "serving"
VLLM = Path(__file__).parent / "k8s" / "vllm-tp8.yaml"
OWNED = f"{sister.OWNER_LABEL}={sister.OWNER}"


def kubectl(*args: str, check: bool = True, stdin: str | None = None) -> str:
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, check=check, input=stdin).stdout


def apply(doc: Any) -> None:
    kubectl("apply", "-f", "-", stdin=json.dumps(doc) if not isinstance(doc, str) else doc)


@pytest.fixture(scope="session")  # one cluster a worker, for the modules it runs that drive one (conftest.py)
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
    kubectl("create", "-f", "-", stdin=json.dumps(fake_ncu_configmap(NS)), check=False)  # too big for apply
    # a capture in this process polls its sister every 0.5 s, not a real cluster's 2 s: this one's pods
    # change within fakenode's 0.3 s poll, and each capture waits two polls for a report to stop growing
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(transport, "POLL_S", 0.5)
        yield
    kubectl("delete", "namespace", NS, "--wait=false", check=False)
    if started is not None:
        subprocess.run([str(KUBE / "down"), str(started)], check=True)
        for key in ("KUBECONFIG", "KUBECACHEDIR"):
            os.environ.pop(key, None)


def deploy(doc: dict[str, Any]) -> str:
    apply(doc)
    name = doc["metadata"]["name"]
    kubectl("-n", NS, "rollout", "status", f"deploy/{name}", "--timeout=60s")
    deadline = time.monotonic() + 30
    while "torch" not in kubectl("-n", NS, "logs", f"deploy/{name}", "-c", "server", check=False):
        assert time.monotonic() < deadline, "no launch log"
        time.sleep(0.3)
    return name


def production(name: str) -> dict[str, Any]:
    pod = json.loads(kubectl("-n", NS, "get", "pods", "-l", f"app={name}", "-o", "json"))["items"][0]
    gen = json.loads(kubectl("-n", NS, "get", "deploy", name, "-o", "json"))["metadata"]["generation"]
    return {"uid": pod["metadata"]["uid"], "restarts": [c.get("restartCount") for c in pod["status"]
                                                        ["containerStatuses"]], "generation": gen}


def leftovers() -> str:
    pods = kubectl("-n", NS, "get", "pods", "-l", OWNED, "-o", "name")
    releases = subprocess.run(["helm", "-n", NS, "list", "-q", "--deployed", "--failed", "--pending",
                               "--uninstalling", "-l", OWNED], capture_output=True, text=True).stdout
    return (pods + releases).strip()


def wait_gone(timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.3)
    return leftovers()


def capture(name: str, *extra: str, release: str = "ks-test") -> list[str]:
    return ["k8s", "capture", "-n", NS, f"deploy/{name}", "--ncu-in-image", FAKE_NCU, "--release", release,
            "--warmup-requests", "2", "--warmup-path", "/", "--warmup-port", str(port(release)), "--timeout", "60",
            *extra]


# -- inspect and the sister spec ----------------------------------------------------------------
def test_inspect_realistic_vllm_tp8(cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    kubectl("apply", "-f", str(VLLM))
    kubectl("-n", NS, "rollout", "status", "deploy/llama", "--timeout=60s")
    kube = Kube(NS)
    ins = inspect(kube, "deploy/llama", sister.DEFAULT_TOOLS_IMAGE)
    assert ins.container == "vllm" and ins.tensor_parallel == 8 and ins.server_port == 8000 and ins.gpus == 8
    levels = {f.name: f.level for f in ins.findings}
    assert levels["gpu-memory-utilization"] == "warn" and ins.strategy == "wrap"
    assert {"rbac", "gpu-capacity", "quota", "limit-range", "dcgm-exporter", "counter-permission"} <= set(levels)
    # this API server serves no ResourceQuota or LimitRange: said, never "ok"
    assert levels["quota"] == levels["limit-range"] == "unchecked" and levels["api-key"] == "info"
    # nor SelfSubjectAccessReview: every permission unchecked, from one kubectl process
    assert levels["rbac"] == "unchecked"
    assert sum(s.argv[3:5] == ["create", "-f"] for s in kube.steps) == 1
    assert main(["k8s", "inspect", "-n", NS, "deploy/llama"]) == 0
    out = capsys.readouterr().out
    assert "sk-live-do-not-leak" not in out and "--api-key <redacted>" in out  # inspect prints no secret


def test_a_node_label_that_is_no_version_is_unknown(cluster: None) -> None:
    """The GPU operator's CUDA label set by hand to text was compared as a number (a traceback)."""
    deploy(toy("labelled-node", NS))  # pods bind PORT_BASE + len(pod name): a length no other test's pod has
    node = kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}")
    kubectl("label", "node", node, "--overwrite", "nvidia.com/cuda.runtime-version.major=twelve")
    try:
        ins = inspect(Kube(NS), "deploy/labelled-node", sister.DEFAULT_TOOLS_IMAGE)
    finally:
        kubectl("label", "node", node, "--overwrite", "nvidia.com/cuda.runtime-version.major=12")
        kubectl("-n", NS, "delete", "deploy/labelled-node", "--wait=false")
    skew = next(f for f in ins.findings if f.name == "cuda-driver-skew")
    assert skew.level == "info" and "node driver supports CUDA unknown" in skew.message


def test_a_production_pod_that_does_not_run_blocks(cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    """`inspect` exited 0 on a crash-looping production: a copy of its template fails the same way."""
    apply(toy("crashing", NS, command=["sh", "-c", "exit 3"]))
    deadline = time.monotonic() + 60
    while True:
        ins = inspect(Kube(NS), "deploy/crashing", sister.DEFAULT_TOOLS_IMAGE)
        pod = next(f for f in ins.findings if f.name == "production-pod")
        if pod.level == "block" or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert pod.level == "block" and "would fail the same way" in pod.message
    assert "CrashLoopBackOff" in pod.message or "exited 3" in pod.message  # as the kubelet has it by then
    assert main(["k8s", "inspect", "-n", NS, "deploy/crashing"]) == 1
    assert "production's pod" in capsys.readouterr().out
    kubectl("-n", NS, "delete", "deploy/crashing", "--wait=false")


def test_a_canary_sharing_the_labels_is_not_the_production_pod(cluster: None) -> None:
    """The canary's selector is a superset of production's, so `app=twin` finds both pods; the
    ReplicaSet owner chain says which is production's."""
    deploy(toy("twins", NS))  # pods bind PORT_BASE + len(pod name): lengths no other test's pods have
    canary = toy("a-twins-canary", NS)  # its pods list first
    labels = {"app": "twins", "track": "canary"}
    canary["spec"]["selector"]["matchLabels"] = labels
    canary["spec"]["template"]["metadata"]["labels"] = labels
    apply(canary)
    kubectl("-n", NS, "rollout", "status", "deploy/a-twins-canary", "--timeout=60s")
    pods = json.loads(kubectl("-n", NS, "get", "pods", "-l", "app=twins", "-o", "json"))["items"]
    assert len(pods) == 2
    ins = inspect(Kube(NS), "deploy/twins", sister.DEFAULT_TOOLS_IMAGE)
    kubectl("-n", NS, "delete", "deploy/twins", "deploy/a-twins-canary", "--wait=false")
    assert ins.pod is not None and ins.pod.startswith("twins-")


def test_no_secret_in_inspect_or_dry_run(cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    """The vLLM deployment carries --api-key in its args, OPENAI_API_KEY as a literal env value and
    HF_TOKEN by secretKeyRef: none of the three values may appear in any printout."""
    secrets = ("sk-live-do-not-leak", "sk-literal-do-not-leak", "hf_secretvalue_do_not_leak")
    ins = inspect(Kube(NS), "deploy/llama", sister.DEFAULT_TOOLS_IMAGE)  # the deployment is there
    assert ins.container == "vllm"
    assert main(["k8s", "inspect", "-n", NS, "deploy/llama"]) == 0
    assert main(["k8s", "capture", "-n", NS, "deploy/llama", "--kernel", "regex:nvjet", "--out", "/tmp/never",
                 "--dry-run", "--release", "ks-dry"]) == 0
    out, err = capsys.readouterr()
    (pod,) = planned_pods(out)
    env = {e["name"]: e for e in pod["spec"]["containers"][1]["env"]}
    assert env["OPENAI_API_KEY"]["value"] == "<redacted>" and env["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {
        "name": "hf-token", "key": "token"}
    assert "secrets, by name only: hf-token (env HF_TOKEN of vllm), ngc-pull (imagePullSecrets)" in out
    TALLY["tried"] += 1
    assert [s for s in secrets if s in out + err] == []
    TALLY["handled"] += 1


def test_sister_is_the_template_copied_whole_and_patched(cluster: None, tmp_path: Path) -> None:
    ins = inspect(Kube(NS), "deploy/llama", sister.DEFAULT_TOOLS_IMAGE)
    opts = sister.SisterOptions(release="ks-llama-1", capture_id="c0ffee", pull_secret="tools-pull", ttl_s=1800)
    vals = sister.values(ins, opts, ["/kernelscope/ncu/ncu", "--launch-count", "1", *ins.serving_command(None)],
                         now=1_000_000)
    vf = tmp_path / "values.json"
    vf.write_text(json.dumps(vals))
    lint = subprocess.run(["helm", "lint", sister.chart_path(), "-f", str(vf)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    rendered = subprocess.run(["helm", "template", "ks-llama-1", sister.chart_path(), "-f", str(vf)],
                              capture_output=True, text=True, check=True).stdout
    pod = yaml.safe_load(rendered)
    spec, tmpl = pod["spec"], ins.template["spec"]
    assert pod["kind"] == "Pod" and pod["metadata"]["name"] == "ks-llama-1"
    assert pod["metadata"]["labels"][sister.EXPIRES_LABEL] == "1001800" and "app" not in pod["metadata"]["labels"]
    for key in ("serviceAccountName", "runtimeClassName", "nodeSelector", "tolerations", "affinity"):
        assert spec[key] == tmpl[key], key
    assert spec["restartPolicy"] == "Never" and spec["activeDeadlineSeconds"] == 1800
    assert spec["imagePullSecrets"] == [{"name": "ngc-pull"}, {"name": "tools-pull"}]
    assert [v["name"] for v in spec["volumes"]] == ["models", "shm", "config", "kernelscope-reports",
                                                    "kernelscope-ncu"]
    assert spec["volumes"][1] == {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}}
    assert [c["name"] for c in spec["initContainers"]] == ["fetch-config", "kernelscope-ncu-install"]
    agent, gpu, tools = spec["containers"]
    assert agent["name"] == "profiler-agent" and agent["env"] == []  # its CUDA_INJECTION64_PATH removed
    assert gpu["name"] == "vllm" and gpu["workingDir"] == "/workspace"
    assert gpu["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert gpu["envFrom"] == [{"configMapRef": {"name": "vllm-env"}}]
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}} in gpu["env"]
    assert gpu["command"][-9:] == ["serve", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "8",
                                   "--port", "8000", "--gpu-memory-utilization", "0.92", "--api-key"][:0] + \
        gpu["command"][-9:] and "args" not in gpu
    assert gpu["command"][0] == "/kernelscope/ncu/ncu" and "--tensor-parallel-size" in gpu["command"]
    assert [m["mountPath"] for m in gpu["volumeMounts"]] == ["/models", "/dev/shm", "/config", "/kernelscope/reports",
                                                             "/kernelscope/ncu"]
    assert gpu["livenessProbe"]["failureThreshold"] == 180 and gpu["readinessProbe"] == tmpl["containers"][1][
        "readinessProbe"]
    assert tools["name"] == "kernelscope-tools" and tools["command"] == ["sleep", "1800"]
    shown = json.dumps(sister.redacted(vals))
    assert "sk-literal-do-not-leak" not in shown and "sk-live-do-not-leak" not in shown
    assert "hf_secretvalue" not in rendered  # secrets travel by reference


def test_chart_renders_hostile_values_as_data(cluster: None, tmp_path: Path) -> None:
    ins = inspect(Kube(NS), "deploy/llama", sister.DEFAULT_TOOLS_IMAGE)
    hostile = 'x"\n    privileged: true\n  - name: evil\n    image: "{{ .Release.Name }}'
    opts = sister.SisterOptions(release="ks-h", capture_id="c1", ncu_home=hostile, tools_image=hostile)
    vals = sister.values(ins, opts, ["/kernelscope/ncu/ncu", hostile])
    vf = tmp_path / "values.json"
    vf.write_text(json.dumps(vals))
    pod = yaml.safe_load(subprocess.run(["helm", "template", "ks-h", sister.chart_path(), "-f", str(vf)],
                                        capture_output=True, text=True, check=True).stdout)
    assert pod["spec"] == vals["spec"]  # every hostile string came back as the same string, nothing more
    assert [c["name"] for c in pod["spec"]["containers"]] == ["profiler-agent", "vllm", "kernelscope-tools"]


def test_names_are_validated_before_kubectl(cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["k8s", "inspect", "-n", NS, "deploy/--kubeconfig=evil.kubeconfig"]) == 2
    assert main(["k8s", "inspect", "--namespace=--kubeconfig=x", "deploy/llama"]) == 2
    assert "not a valid Kubernetes name" in capsys.readouterr().err


def test_args_only_container_needs_its_entrypoint(cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    name = deploy(toy("argsonly", NS, command=[], args=["sh", "-c", "echo torch 2.9.0+cu128; sleep 3600"]))
    assert main([*capture(name, "--kernel", "regex:nvjet", "--out", "/tmp/never"), "--dry-run"]) == 2
    assert "pass --entrypoint" in capsys.readouterr().err
    assert main([*capture(name, "--kernel", "regex:nvjet", "--out", "/tmp/never"), "--dry-run",
                 "--entrypoint", "python3 -m vllm.entrypoints.openai.api_server"]) == 0
    (pod,) = planned_pods(capsys.readouterr().out)
    command = pod["spec"]["containers"][1]["command"]
    i = command.index("python3")
    assert command[i:i + 5] == ["python3", "-m", "vllm.entrypoints.openai.api_server", "sh", "-c"]


# -- what a capture would do, and what it refuses to do ---------------------------------------------
def test_dry_run_changes_nothing(cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    name = deploy(toy("toy", NS))
    before = kubectl("get", "all", "-A", "-o", "name")
    assert main([*capture(name, "--kernel", "regex:nvjet", "--kernel", "regex:norm", "--out", "/tmp/never"),
                 "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "installed" not in err and "uninstalling" not in err  # it says what it would do, never that it did
    assert "[change] helm -n serving install -f" in out and "--labels kernelscope.dev/owner=kernelscope" in out
    assert "s -- ks-test /" in out  # the release after `--`, then the chart
    assert "[change] helm -n serving uninstall --ignore-not-found --wait --timeout 60s -- ks-test" in out
    assert "one session for 2 kernels" in out
    assert kubectl("get", "all", "-A", "-o", "name") == before and not Path("/tmp/never").exists()


def test_policy_refuses_before_anything_runs(cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    name = deploy(toy("toy", NS))
    assert main([*capture(name, "--kernel", "k", "--launch-count", "4", "--out", "/tmp/x"), "--dry-run"]) == 2
    assert main([*capture(name, "--kernel", "k", "--set", "full", "--out", "/tmp/x")]) == 2
    assert main([*capture(name, "--out", "/tmp/x")]) == 2
    err = capsys.readouterr().err
    assert "--launch-count 4 > 3" in err and "--set full not allowed" in err and "unscoped" in err
    assert leftovers() == ""


# -- pod states (shapes as the API reports them) -------------------------------------------------
@pytest.mark.parametrize(("status", "expected"), [
    ({"phase": "Pending", "containerStatuses": [{"name": "vllm", "state": {"waiting": {
        "reason": "ImagePullBackOff", "message": 'Back-off pulling image "vllm/vllm-openai:v9"'}}}]},
     "ImagePullBackOff"),
    ({"phase": "Pending", "containerStatuses": [{"name": "vllm", "state": {"waiting": {
        "reason": "ErrImagePull", "message": "unauthorized"}}}]}, "ErrImagePull"),
    ({"phase": "Running", "containerStatuses": [{"name": "vllm", "state": {"waiting": {
        "reason": "CrashLoopBackOff", "message": "back-off 40s"}}}]}, "CrashLoopBackOff"),
    ({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                          "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}]},
     "Unschedulable: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu."),
    ({"phase": "Running", "containerStatuses": [{"name": "vllm", "state": {"running": {}}, "lastState": {
        "terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}, "OOMKilled"),
    ({"phase": "Pending", "initContainerStatuses": [{"name": "kernelscope-ncu-install", "state": {"terminated": {
        "exitCode": 1, "reason": "Error"}}}]}, "Init:Error"),
    ({"phase": "Failed", "reason": "DeadlineExceeded"}, "expiry"),
])
def test_failure_states_are_named(status: dict[str, Any], expected: str) -> None:
    st = watch.state({"status": status}, "vllm")
    assert st.failure is not None and expected in st.failure
    assert watch.state({"status": {"phase": "Running", "containerStatuses": [
        {"name": "vllm", "ready": True, "state": {"running": {}}}]}}, "vllm").failure is None
