"""Secrets in command lines, env and pod specs (issue 18): each form a fuzz pass found printed or
written, through the real CLI, with the secret value looked for in stdout, stderr and every file
written; and the harmless options and names that look alike, which must stay shown as they are.
The local capture runs the stand-in ncu (tests/local/fake-ncu.sh), whose program prints its own
arguments and environment as vLLM does; the pod path runs against the emulated cluster of
test_k8s.py."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from hostile import LAST_ERROR, LAST_OUTPUT, cli
from kernelscope.k8s import sister
from kernelscope.k8s.inspect import inspect
from kernelscope.k8s.kubectl import Kube
from kernelscope.redact import LAST_APPLIED, MASK
from test_k8s import NS, capture, cluster, deploy, kubectl, wait_gone  # noqa: F401  (cluster: the fixture, by name)
from toyk8s import SERVE, planned_pods, toy

KLASS = "secrets: command lines, env, pod specs"
FAKE_NCU = Path(__file__).parent / "local" / "fake-ncu.sh"


def shown(argv: list[str], code: str = "handled") -> str:
    """stdout and stderr of one CLI run, which must end as `code`."""
    assert cli(argv, klass=KLASS) == code, LAST_ERROR[0]
    return LAST_OUTPUT[0] + LAST_ERROR[0]


def dry_run(*program: str) -> str:
    return shown(["capture", "--kernel", "regex:nvjet", "--out", "/tmp/never-written", "--dry-run", "--ncu", "ncu",
                  "--", *program])


def leaked(secrets: tuple[str, ...], *texts: str) -> list[str]:
    return [s for s in secrets if any(s in t for t in texts)]


def written(root: Path) -> list[str]:
    return [p.read_bytes().decode(errors="replace") for p in root.rglob("*") if p.is_file()]


# each form (its secret value holds "fuzz"), and what must show in its place
FORMS = {
    "a boolean flag naming 'token' before --api-key": (
        ["vllm", "serve", "m", "--skip-tokenizer-init", "--api-key", "sk-fuzz-after-flag-1"],
        "--skip-tokenizer-init --api-key '<redacted>'"),
    "a secret flag before another secret option": (
        ["vllm", "serve", "m", "--hf-token", "--api-key", "sk-fuzz-two-flags-2"], "--hf-token --api-key '<redacted>'"),
    "--opt=V": (["vllm", "serve", "m", "--api-key=sk-fuzz-equals-3"], "'--api-key=<redacted>'"),
    "--opt:V": (["vllm", "serve", "m", "--api-key:sk-fuzz-colon-4"], "'--api-key:<redacted>'"),
    "sh -c with the key inside": (
        ["sh", "-c", "vllm serve m --api-key sk-fuzz-in-sh-5 --port 8000"],
        "sh -c 'vllm serve m --api-key <redacted> --port 8000'"),
    "bash -c with an env assignment inside": (
        ["bash", "-c", "export DB_PASS=fuzz-in-bash-6; exec server --port 8000"],
        "bash -c 'export DB_PASS=<redacted>; exec server --port 8000'"),
    "sh -c that cannot be split": (["sh", "-c", "echo 'unbalanced --key fuzz-unbalanced-7"], "sh -c '<redacted>'"),
    "-k": (["curl", "-k", "fuzz-short-k-8", "http://x"], "-k '<redacted>' http://x"),
    "--key": (["curl", "--key", "fuzz-long-key-9", "http://x"], "--key '<redacted>'"),
    "--pass": (["openssl", "enc", "--pass", "fuzz-pass-10"], "--pass '<redacted>'"),
    "--header Authorization": (["curl", "--header", "Authorization: Bearer fuzz-header-11", "http://x"],
                               "--header 'Authorization: <redacted>'"),
    "-H Authorization": (["curl", "-H", "Authorization: Bearer fuzz-h-12", "http://x"],
                         "-H 'Authorization: <redacted>'"),
    "-H X-Api-Key": (["curl", "-H", "X-Api-Key: fuzz-xapikey-13", "http://x"], "-H 'X-Api-Key: <redacted>'"),
    "a header inside sh -c": (["sh", "-c", "curl -H 'Authorization: Bearer fuzz-sh-header-14' http://x"],
                              "Authorization: <redacted>"),
    "Bearer in a word of its own": (["client", "--data", "Bearer fuzz-bearer-15"], "--data 'Bearer <redacted>'"),
    "credentials in a URL": (["client", "--url", "https://user:fuzz-url-16@example.com/v1"],
                             "https://<redacted>@example.com/v1"),
    "a URL's password with an empty user": (["client", "--url", "redis://:fuzz-empty-user-18@redis:6379"],
                                           "redis://<redacted>@redis:6379"),
    "a raw @ in a URL's password": (["client", "--url", "https://u:p@fuzz-at-19@example.com/"],
                                    "https://<redacted>@example.com/"),
    "user:password@proxy:port with no scheme": (["client", "--proxy", "u:fuzz-proxy-20@proxy:3128"],
                                                "<redacted>@proxy:3128"),
    "a known credential shape under a harmless name": (["client", "--model", "hf_fuzzshapeabcdefghijklmnop17"],
                                                        "--model '<redacted>'"),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_each_form_is_masked_in_the_dry_run(form: str) -> None:
    program, expected = FORMS[form]
    secret = re.findall(r"[\w.-]*fuzz[\w.-]*", " ".join(program))[0]
    out = dry_run(*program)
    assert secret not in out, out
    assert expected in out, out


SECRET_NAMES = ("DB_PASS", "MYSQL_PWD", "REDIS_PASS", "OPENAI_KEY", "PASSPHRASE", "PGPASS", "PGPASSWORD", "HF_TOKEN",
                "AWS_SECRET_ACCESS_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "GPG_PASSPHRASE", "JWT_SECRET",
                "NGC_API_KEY", "RABBITMQ_DEFAULT_PASS", "DB_PW", "apiKey", "authToken", "GITHUB_PAT",
                "SLACK_WEBHOOK_URL", "SENTRY_DSN")
HARMLESS_NAMES = {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_IB_HCA": "mlx5_0", "NCCL_DEBUG": "WARN", "KEYBOARD": "us",
                  "PWD": "/srv/app", "OLDPWD": "/srv", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": "/srv/lib",
                  "KV_CACHE_DIR": "/cache"}


def test_env_names_by_the_list_both_ways() -> None:
    """`env A=.. prog` is set on ncu itself (the dry run prints `env ...` first), and the same
    assignments after the program are its arguments: both masked by name, the harmless shown."""
    secrets = {name: f"envsecret-{i:02d}" for i, name in enumerate(SECRET_NAMES)}
    pairs = [f"{k}={v}" for k, v in {**secrets, **HARMLESS_NAMES}.items()]
    out = dry_run("env", *pairs, "server", *pairs)
    assert leaked(tuple(secrets.values()), out) == []
    for name in SECRET_NAMES:
        assert len(re.findall(rf"(?<!\w){name}={MASK}", out)) == 2, name
    for name, value in HARMLESS_NAMES.items():
        assert len(re.findall(rf"(?<!\w){name}={re.escape(value)}", out)) == 2, name


HARMLESS_OPTIONS = ["--kv-cache-dtype", "fp8_e4m3", "--max-num-seqs", "256", "--max-num-batched-tokens", "8192",
                    "--skip-tokenizer-init", "--tokenizer", "meta-llama/Llama-3.1-8B", "--tokenizer-mode", "slow",
                    "--top-k", "50", "--ssl-keyfile", "/etc/tls/key.pem", "--key-file", "/etc/tls/k.pem",
                    "--served-model-name", "my model", "--trust-remote-code", "--passes", "3"]


def test_harmless_options_are_shown_as_given() -> None:
    out = dry_run("vllm", "serve", "m", *HARMLESS_OPTIONS)
    assert MASK not in out, out
    assert "--kv-cache-dtype fp8_e4m3 --max-num-seqs 256 --max-num-batched-tokens 8192 --skip-tokenizer-init " \
           "--tokenizer meta-llama/Llama-3.1-8B --tokenizer-mode slow --top-k 50 --ssl-keyfile /etc/tls/key.pem " \
           "--key-file /etc/tls/k.pem --served-model-name 'my model' --trust-remote-code --passes 3" in out
    # ncu's own options stay too
    assert "--kernel-name regex:nvjet --launch-skip 0 --launch-count 1" in out and "--clock-control none" in out


def test_launch_dry_run_masks_too() -> None:
    out = shown(["launch", "--dry-run", "--ncu", "ncu", "--", "vllm", "serve", "m", "--skip-tokenizer-init",
                 "--api-key", "sk-fuzz-launch-18"])
    assert "sk-fuzz-launch-18" not in out and "--skip-tokenizer-init --api-key '<redacted>'" in out


# -- a real capture, and everything that reads its bundle ------------------------------------------
LOCAL_SECRETS = ("sk-local-after-flag", "kk-local-short-k", "local-bearer-tok", "local-db-pass", "local-mysql-pwd",
                 "local-in-sh-string", "local-context-key")
LOCAL_PROGRAM = ["env", f"DB_PASS={LOCAL_SECRETS[3]}", f"MYSQL_PWD={LOCAL_SECRETS[4]}", "CUDA_VISIBLE_DEVICES=0",
                 "sh", "-c", f'echo "serving with args: $*"; env; : --api-key {LOCAL_SECRETS[5]}', "server",
                 "--skip-tokenizer-init", "--api-key", LOCAL_SECRETS[0], "-k", LOCAL_SECRETS[1],
                 "--header", f"Authorization: Bearer {LOCAL_SECRETS[2]}", "--kv-cache-dtype", "fp8"]


@pytest.mark.skipif(sys.platform != "linux", reason="the stand-in ncu is a POSIX shell script")
def test_capture_bundle_and_its_readers_hold_no_secret(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    said = shown(["capture", "--kernel", "regex:nvjet", "--out", str(out), "--ncu", str(FAKE_NCU),
                  "--context", f"serving_config=vllm serve m --api-key {LOCAL_SECRETS[6]}", "--", *LOCAL_PROGRAM])
    log = next(out.glob("ncu-profiles/*.log")).read_text()
    assert "serving with args" in log and "--kv-cache-dtype fp8" in log  # the program's output is kept
    assert "CUDA_VISIBLE_DEVICES=0" in log and "DB_PASS=<redacted>" in log  # its env: names kept, values not
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["target"][:4] == ["sh", "-c", 'echo "serving with args: $*"; env; : --api-key <redacted>',
                                      "server"], manifest["target"]
    assert manifest["target"][4:8] == ["--skip-tokenizer-init", "--api-key", MASK, "-k"]
    assert manifest["context"] == {"serving_config": "vllm serve m --api-key <redacted>"}
    readers = [shown(["analyze", str(out), "--format", "json"]), shown(["analyze", str(out)]),
               shown(["report", str(out), "--out", str(tmp_path / "r.html")]),
               shown(["campaign", "import-ncu", "--root", str(tmp_path / "c"), "--campaign", "s", "--cell-id", "c1",
                      "--bundle", str(out)])]
    assert leaked(LOCAL_SECRETS, said, *readers, *written(tmp_path)) == []


@pytest.mark.skipif(sys.platform != "linux", reason="the stand-in ncu is a POSIX shell script")
def test_a_manifest_holding_secrets_is_shown_without_them(tmp_path: Path) -> None:
    """A bundle written by an older kernelscope (or by hand) with the values in it: every reader
    masks them again when it reads the manifest."""
    out = tmp_path / "old"
    shown(["capture", "--kernel", "regex:nvjet", "--out", str(out), "--ncu", str(FAKE_NCU), "--", "true"])
    path = out / "manifest.json"
    doc = json.loads(path.read_text())
    doc["target"] = ["vllm", "serve", "m", "--skip-tokenizer-init", "--api-key", "sk-old-bundle-1",
                     "sh", "-c", "x --password old-bundle-2"]
    doc["command"] = ["kernelscope", "capture", "--", *doc["target"]]
    doc["context"] = {"serving_config": "vllm serve --api-key old-bundle-3", "api_token": "old-bundle-4"}
    doc["commands_run"] = [{"argv": ["helm", "--set", "auth.token=old-bundle-5"], "mutates": True, "exit_code": 0,
                            "seconds": 1.0}]
    doc["captures"][0]["ncu_argv"] = [*doc["captures"][0]["ncu_argv"][:-1], *doc["target"]]
    doc["env_keys_set"] = ["HF_TOKEN=old-bundle-6", "CUDA_VISIBLE_DEVICES"]  # names only, this one by hand
    path.write_text(json.dumps(doc))
    secrets = tuple(f"old-bundle-{i}" for i in range(1, 7))
    readers = [shown(["analyze", str(out), "--format", "json"]), shown(["report", str(out), "--out",
                                                                        str(tmp_path / "r.html")])]
    assert leaked(secrets, *readers, (tmp_path / "r.html").read_text()) == []
    (bundle,) = json.loads(readers[0])["context"]["bundles"].values()
    assert bundle["target"][3:] == ["--skip-tokenizer-init", "--api-key", MASK, "sh", "-c", f"x --password {MASK}"]
    assert bundle["context"] == {"serving_config": f"vllm serve --api-key {MASK}", "api_token": MASK}
    assert bundle["env_keys_set"] == ["HF_TOKEN", "CUDA_VISIBLE_DEVICES"]


# -- the pod path ------------------------------------------------------------------------------------
POD_SECRETS = ("sk-pod-after-flag", "pod-in-sh-string", "hvs.CAESIvaultpodtokenabcdefghijklmn", "pod-api-key-annot",
               "lastapplied-env-value", "hvs.CAESIinnocentnameabcdefghijklm", "pod-db-pass", "pod-mysql-pwd",
               "pod-redis-pass", "pod-openai-key", "pod-passphrase", "pod-pgpass", "pod-probe-bearer")


def secret_deployment(name: str) -> dict[str, Any]:
    env = {"DB_PASS": POD_SECRETS[6], "MYSQL_PWD": POD_SECRETS[7], "REDIS_PASS": POD_SECRETS[8],
           "OPENAI_KEY": POD_SECRETS[9], "PASSPHRASE": POD_SECRETS[10], "PGPASS": POD_SECRETS[11],
           "CUDA_VISIBLE_DEVICES": "0,1", "NCCL_DEBUG": "WARN", "KEYBOARD": "us"}
    doc = toy(name, NS, env=env, command=[
        "sh", "-c", f"echo 'INFO torch 2.9.0+cu128'; : --api-key {POD_SECRETS[1]}; {SERVE}"],
        args=["--tensor-parallel-size", "2", "--skip-tokenizer-init", "--api-key", POD_SECRETS[0],
              "--kv-cache-dtype", "fp8"])
    template = doc["spec"]["template"]
    template["metadata"]["annotations"] = {
        "vault.hashicorp.com/agent-inject-token": POD_SECRETS[2], "example.com/api-key": POD_SECRETS[3],
        LAST_APPLIED: json.dumps({"spec": {"containers": [{"env": [{"name": "X", "value": POD_SECRETS[4]}]}]}}),
        "example.com/bootstrap": POD_SECRETS[5], "prometheus.io/port": "8000"}
    server = template["spec"]["containers"][1]
    server["livenessProbe"] = {"httpGet": {"path": "/", "port": 8000, "httpHeaders": [
        {"name": "Authorization", "value": f"Bearer {POD_SECRETS[12]}"}, {"name": "X-Probe", "value": "kernelscope"}]}}
    return doc


def sister_values(out: str) -> dict[str, Any]:
    """The printed sister Pod's annotations and spec (its values for the chart)."""
    (pod,) = planned_pods(out)
    return {"annotations": pod["metadata"].get("annotations", {}), "spec": pod["spec"]}


@contextmanager
def deployed(name: str) -> Iterator[str]:
    """The deployment, running; removed after (the cluster is the session's)."""
    deploy(secret_deployment(name))
    try:
        yield name
    finally:
        kubectl("-n", NS, "delete", "deployment", name, "--ignore-not-found", "--wait=false")


@pytest.mark.usefixtures("cluster")
def test_pod_dry_run_and_inspect_mask_env_args_annotations() -> None:
    with deployed("secrets-dry") as name:
        out = shown(["k8s", "capture", "-n", NS, f"deploy/{name}", "--kernel", "regex:nvjet", "--out", "/tmp/never",
                     "--dry-run", "--release", "ks-secrets-dry"])
        out += shown(["k8s", "inspect", "-n", NS, f"deploy/{name}"])
        ins = inspect(Kube(NS), f"deploy/{name}", sister.DEFAULT_TOOLS_IMAGE)
    assert leaked(POD_SECRETS, out) == []
    vals = sister_values(out)
    assert vals["annotations"] == {"vault.hashicorp.com/agent-inject-token": MASK, "example.com/api-key": MASK,
                                   "example.com/bootstrap": MASK, "prometheus.io/port": "8000"}
    gpu = next(c for c in vals["spec"]["containers"] if c["name"] == "server")
    env = {e["name"]: e.get("value") for e in gpu["env"]}
    assert env == {"POD_NAME": None, "DB_PASS": MASK, "MYSQL_PWD": MASK, "REDIS_PASS": MASK, "OPENAI_KEY": MASK,
                   "PASSPHRASE": MASK, "PGPASS": MASK, "CUDA_VISIBLE_DEVICES": "0,1", "NCCL_DEBUG": "WARN",
                   "KEYBOARD": "us", "KERNELSCOPE_API_KEY": MASK}  # its --api-key, for warm-ups sent from here
    assert gpu["livenessProbe"]["httpGet"]["httpHeaders"] == [{"name": "Authorization", "value": MASK},
                                                              {"name": "X-Probe", "value": "kernelscope"}]
    command = " ".join(gpu["command"])
    assert "--skip-tokenizer-init --api-key <redacted> --kv-cache-dtype fp8" in command
    assert ": --api-key <redacted>; exec httpd" in command  # the script as it was, the value masked
    # the last-applied configuration (the whole deployment, env values included) is not copied into
    # the sister the cluster runs either; the other annotations are, as production has them
    deployed_values = sister.values(ins, sister.SisterOptions(release="ks-s", capture_id="c1"), ["ncu", "server"])
    assert LAST_APPLIED in ins.template["metadata"]["annotations"]
    assert LAST_APPLIED not in deployed_values["annotations"]
    assert deployed_values["annotations"]["example.com/api-key"] == POD_SECRETS[3]


@pytest.mark.usefixtures("cluster")
def test_pod_capture_bundle_holds_no_secret(tmp_path: Path) -> None:
    out = tmp_path / "live"
    with deployed("secrets-live") as name:
        said = shown([*capture(name, "--kernel", "regex:nvjet", "--out", str(out), release="ks-secrets")])
        assert wait_gone() == ""
    values = json.loads((out / "sister-values.json").read_text())
    assert values["annotations"]["example.com/api-key"] == MASK and LAST_APPLIED not in values["annotations"]
    assert leaked(POD_SECRETS, said, *written(out)) == []
