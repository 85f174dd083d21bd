"""k8s dry runs: `k8s capture --dry-run --from-manifest FILE` plans with no cluster at all (no
kubeconfig, no kubectl or helm on PATH: a step that ran would fail the command), from a realistic
vLLM deployment (tests/fixtures/k8s: TP 2 on 2 GPUs, the HF token from a Secret, the model cache
on a PVC, probes), and prints the sister Pod and every argv; `k8s cleanup --dry-run` lists the real
objects of the emulated cluster (../shared/kube) and removes none."""

from __future__ import annotations

import json
import math
import re
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from hostile import LAST_ERROR, cli
from kernelscope.cli import main
from kernelscope.k8s import sister
from kernelscope.k8s.inspect import inspect
from kernelscope.k8s.kubectl import Access, Kube
from test_k8s import NS, OWNED, deploy, kubectl, leftovers, wait_gone
from test_k8s import cluster as cluster  # the session's cluster fixture, by name
from toyk8s import planned_pods, toy

K8S = Path(__file__).parent / "fixtures" / "k8s"
APPLY, GOT = K8S / "vllm-tp2.yaml", K8S / "vllm-tp2-get.yaml"
HF_TOKEN_VALUE = "hf_fixtureTokenValue_never_printed"  # in the fixture's Secret: never to be printed
SERVE = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--tensor-parallel-size", "2", "--port", "8000",
         "--max-model-len", "8192", "--gpu-memory-utilization", "0.90"]


@pytest.fixture
def no_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """KUBECONFIG names a file that is not there, and PATH holds no kubectl or helm."""
    (tmp_path / "empty-bin").mkdir()
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))


def plan(capsys: pytest.CaptureFixture[str], manifest: Path, *extra: str, ns: str = "inference") -> tuple[str, str]:
    code = main(["k8s", "capture", "-n", ns, "deploy/vllm-llama", "--kernel", "regex:nvjet", "--out",
                 str(manifest.parent / "never-written"), "--dry-run", "--from-manifest", str(manifest),
                 "--release", "ks-tp2", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert HF_TOKEN_VALUE not in out + err
    assert "installed" not in err and "uninstalling" not in err and err == ""  # nothing said to have happened
    return out, err


def steps(out: str) -> list[tuple[str, list[str]]]:
    """The printed steps as (tag, argv)."""
    return [(m[1], shlex.split(m[2])) for m in re.finditer(r"^ *\d+\. \[(read|change)\] +(.*)$", out, re.M)]


def check_sister(pod: dict[str, Any], release: str, kernel: str) -> None:
    """The sister of the vLLM TP-2 deployment, field by field."""
    meta, spec = pod["metadata"], pod["spec"]
    assert pod["kind"] == "Pod" and pod["apiVersion"] == "v1" and meta["name"] == release
    labels = meta["labels"]
    expires = int(labels.pop(sister.EXPIRES_LABEL))
    assert abs(expires - (time.time() + 3600)) < 60  # --ttl's default, from now
    assert labels == {"app.kubernetes.io/name": "kernelscope-sister", "app.kubernetes.io/instance": release,
                      sister.OWNER_LABEL: sister.OWNER, sister.CAPTURE_LABEL: labels[sister.CAPTURE_LABEL],
                      sister.SISTER_OF_LABEL: "vllm-llama"}  # none of production's: its Service never selects it
    assert re.fullmatch(r"[0-9a-f]{8}", labels[sister.CAPTURE_LABEL])
    assert "annotations" not in meta  # the deployment's last-applied configuration is never copied
    assert spec["restartPolicy"] == "Never" and spec["activeDeadlineSeconds"] == 3600
    gpu, tools = spec["containers"]
    assert gpu["name"] == "vllm" and gpu["image"] == "vllm/vllm-openai:v0.13.0" and "args" not in gpu
    assert gpu["resources"]["limits"]["nvidia.com/gpu"] == "2" and gpu["resources"]["requests"]["nvidia.com/gpu"] == "2"
    cmd = gpu["command"]
    assert cmd[0] == "/kernelscope/ncu/ncu" and cmd[cmd.index("--target-processes") + 1] == "all"
    assert cmd[cmd.index("--filter-mode") + 1] == "per-gpu"  # TP 2: the launch window on each GPU
    assert cmd[cmd.index("--kernel-name") + 1] == kernel and cmd[cmd.index("--profile-from-start") + 1] == "off"
    assert cmd[cmd.index("-o") + 1].startswith("/kernelscope/reports/")
    assert cmd[-len(SERVE) - 2:] == [*SERVE, "--profiler-config.profiler", "cuda"]  # vLLM's serving window
    env = {e["name"]: e for e in gpu["env"]}
    assert env["HF_TOKEN"] == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}}
    assert {"name": "model-cache", "mountPath": "/root/.cache/huggingface"} in gpu["volumeMounts"]
    assert {"name": "model-cache", "persistentVolumeClaim": {"claimName": "vllm-model-cache"}} in spec["volumes"]
    assert {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}} in spec["volumes"]
    assert gpu["readinessProbe"] == {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 5}
    relaxed = math.ceil(3600 / 10)  # liveness and startup may fail for the whole capture window
    assert gpu["livenessProbe"]["failureThreshold"] == relaxed and gpu["startupProbe"]["failureThreshold"] == relaxed
    assert tools == {"name": "kernelscope-tools", "image": sister.DEFAULT_TOOLS_IMAGE, "command": ["sleep", "3600"],
                     "volumeMounts": [{"name": "kernelscope-reports", "mountPath": "/kernelscope/reports"},
                                      {"name": "kernelscope-ncu", "mountPath": "/kernelscope/ncu"}],
                     "resources": {"requests": {"cpu": "100m", "memory": "256Mi"},
                                   "limits": {"cpu": "2", "memory": "4Gi"}}}
    (install,) = spec["initContainers"]
    assert install["resources"] == tools["resources"]  # a quota on cpu/memory rejects a container with none
    assert install["name"] == "kernelscope-ncu-install" and install["image"] == sister.DEFAULT_TOOLS_IMAGE
    assert install["command"] == ["cp", "-a", f"{sister.DEFAULT_NCU_HOME}/.", "/kernelscope/ncu/"]


# -- no cluster: the plan from a manifest file ---------------------------------------------------------
@pytest.mark.usefixtures("no_cluster")
@pytest.mark.parametrize("manifest", [APPLY, GOT], ids=["apply-manifest", "kubectl-get-output"])
def test_plan_from_a_manifest_with_no_cluster(manifest: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = plan(capsys, manifest)
    (pod,) = planned_pods(out)
    check_sister(pod, "ks-tp2", "regex:nvjet")
    capture_id = pod["metadata"]["labels"][sister.CAPTURE_LABEL]
    assert "sister pod ks-tp2: 1 replica (one bare Pod, restartPolicy Never, activeDeadlineSeconds 3600 s); " \
           "deployment/vllm-llama keeps its 2 replica(s), untouched" in out
    assert "GPU container vllm: image vllm/vllm-openai:v0.13.0, 2 x nvidia.com/gpu" in out
    assert "secrets, by name only: hf-token (env HF_TOKEN of vllm)" in out
    assert "[info] cluster-checks: not checked, no cluster was read: RBAC" in out
    assert "node ?, pod none, 2 GPU worker process(es)" in out and "last-applied" not in out
    assert "none was run: no cluster" in out and "(ran)" not in out
    (status, install, cp, uninstall, wait) = steps(out)
    assert status == ("read", ["helm", "-n", "inference", "status", "-o", "json", "--", "ks-tp2"])
    tag, argv = install
    assert tag == "change" and argv[:4] == ["helm", "-n", "inference", "install"] and argv[4] == "-f"
    assert argv[5].endswith("/values.json") and argv[6:] == [
        "--labels", f"{OWNED},{sister.CAPTURE_LABEL}={capture_id}", "--timeout", "600s", "--",
        "ks-tp2", sister.chart_path()]
    assert cp[0] == "read" and cp[1][:6] == ["kubectl", "-n", "inference", "cp", "--container=kernelscope-tools", "--"]
    assert cp[1][6] == "inference/ks-tp2:/kernelscope/reports/01-nvjet.ncu-rep"
    assert uninstall == ("change", ["helm", "-n", "inference", "uninstall", "--ignore-not-found", "--wait",
                                    "--timeout", "600s", "--", "ks-tp2"])
    assert wait == ("change", ["kubectl", "-n", "inference", "wait", "--for=delete", "pod/ks-tp2", "--timeout=600s"])
    assert not (manifest.parent / "never-written").exists()


@pytest.mark.usefixtures("no_cluster")
def test_a_kubectl_get_list_as_json_plans_the_same_sister(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kubectl get deploy -o json` of several deployments is a kind: List; JSON is YAML."""
    got = yaml.safe_load(GOT.read_text())
    other = json.loads(json.dumps(got))
    other["metadata"]["name"] = "other"
    listed = tmp_path / "deployments.json"
    listed.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [other, got]}))
    (from_list,) = planned_pods(plan(capsys, listed)[0])
    (from_yaml,) = planned_pods(plan(capsys, GOT)[0])
    assert from_list["spec"] == from_yaml["spec"]
    check_sister(from_list, "ks-tp2", "regex:nvjet")


@pytest.mark.usefixtures("no_cluster")
def test_one_sister_per_kernel_each_planned(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = plan(capsys, APPLY, "--kernel", "regex:flash", "--pod-per-kernel")
    first, second = planned_pods(out)
    check_sister(first, "ks-tp2", "regex:nvjet")
    check_sister(second, "ks-tp2-2", "regex:flash")
    installs = [argv[-2] for tag, argv in steps(out) if argv[3:4] == ["install"]]
    uninstalls = [argv[-1] for tag, argv in steps(out) if argv[3:4] == ["uninstall"]]
    assert installs == uninstalls == ["ks-tp2", "ks-tp2-2"]  # each removed before the next is installed


def _attachable(tmp_path: Path) -> Path:
    dep = yaml.safe_load(GOT.read_text())
    dep["spec"]["template"]["spec"]["containers"][0]["command"] = ["ncu", "--mode", "launch", "vllm", "serve"]
    path = tmp_path / "attachable.yaml"
    path.write_text(yaml.safe_dump(dep))
    return path


def _no_containers(tmp_path: Path) -> Path:
    dep = yaml.safe_load(GOT.read_text())
    dep["spec"]["template"]["spec"]["containers"] = []
    path = tmp_path / "empty.yaml"
    path.write_text(yaml.safe_dump(dep))
    return path


def _bad_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: Deployment\nmetadata: {name: vllm-llama\n")
    return path


@pytest.mark.usefixtures("no_cluster")
@pytest.mark.parametrize(("make", "extra", "message"), [
    (lambda _: APPLY, ["-n", "inference"], "--from-manifest plans a capture from a file, with no cluster: it needs "
                                           "--dry-run"),
    (lambda _: APPLY, ["--dry-run"], f"{APPLY}: deployment vllm-llama is in namespace inference, not default: pass "
                                     "-n inference"),
    (lambda _: APPLY, ["--dry-run", "-n", "inference", "--container", "sidecar"], "no container 'sidecar' "
                                                                                  "(containers: vllm)"),
    (_attachable, ["--dry-run", "-n", "inference", "--strategy", "direct"], "--strategy direct works inside the "
     "running production pod, and vllm-llama has none that a plan from --from-manifest can name"),
    (_no_containers, ["--dry-run", "-n", "inference"], "empty.yaml: deployment vllm-llama has no "
                                                       "spec.template.spec.containers"),
    (_bad_yaml, ["--dry-run", "-n", "inference"], "bad.yaml: manifest is not valid YAML at line 3"),
], ids=["needs-dry-run", "namespace", "container", "direct", "no-containers", "bad-yaml"])
def test_a_plan_that_cannot_be_made_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any,
                                                extra: list[str], message: str) -> None:
    code = main(["k8s", "capture", "deploy/vllm-llama", "--kernel", "regex:nvjet", "--out", str(tmp_path / "o"),
                 "--from-manifest", str(make(tmp_path)), *extra])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and not (tmp_path / "o").exists()
    assert err.count("\n") == 1 and err.startswith("kernelscope: error: ") and message in err, err


@pytest.mark.usefixtures("no_cluster")
def test_the_file_names_what_it_holds_when_the_deployment_is_not_there(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["k8s", "capture", "-n", "inference", "deploy/llama", "--kernel", "regex:nvjet", "--out", "/tmp/o",
                 "--dry-run", "--from-manifest", str(APPLY)]) == 2
    assert capsys.readouterr().err == f"kernelscope: error: {APPLY}: no Deployment named llama (the file holds " \
        "Secret/hf-token, PersistentVolumeClaim/vllm-model-cache, Deployment/vllm-llama)\n"


def test_a_dry_run_with_no_cluster_and_no_file_says_how_to_plan_offline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    assert main(["k8s", "capture", "-n", "inference", "deploy/vllm-llama", "--kernel", "regex:nvjet",
                 "--out", str(tmp_path / "o"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kernelscope: error: ") and "kubectl" in err
    assert err.rstrip().endswith("to plan without a cluster: --dry-run --from-manifest FILE (e.g. the output of "
                                 "`kubectl get deployment vllm-llama -o yaml`)")


# -- the cluster: cleanup --dry-run lists the real objects and removes none ---------------------------
def _sisters(tmp_path: Path) -> None:
    """Two sisters through helm (one expired), and a sister pod whose release record is gone."""
    ins = inspect(Kube(NS), f"deploy/{deploy(toy('toy', NS))}", "tools")
    for release, capture_id, ttl in (("ks-dry-old", "b2", -10), ("ks-dry-new", "a1", 3600)):
        opts = sister.SisterOptions(release=release, capture_id=capture_id)
        vals = sister.values(ins, opts, ["sleep", "3600"], now=time.time() + ttl - opts.ttl_s)
        vf = tmp_path / f"{release}.json"
        vf.write_text(json.dumps(vals))
        subprocess.run(["helm", "-n", NS, "install", release, sister.chart_path(), "-f", str(vf), "--labels", OWNED],
                       check=True, capture_output=True)
    orphan = {sister.OWNER_LABEL: sister.OWNER, sister.CAPTURE_LABEL: "c3", sister.SISTER_OF_LABEL: "toy",
              sister.EXPIRES_LABEL: str(int(time.time()) - 60)}
    kubectl("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ks-dry-orphan", "namespace": NS, "labels": orphan},
        "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}}))


def _cleanup(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    assert main(["k8s", "cleanup", "-n", NS, "--dry-run", *extra]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "nothing was removed" in out
    return re.findall(r"^  (\S+): ", out, re.M), steps(out)


def test_cleanup_dry_run_lists_the_real_objects_and_removes_none(
        cluster: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _sisters(tmp_path)
    before = leftovers()
    assert sorted(before.split()) == sorted(["pod/ks-dry-new", "pod/ks-dry-old", "pod/ks-dry-orphan", "ks-dry-new",
                                             "ks-dry-old"])
    listed, done = _cleanup(capsys)
    assert listed == ["ks-dry-old", "ks-dry-new", "pod/ks-dry-orphan"] or \
        listed == ["ks-dry-new", "ks-dry-old", "pod/ks-dry-orphan"]  # helm lists its releases in its own order
    reads = [(tag, argv) for tag, argv in done if tag == "read"]
    assert [argv[:5] for _, argv in reads] == [["helm", "-n", NS, "list", "-q"],
                                               ["kubectl", "-n", NS, "get", "pods"]]
    assert reads[0][1][5:7] == ["-l", OWNED] and reads[1][1][5] == f"--selector={OWNED}"  # ours by the owner label
    changes = sorted(" ".join(argv) for tag, argv in done if tag == "change")
    assert changes == [f"helm -n {NS} uninstall --ignore-not-found --wait --timeout 600s -- ks-dry-new",
                       f"helm -n {NS} uninstall --ignore-not-found --wait --timeout 600s -- ks-dry-old",
                       f"kubectl -n {NS} delete pod/ks-dry-orphan --ignore-not-found --wait=true"]
    assert leftovers() == before  # nothing removed

    listed, _ = _cleanup(capsys, "--expired")
    assert listed == ["ks-dry-old", "pod/ks-dry-orphan"]
    assert main(["k8s", "cleanup", "-n", NS, "--dry-run", "--release", "ks-dry-new"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("  ks-dry-new: "))
    assert re.fullmatch(r"  ks-dry-new: capture a1, sister of deployment/toy, expires \S+Z \(in 3[56]\d\d s\); labels "
                        r"app.kubernetes.io/instance=ks-dry-new,app.kubernetes.io/managed-by=Helm,"  # helm adds one
                        r"app.kubernetes.io/name=kernelscope-sister,kernelscope.dev/capture-id=a1,"
                        r"kernelscope.dev/expires=\d+,kernelscope.dev/owner=kernelscope,kernelscope.dev/sister-of=toy",
                        line), line
    assert "would remove 1 object(s) from serving" in out and leftovers() == before

    assert main(["k8s", "cleanup", "-n", NS]) == 0  # the real one removes all three
    assert "removed: " in capsys.readouterr().out and wait_gone() == ""
    kubectl("-n", NS, "delete", "deploy", "toy", "--ignore-not-found", "--wait=false")


def test_the_printed_sister_is_what_helm_renders(cluster: None, tmp_path: Path) -> None:
    """sister.pod (what a dry run prints) against `helm template` of the chart with the same values."""
    doc = toy("annotated", NS)
    doc["spec"]["template"]["metadata"]["annotations"] = {"prometheus.io/scrape": "true"}
    ins = inspect(Kube(NS), f"deploy/{deploy(doc)}", "tools")
    vals = sister.values(ins, sister.SisterOptions(release="ks-render", capture_id="c0ffee"), ["sleep", "3600"])
    vf = tmp_path / "values.json"
    vf.write_text(json.dumps(vals))
    rendered = subprocess.run(["helm", "template", "ks-render", sister.chart_path(), "-f", str(vf)],
                              capture_output=True, text=True, check=True).stdout
    assert yaml.safe_load(rendered) == sister.pod("ks-render", vals)
    assert vals["annotations"] == {"prometheus.io/scrape": "true"}
    kubectl("-n", NS, "delete", "deploy", "annotated", "--wait=false")


@pytest.mark.usefixtures("no_cluster")
def test_the_shell_form_of_vllms_guide_plans_tensor_parallel_and_the_serving_window(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM's Kubernetes guide runs `command: ["/bin/sh", "-c"]` with the whole `vllm serve ...` in
    one string: still 2 GPU worker processes (per-GPU filter), vLLM known, and the profiler flag
    appended inside the script (after it, the shell would take it as $0)."""
    docs = list(yaml.safe_load_all(APPLY.read_text()))
    dep = next(d for d in docs if d and d.get("kind") == "Deployment")
    (gpu,) = [c for c in dep["spec"]["template"]["spec"]["containers"] if c["name"] == "vllm"]
    gpu["command"] = ["/bin/sh", "-c"]
    gpu["args"] = ["pip list >/dev/null && exec " + shlex.join(SERVE)]
    shell_form = tmp_path / "vllm-tp2-sh.yaml"
    shell_form.write_text(yaml.safe_dump_all([d for d in docs if d]))
    out, _ = plan(capsys, shell_form)
    (pod,) = planned_pods(out)
    cmd = pod["spec"]["containers"][0]["command"]
    assert cmd[cmd.index("--filter-mode") + 1] == "per-gpu" and "2 GPU worker process(es)" in out
    assert cmd[cmd.index("--profile-from-start") + 1] == "off"
    assert cmd[-3:-1] == ["/bin/sh", "-c"]
    flag = "--profiler-config.profiler cuda"
    assert cmd[-1] == f"pip list >/dev/null && exec {shlex.join(SERVE)} {flag}"


@pytest.mark.parametrize(("edit", "problem"), [
    (lambda c, p, t: c.update(env=["HF_HOME=/x"]), "spec.template.spec.containers[0].env[0] is a string, not a map"),
    (lambda c, p, t: c.update(resources="8 gpus"), "containers[0].resources is a string, not a mapping"),
    (lambda c, p, t: c.update(resources={"limits": ["a"]}), "containers[0].resources.limits is a list, not a mapping"),
    (lambda c, p, t: p.update(volumes={"a": 1}), "spec.template.spec.volumes is a mapping, not a list"),
    (lambda c, p, t: c.update(readinessProbe="http"), "containers[0].readinessProbe is a string, not a mapping"),
    (lambda c, p, t: c.update(args=["--port", 8000]), "containers[0].args[1] is a number, not a string"),
    (lambda c, p, t: c.update(env=[{"name": "A", "valueFrom": "secret"}]), "env[0].valueFrom is a string, not a"),
    (lambda c, p, t: t.update(metadata={"labels": ["a"]}), "spec.template.metadata.labels is a list, not a mapping"),
    (lambda c, p, t: p.update(initContainers="x"), "spec.template.spec.initContainers is a string, not a list"),
])
def test_a_wrong_typed_field_is_one_error_line(tmp_path: Path, no_cluster: None, edit: Any, problem: str) -> None:
    """Hand-written manifests: each of these raised an AttributeError deep in inspect (a traceback)."""
    dep = next(d for d in yaml.safe_load_all(APPLY.read_text()) if d and d.get("kind") == "Deployment")
    template = dep["spec"]["template"]
    edit(template["spec"]["containers"][0], template["spec"], template)
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump(dep))
    assert cli(["k8s", "capture", "-n", "inference", "deploy/vllm-llama", "--kernel", "regex:nvjet", "--out",
                str(tmp_path / "never-written"), "--dry-run", "--from-manifest", str(manifest)],
               "exports: OSError, malformed objects, API misuse as one error") == "clean"
    err = LAST_ERROR[0].strip()
    assert err.count("\n") == 0 and str(manifest) in err and "deployment vllm-llama: " in err and problem in err


def test_a_null_field_is_an_absent_one(tmp_path: Path, no_cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    """`metadata:` with nothing under it is null, which `kubectl apply` reads as absent: planned, not refused."""
    dep = next(d for d in yaml.safe_load_all(APPLY.read_text()) if d and d.get("kind") == "Deployment")
    dep["spec"]["template"]["metadata"] = None
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump(dep))
    out, _ = plan(capsys, manifest)
    assert "--- # sister pod" in out


def _no_nvidia(c: dict[str, Any], amd: bool) -> None:
    c["resources"] = {"limits": {"amd.com/gpu": "1"}} if amd else {}
    if not amd:
        c["env"] = [*c.get("env", []), {"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]


@pytest.mark.parametrize(("edit", "problem"), [
    (lambda c, p: _no_nvidia(c, amd=True), "container vllm requests no nvidia.com/gpu: it requests amd.com/gpu: "
                                           "ncu profiles NVIDIA GPUs only"),
    (lambda c, p: _no_nvidia(c, amd=False), "it pins CUDA_VISIBLE_DEVICES=0 with no nvidia.com/gpu request"),
    (lambda c, p: p.update(hostNetwork=True), "the pod template sets hostNetwork"),
])
def test_what_ncu_cannot_profile_beside_production_is_refused(tmp_path: Path, no_cluster: None, edit: Any,
                                                              problem: str) -> None:
    """An AMD deployment, production-stack's P/D engines (CUDA_VISIBLE_DEVICES pinned, no GPU request)
    and a hostNetwork pod passed as "[ok] gpu-container (0 x nvidia.com/gpu)" and got a full plan."""
    dep = next(d for d in yaml.safe_load_all(APPLY.read_text()) if d and d.get("kind") == "Deployment")
    spec = dep["spec"]["template"]["spec"]
    edit(spec["containers"][0], spec)
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump(dep))
    assert cli(["k8s", "capture", "-n", "inference", "deploy/vllm-llama", "--kernel", "regex:nvjet", "--out",
                str(tmp_path / "never-written"), "--dry-run", "--from-manifest", str(manifest)]) == "clean"
    assert "refusing to capture: " in LAST_ERROR[0] and problem in LAST_ERROR[0]


def test_yaml_anchors_kubectl_accepts_are_read(tmp_path: Path, no_cluster: None,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """One probe shared by liveness and readiness, one env list by two containers: PyYAML writes
    them as `&id001`/`*id001`, which kubectl accepts and the plan once refused."""
    dep = next(d for d in yaml.safe_load_all(APPLY.read_text()) if d and d.get("kind") == "Deployment")
    vllm = dep["spec"]["template"]["spec"]["containers"][0]
    vllm["livenessProbe"] = vllm["readinessProbe"]
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump(dep))
    assert "*id001" in manifest.read_text()
    out, _ = plan(capsys, manifest)
    assert "--- # sister pod" in out


def _with(tmp_path: Path, edit: Any) -> Path:
    """The fixture's Deployment with `edit(vllm container, pod spec)` applied, as a manifest file."""
    dep = next(d for d in yaml.safe_load_all(APPLY.read_text()) if d and d.get("kind") == "Deployment")
    spec = dep["spec"]["template"]["spec"]
    edit(spec["containers"][0], spec)
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump(dep))
    return manifest


@pytest.mark.usefixtures("no_cluster")
@pytest.mark.parametrize(("image", "flag", "env", "window"), [
    ("vllm/vllm-openai:v0.16.0", True, None, "serving"),
    ("vllm/vllm-openai:v0.13.0", True, None, "serving"),
    ("vllm/vllm-openai:v0.12.0", False, "1", "serving"),  # only the env: 0.12 has no --profiler-config
    ("vllm/vllm-openai:v0.11.0", False, None, "start"),  # no CUDA profiler at all: from the start, said
    ("vllm/vllm-openai:v0.8.5", False, None, "start"),
    ("lmcache/vllm-openai:2025-05-27-v1", True, None, "serving"),  # unknown: assumed current, and said
])
def test_the_serving_window_is_opened_with_what_the_vllm_release_has(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], image: str, flag: bool, env: str | None,
        window: str) -> None:
    def edit(c: dict[str, Any], _: dict[str, Any]) -> None:
        c["image"] = image
        c["env"].append({"name": "VLLM_TORCH_PROFILER_DIR", "value": "/traces"})  # would win over the env switch

    out, _ = plan(capsys, _with(tmp_path, edit))
    (pod,) = planned_pods(out)
    gpu = pod["spec"]["containers"][0]
    cmd, names = gpu["command"], {e["name"]: e.get("value") for e in gpu["env"]}
    assert ("--profiler-config.profiler" in cmd) is flag and names.get("VLLM_TORCH_CUDA_PROFILE") == env
    assert ("VLLM_TORCH_PROFILER_DIR" in names) is (env is None)
    assert ("--profile-from-start" in cmd) is (window == "serving")
    version = image.rsplit(":v", 1)[-1]
    if window == "start":
        assert f"vLLM {version} (the image tag {image}) has no CUDA-profiler switch" in out
        assert "the window is the server's start, ncu --launch-skip counting from it" in out
        assert cli(["k8s", "capture", "-n", "inference", "deploy/vllm-llama", "--kernel", "regex:nvjet", "--out",
                    str(tmp_path / "never"), "--dry-run", "--from-manifest", str(tmp_path / "m.yaml"),
                    "--window", "serving"]) == "clean"
        assert "--window serving: vLLM" in LAST_ERROR[0] and "use --window start with --launch-skip" in LAST_ERROR[0]
    elif image.startswith("lmcache"):
        assert "[warn] vllm-version: the serving window: vLLM's version is unknown" in out
        assert "then pass --vllm-version" in out


@pytest.mark.usefixtures("no_cluster")
def test_the_users_vllm_version_wins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = plan(capsys, APPLY, "--vllm-version", "0.12.0")
    (pod,) = planned_pods(out)
    assert "--profiler-config.profiler" not in pod["spec"]["containers"][0]["command"]
    assert "[info] vllm-version: the serving window: vLLM 0.12.0 (--vllm-version)" in out


@pytest.mark.usefixtures("no_cluster")
def test_a_hardened_container_gets_a_writable_tmp_and_restricted_added_containers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """production-stack's hardened securityContext: a read-only root filesystem (ncu writes /tmp) and a
    non-root user, where --grant-profiling-cap cannot give a capability and says so."""
    hardened = {"runAsNonRoot": True, "runAsUser": 1000, "readOnlyRootFilesystem": True,
                "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                "seccompProfile": {"type": "RuntimeDefault"}}
    out, _ = plan(capsys, _with(tmp_path, lambda c, p: c.update(securityContext=hardened)), "--grant-profiling-cap")
    (pod,) = planned_pods(out)
    spec = pod["spec"]
    gpu, tools = spec["containers"]
    assert {"name": "kernelscope-tmp", "emptyDir": {}} in spec["volumes"]
    assert {"name": "kernelscope-tmp", "mountPath": "/tmp"} in gpu["volumeMounts"]
    assert tools["securityContext"] == spec["initContainers"][0]["securityContext"] == {
        "runAsNonRoot": True, "runAsUser": 1000, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
        "seccompProfile": {"type": "RuntimeDefault"}, "capabilities": {"drop": ["ALL"]}}
    assert "[warn] counter-permission: the GPU container runs as a non-root user (runAsUser 1000)" in out
    assert "--grant-profiling-cap does not let ncu read counters here" in out


def test_a_multiplexed_k8s_plan_is_a_sister_a_counter_group(no_cluster: None, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """--multiplex on the TP-2 deployment: 31 sisters, one after another, each its own ncu on one
    counter group (no session covers two), each rank's launch its own (--filter-mode per-gpu); the
    plan says what it costs."""
    from kernelscope.ncu import multiplex

    out, _ = plan(capsys, APPLY, "--multiplex")
    groups = multiplex.groups()
    assert "policy: multi-replica; 31 capture unit(s); release ks-tp2" in out
    assert "multiplexed: 31 counter groups (measured on NVIDIA H200, ncu 2025.3.1), one ncu run a group" in out
    assert "note: --multiplex: 31 sister pods, one after another, each loading the model, each collecting its " \
           "counters on the next launches of the kernels; merged on read" in out
    pods = planned_pods(out)
    assert [p["metadata"]["name"] for p in pods] == ["ks-tp2", *(f"ks-tp2-{i}" for i in range(2, 32))]
    for pod, group in zip(pods, groups, strict=True):
        cmd = pod["spec"]["containers"][0]["command"]
        assert cmd[cmd.index("--metrics") + 1] == ",".join(group) and "--set" not in cmd
        assert cmd[cmd.index("--filter-mode") + 1] == "per-gpu" and cmd[cmd.index("--launch-count") + 1] == "1"


def test_a_multiplexed_attach_plan_is_one_sister_taking_a_session_a_group(no_cluster: None, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """--strategy attach --multiplex on a one-GPU server: one sister, held under ncu --mode launch and
    loading the model once, takes 14 attach sessions one after another, none of one pass."""
    from kernelscope.ncu import multiplex

    one_gpu = tmp_path / "vllm-tp1.yaml"
    tp = "- --tensor-parallel-size\n            - "
    one_gpu.write_text(APPLY.read_text().replace('nvidia.com/gpu: "2"', 'nvidia.com/gpu: "1"')
                       .replace(f'{tp}"2"', f'{tp}"1"'))
    out, _ = plan(capsys, one_gpu, "--multiplex", "--strategy", "attach")
    assert "policy: multi-replica; 14 capture unit(s); release ks-tp2" in out
    assert "note: --multiplex: 14 attach sessions, one after another, to one sister (one model load)" in out
    (pod,) = planned_pods(out)
    assert pod["spec"]["containers"][0]["command"][1:3] == ["--mode", "launch"]
    sessions = [argv for tag, argv in steps(out) if "--mode" in argv and argv[argv.index("--mode") + 1] == "attach"]
    assert [argv[argv.index("--metrics") + 1] for argv in sessions] == [
        ",".join(s) for s in multiplex.attach_sessions(multiplex.groups())]
    assert sum(1 for _, argv in steps(out) if "install" in argv) == 1


def test_access_reviews_are_matched_to_their_questions_as_an_api_server_echoes_them(tmp_path: Path) -> None:
    """An API server prints each SelfSubjectAccessReview back with its empty group, subresource and
    namespace left out (omitempty), and in the order it answered: each answer still lands on its
    question, and a question with no reply is "" (unchecked), never yes."""
    replies = [{"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
                "metadata": {"creationTimestamp": None}, "spec": {"resourceAttributes": attrs},
                "status": {"allowed": allowed, **({"reason": "RBAC: allowed by RoleBinding"} if allowed else {})}}
               for attrs, allowed in (({"verb": "get", "resource": "nodes"}, False),
                                      ({"namespace": "serving", "verb": "get", "resource": "pods",
                                        "subresource": "log"}, True),
                                      ({"namespace": "serving", "verb": "get", "group": "apps",
                                        "resource": "deployments"}, True))]
    kubectl = tmp_path / "kubectl"
    kubectl.write_text("#!/bin/sh\ncat >/dev/null\ncat <<'EOF'\n" + "\n".join(json.dumps(r, indent=4) for r in replies)
                       + "\nEOF\n")
    kubectl.chmod(0o755)
    kube = Kube("serving", kubectl=str(kubectl))
    answers = kube.can_i(Access("get", "deployments.apps"), Access("get", "pods/log"), Access("get", "nodes"),
                         Access("list", "pods", cluster_wide=True))
    assert answers == ["yes", "yes", "no", ""]
    assert [s.argv[3:] for s in kube.steps] == [["create", "-f", "-", "-o", "json"]]
