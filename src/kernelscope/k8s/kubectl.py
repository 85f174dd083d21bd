"""The one seam to a cluster: kubectl and helm as argv lists, every call logged for the bundle.

kubectl (not a Python client) because it is what our users already run: it honours their
kubeconfig, contexts and auth plugins, and `kubectl debug`/`cp`/`exec` have no equal in the client
libraries. In dry-run mode, steps that change the cluster are only recorded; reads still run.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import KernelscopeError


class KubeError(KernelscopeError):
    pass


@dataclass
class Step:
    argv: list[str]
    mutates: bool
    exit_code: int | None = None  # None: not run (dry-run)
    seconds: float | None = None
    stderr_tail: str = ""

    def line(self) -> str:
        return shlex.join(self.argv)


@dataclass
class Kube:
    namespace: str
    kubectl: str = "kubectl"
    helm: str = "helm"
    dry_run: bool = False
    timeout: float = 120.0
    steps: list[Step] = field(default_factory=list)

    def _run(self, argv: list[str], mutates: bool, timeout: float | None, check: bool,
             defer: bool = False) -> str | None:
        step = Step(argv, mutates)
        self.steps.append(step)
        if self.dry_run and (mutates or defer):  # defer: a read of something a dry run never creates
            return None
        t0 = time.monotonic()
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout or self.timeout)
        except subprocess.TimeoutExpired as exc:
            step.exit_code, step.seconds = 124, time.monotonic() - t0
            raise KubeError(f"timed out after {timeout or self.timeout:.0f} s: {step.line()}") from exc
        except OSError as exc:
            raise KubeError(f"cannot run {argv[0]}: {exc}") from exc
        step.exit_code, step.seconds, step.stderr_tail = res.returncode, time.monotonic() - t0, res.stderr[-500:]
        if check and res.returncode != 0:
            raise KubeError(f"{step.line()} failed ({res.returncode}): {res.stderr.strip()[-300:]}")
        return res.stdout

    def kubectl_argv(self, *args: str) -> list[str]:
        return [self.kubectl, "-n", self.namespace, *args]

    def k(self, *args: str, mutates: bool = False, timeout: float | None = None, check: bool = True,
          defer: bool = False) -> str | None:
        return self._run(self.kubectl_argv(*args), mutates, timeout, check, defer)

    def h(self, *args: str, mutates: bool = True, timeout: float | None = None, check: bool = True) -> str | None:
        return self._run([self.helm, "-n", self.namespace, *args], mutates, timeout, check)

    def get_json(self, *args: str) -> Any:
        out = self.k("get", *args, "-o", "json")
        return json.loads(out or "{}")

    def log(self) -> list[dict[str, Any]]:
        return [{"command": s.argv, "mutates": s.mutates, "exit_code": s.exit_code,
                 "seconds": None if s.seconds is None else round(s.seconds, 2)} for s in self.steps]
