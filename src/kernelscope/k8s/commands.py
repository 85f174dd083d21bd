"""What `kernelscope k8s inspect | capture | cleanup` do, between argument parsing and kubectl."""

from __future__ import annotations

import sys
from pathlib import Path

from ..capture.plan import CapturePlan, PlanError, validate
from .inspect import Inspection, inspect
from .kubectl import Kube
from .policy import check
from .runbook import SISTER_SELECTOR, Runbook

DEFAULT_TOOLS_IMAGE = "kernelscope-tools:ncu-2025.3.1"


def print_inspection(ins: Inspection) -> None:
    print(f"deployment {ins.namespace}/{ins.deployment}: {ins.replicas} replica(s), container {ins.container}, "
          f"image {ins.image}, node {ins.node or '?'}, pod {ins.pod or 'none'}")
    for f in ins.findings:
        print(f"  [{f.level}] {f.name}: {f.message}\n         evidence: {f.evidence}")
    print(f"path: {ins.path} — {ins.path_reason}")
    for f in ins.blocked():
        print(f"BLOCKED by {f.name}: capturing would record 0 kernels")


def run_inspect(namespace: str, target: str, tools_image: str, container: str | None) -> int:
    ins = inspect(Kube(namespace), target, tools_image, container)
    print_inspection(ins)
    return 1 if ins.blocked() else 0


def warmup_requests(url: str, body: str, count: int):  # type: ignore[no-untyped-def]
    def send(rb: Runbook, kernel: str) -> None:
        for _ in range(count):
            rb.exec("curl", "-s", "-m", "60", "-X", "POST", "-H", "Content-Type: application/json", "-d", body, url,
                    mutates=False, check=False, timeout=90)
    return send


def run_capture(namespace: str, target: str, plan: CapturePlan, out: Path, tools_image: str,
                pull_secret: str | None, ncu_home: str | None, release: str | None, direct: bool,
                dry_run: bool, wait_s: float, warmup: tuple[str, str, int] | None, command: list[str]) -> int:
    kube = Kube(namespace, dry_run=dry_run, timeout=wait_s)
    ins = inspect(kube, target, tools_image)
    print_inspection(ins)
    if ins.blocked():
        raise PlanError("refusing to capture: " + "; ".join(f.message for f in ins.blocked()))
    plan = validate(plan)
    for line in check(plan, ins.replicas):
        print(line)
    if direct and ins.path != "direct":
        raise PlanError(f"--direct: {ins.deployment} is not attachable as it runs ({ins.path_reason})")
    if direct and len(plan.kernels) > 1:
        raise PlanError("--direct: a launched process takes one attach session; capture one kernel")
    name = release or f"{ins.deployment}-ncu"
    rb = Runbook(kube, ins, plan, name, tools_image, pull_secret, ncu_home, wait_s,
                 warmup=warmup_requests(*warmup) if warmup else None, direct=direct)
    print(f"{'direct path on ' + str(ins.pod) if direct else 'sister release ' + name} "
          f"(pods {SISTER_SELECTOR.format(release=name)}), {len(plan.kernels)} capture(s) -> {out}")
    if dry_run:
        import json

        if not direct:
            print("sister values: " + json.dumps(rb.values))
        rb.run(out, command)
        for i, step in enumerate(kube.steps, 1):
            print(f"{i:3d}. {'[change]' if step.mutates else '[read]  '} {step.line()}")
        return 0
    rb.run(out, command)
    print(f"bundle written to {out}; removed {name} and the files in its pod", file=sys.stderr)
    from ..cli import main as cli_main

    return cli_main(["analyze", str(out)])


def run_cleanup(namespace: str, release: str, wait_s: float) -> int:
    kube = Kube(namespace, timeout=wait_s)
    kube.h("uninstall", release, "--wait", "--ignore-not-found", "--timeout", f"{int(wait_s)}s")
    left = kube.k("get", "pods", "-l", SISTER_SELECTOR.format(release=release), "-o", "name") or ""
    print(f"uninstalled {release}; pods left: {left.strip() or 'none'}")
    return 0 if not left.strip() else 1
