"""The one seam to a cluster: kubectl and helm as argv lists, every call logged for the bundle.

kubectl (not a Python client) because it is what our users already run: it honours their
kubeconfig, contexts and auth plugins, and `kubectl debug`/`cp`/`exec` have no equal in the client
libraries. Names that reach argv are checked first (DNS-1123), so a name can never be read as an
option. In dry-run mode, steps that change the cluster are only recorded; reads still run.
"""

from __future__ import annotations

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

DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


def check_name(kind: str, value: str, subdomain: bool = False) -> str:
    """A Kubernetes object name (DNS-1123): lower-case letters, digits, '-' (and '.'), never an option."""
    pattern = DNS1123_SUBDOMAIN if subdomain else DNS1123_LABEL
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise KubeError(f"{kind} {value!r}: not a valid Kubernetes name (lower-case letters, digits and '-', "
                        f"starting and ending with a letter or digit, at most {253 if subdomain else 63})")
    return value


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
    steps: list[Step] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_name("namespace", self.namespace)

    def _run(self, argv: list[str], mutates: bool, timeout: float | None, check: bool, defer: bool = False,
             stdin: str | None = None) -> str | None:
        step = Step(argv, mutates)
        self.steps.append(step)
        if self.dry_run and (mutates or defer):  # defer: a read of something a dry run never creates
            return None
        t0 = time.monotonic()
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout or self.timeout, input=stdin)
        except subprocess.TimeoutExpired as exc:
            step.exit_code, step.seconds = 124, time.monotonic() - t0
            raise KubeError(f"timed out after {timeout or self.timeout:.0f} s: {step.line()}") from exc
        except OSError as exc:
            raise KubeError(f"cannot run {argv[0]}: {exc.strerror}") from exc
        step.exit_code, step.seconds, step.stderr_tail = res.returncode, time.monotonic() - t0, res.stderr[-500:]
        if check and res.returncode != 0:
            raise KubeError(f"{step.line()} failed ({res.returncode}): {redact.text(res.stderr.strip()[-300:])}")
        return res.stdout

    def kubectl_argv(self, *args: str) -> list[str]:
        return [self.kubectl, "-n", self.namespace, *args]

    def k(self, *args: str, mutates: bool = False, timeout: float | None = None, check: bool = True,
          defer: bool = False, stdin: str | None = None) -> str | None:
        return self._run(self.kubectl_argv(*args), mutates, timeout, check, defer, stdin)

    def h(self, *args: str, mutates: bool = True, timeout: float | None = None, check: bool = True) -> str | None:
        return self._run([self.helm, "-n", self.namespace, *args], mutates, timeout, check)

    def uninstall(self, release: str, timeout: float) -> None:
        """Remove a helm release of ours and wait for it to be gone (absent already: nothing to do)."""
        self.h("uninstall", release, "--ignore-not-found", "--wait", "--timeout", f"{int(timeout)}s",
               timeout=timeout + 30)

    def get_json(self, *args: str, check: bool = True) -> Any:
        out = self.k("get", *args, "-o", "json", check=check)
        return parse_json(out or "{}", f"kubectl get {' '.join(args)}", "the output")

    def log(self) -> list[CommandRun]:
        from ..manifest import CommandRun

        return [CommandRun(tuple(redact.argv(s.argv)), s.mutates, s.exit_code,
                           None if s.seconds is None else round(s.seconds, 2)) for s in self.steps]
