"""The one seam to a cluster: kubectl and helm as argv lists, every call logged for the bundle.

kubectl (not a Python client) because it is what our users already run: it honours their
kubeconfig, contexts and auth plugins, and `kubectl debug`/`cp`/`exec` have no equal in the client
libraries. Every name that reaches argv is checked first by the Kubernetes rule for its kind,
whether the user gave it or the cluster handed it back (an API server need not validate: a node
named `--kubeconfig=evil.kubeconfig` once made kubectl read that file), and stands where kubectl
cannot read it as an option: `pod/NAME`, `--container=NAME`, `--selector=...`, after `--` for helm.
In dry-run mode, steps that change the cluster are only recorded; reads still run. Offline (a
plan from a manifest file, no cluster at all), every step is only recorded, reads too.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import redact
from ..errors import KubeError
from ..files import parse_json

if TYPE_CHECKING:  # imported in log(): the CLI parser reads this package's defaults and must start fast
    from ..manifest import CommandRun

ACCESS_FIELDS = ("verb", "group", "resource", "subresource", "namespace")  # what a review asks, and we match on
CLUSTER_SCOPED = frozenset({"nodes", "namespaces", "persistentvolumes", "storageclasses"})  # asked in no namespace
_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_LABEL)
DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
# kind -> (rule, longest): the apiserver's own validation for each kind of name, and helm's for releases
NAME_RULES: dict[str, tuple[re.Pattern[str], int]] = {
    "namespace": (DNS1123_LABEL, 63), "container": (DNS1123_LABEL, 63), "release": (DNS1123_SUBDOMAIN, 53),
    "pod": (DNS1123_SUBDOMAIN, 253), "node": (DNS1123_SUBDOMAIN, 253), "deployment": (DNS1123_SUBDOMAIN, 253),
    "pvc": (DNS1123_SUBDOMAIN, 253), "secret": (DNS1123_SUBDOMAIN, 253),
}
_LABEL_NAME = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)")


def check_name(kind: str, value: object, cluster: bool = False) -> str:
    """A Kubernetes object name by its kind's rule (DNS-1123 label or subdomain): lower-case
    letters, digits, '-' (and '.'), never an option. `cluster`: the name was read back from the
    cluster, and the error says so."""
    pattern, longest = NAME_RULES[kind]
    if not isinstance(value, str) or len(value) > longest or not pattern.fullmatch(value):
        origin = " (as the cluster returned it; refusing to pass it to kubectl)" if cluster else ""
        raise KubeError(f"{kind} {value!r:.120}{origin}: not a valid Kubernetes name (lower-case letters, digits "
                        f"and '-'{', dots between' if pattern is DNS1123_SUBDOMAIN else ''}, starting and ending "
                        f"with a letter or digit, at most {longest})")
    return value


def ref(kind: str, value: object, cluster: bool = False) -> str:
    """`kind/NAME` for kubectl, the name checked: a word that starts with the kind, never an option."""
    return f"{kind}/{check_name(kind, value, cluster)}"


def _label_part(text: object, key: bool) -> bool:
    if not isinstance(text, str):
        return False
    prefix, _, name = text.rpartition("/") if key else ("", "", text)
    if key and "/" in text and not (len(prefix) <= 253 and DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return False
    return len(name) <= 63 and (bool(_LABEL_NAME.fullmatch(name)) or (not key and name == ""))


def selector(labels: dict[str, object]) -> str:
    """`--selector=k=v,...` from a deployment's matchLabels, every key and value checked by the
    label rules (a value holding ',' or '!' would change the selector)."""
    for k, v in labels.items():
        if not _label_part(k, True) or not _label_part(v, False):
            raise KubeError(f"label {k!r:.80}={v!r:.80} (as the cluster returned it): not a valid Kubernetes label; "
                            "refusing to pass it to kubectl")
    return "--selector=" + ",".join(f"{k}={v}" for k, v in labels.items())


@dataclass(frozen=True)
class Access:
    """A question for `kubectl auth can-i`: may the user `verb` `resource` (`pods`, `pods/log`,
    `deployments.apps`: RESOURCE[.GROUP][/SUBRESOURCE], as RBAC rules name them), in the namespace
    or, `cluster_wide`, in every namespace (a cluster-scoped resource is always asked so)."""

    verb: str
    resource: str
    cluster_wide: bool = False

    def review(self, namespace: str) -> dict[str, Any]:
        """The SelfSubjectAccessReview `kubectl auth can-i` would post for this question."""
        resource, _, subresource = self.resource.partition("/")
        name, _, group = resource.partition(".")
        attributes = {"verb": self.verb, "group": group, "resource": name, "subresource": subresource}
        if not (self.cluster_wide or name in CLUSTER_SCOPED):
            attributes["namespace"] = namespace
        return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attributes}}


def _json_stream(text: str) -> list[dict[str, Any]]:
    """The JSON objects printed one after another (a List's items in its place); stops at the first
    text that is not one."""
    decoder, docs, at = json.JSONDecoder(), list[dict[str, Any]](), 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        try:
            doc, at = decoder.raw_decode(text, at)
        except ValueError:
            return docs
        if isinstance(doc, dict) and doc.get("kind") == "List":
            docs.extend(i for i in doc.get("items") or [] if isinstance(i, dict))
        elif isinstance(doc, dict):
            docs.append(doc)


def _asked(attributes: object) -> tuple[tuple[str, str], ...]:
    """A review's question as the API server echoes it: its empty fields left out (omitempty drops
    an empty group, subresource or namespace from the reply)."""
    if not isinstance(attributes, dict):
        return ()
    return tuple(sorted((k, v) for k, v in attributes.items() if k in ACCESS_FIELDS and v and isinstance(v, str)))


@dataclass
class Step:
    argv: list[str]
    mutates: bool
    exit_code: int | None = None  # None: not run (dry-run)
    seconds: float | None = None
    stderr_tail: str = ""

    def line(self) -> str:
        return shlex.join(redact.argv(self.argv))


@dataclass
class Kube:
    namespace: str
    kubectl: str = "kubectl"
    helm: str = "helm"
    dry_run: bool = False
    timeout: float = 120.0
    offline: bool = False  # no cluster: nothing runs, reads included (a dry run)
    steps: list[Step] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_name("namespace", self.namespace)
        self.dry_run = self.dry_run or self.offline

    def _run(self, argv: list[str], mutates: bool, timeout: float | None, check: bool, defer: bool = False,
             stdin: str | None = None) -> str | None:
        step = Step(argv, mutates)
        self.steps.append(step)
        if self.offline or (self.dry_run and (mutates or defer)):  # defer: a read of what a dry run never creates
            return None
        return self._exec(step, timeout, check, stdin)

    def _exec(self, step: Step, timeout: float | None, check: bool, stdin: str | None = None) -> str:
        t0 = time.monotonic()
        try:
            res = subprocess.run(step.argv, capture_output=True, text=True, timeout=timeout or self.timeout,
                                 input=stdin)
        except subprocess.TimeoutExpired as exc:
            step.exit_code, step.seconds = 124, time.monotonic() - t0
            raise KubeError(f"timed out after {timeout or self.timeout:.0f} s: {step.line()}") from exc
        except OSError as exc:
            raise KubeError(f"cannot run {step.argv[0]}: {exc.strerror}") from exc
        step.exit_code, step.seconds, step.stderr_tail = res.returncode, time.monotonic() - t0, res.stderr[-500:]
        if check and res.returncode != 0:
            raise KubeError(f"{step.line()} failed ({res.returncode}): {redact.text(res.stderr.strip()[-300:])}")
        return res.stdout

    def can_i(self, *questions: Access) -> list[str]:
        """`kubectl auth can-i`'s answer to each question: yes, no, or "" when the API server gave
        none. Asked in one kubectl process: each question is the SelfSubjectAccessReview `auth can-i`
        posts, created together (a preflight asks 14-15; each kubectl process pays its start and the
        kubeconfig's auth plugin, `aws eks get-token` or `gke-gcloud-auth-plugin`, 0.1-1 s). A review
        is never stored: reading it creates nothing."""
        reviews = [q.review(self.namespace) for q in questions]
        out = self.k("create", "-f", "-", "-o", "json", check=False,
                     stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": reviews}))
        allowed = {}
        for doc in _json_stream(out or ""):  # kubectl create prints each object it made, one after another
            status, spec = doc.get("status"), doc.get("spec")
            if isinstance(status, dict) and isinstance(spec, dict) and isinstance(status.get("allowed"), bool):
                allowed[_asked(spec.get("resourceAttributes"))] = status["allowed"]
        answers = (allowed.get(_asked(r["spec"]["resourceAttributes"])) for r in reviews)
        return ["" if a is None else "yes" if a else "no" for a in answers]

    def kubectl_argv(self, *args: str) -> list[str]:
        return [self.kubectl, "-n", self.namespace, *args]

    def k(self, *args: str, mutates: bool = False, timeout: float | None = None, check: bool = True,
          defer: bool = False, stdin: str | None = None) -> str | None:
        return self._run(self.kubectl_argv(*args), mutates, timeout, check, defer, stdin)

    def h(self, *args: str, mutates: bool = True, timeout: float | None = None, check: bool = True) -> str | None:
        return self._run([self.helm, "-n", self.namespace, *args], mutates, timeout, check)

    def uninstall(self, release: str, timeout: float) -> None:
        """Remove a helm release of ours and wait for it to be gone (absent already: nothing to do)."""
        self.h("uninstall", "--ignore-not-found", "--wait", "--timeout", f"{int(timeout)}s", "--",
               check_name("release", release), timeout=timeout + 30)

    def get_json(self, *args: str, check: bool = True) -> Any:
        out = self.k("get", *args, "-o", "json", check=check)
        return parse_json(out or "{}", f"kubectl get {' '.join(args)}", "the output")

    def read(self, *args: str) -> tuple[Any, str | None]:
        """`kubectl get ... -o json` that may be refused: the object (an empty one in a dry run with no
        cluster), or None and why (kubectl's own words: Forbidden, NotFound, no such resource)."""
        out = self.k("get", *args, "-o", "json", check=False)
        step = self.steps[-1]
        if step.exit_code not in (0, None):
            why = redact.text(step.stderr_tail.strip().splitlines()[-1] if step.stderr_tail.strip() else
                              f"kubectl exited {step.exit_code}")
            return None, why.removeprefix("Error from server ")
        return parse_json(out or "{}", f"kubectl get {' '.join(args)}", "the output"), None

    def log(self) -> list[CommandRun]:
        from ..manifest import CommandRun

        return [CommandRun(tuple(redact.argv(s.argv)), s.mutates, s.exit_code,
                           None if s.seconds is None else round(s.seconds, 2)) for s in self.steps]
