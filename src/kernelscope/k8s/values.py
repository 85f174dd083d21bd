"""Helm values for the sister release, rendered from the target deployment plus overrides."""

from __future__ import annotations

from typing import Any

from .inspect import INJECTION_ENV, Inspection


def sister_values(ins: Inspection, tools_image: str, pull_secret: str | None, ncu_home: str | None) -> dict[str, Any]:
    spec = ins.spec["spec"]["template"]["spec"]
    cont = next(c for c in spec["containers"] if c["name"] == ins.container)
    values: dict[str, Any] = {
        "target": {"deployment": ins.deployment},
        "toolsImage": tools_image,
        "imagePullSecrets": [{"name": pull_secret}] if pull_secret else [],
        "container": {
            "name": cont["name"],
            "image": cont.get("image", ""),
            "command": ins.command,
            "env": [e for e in cont.get("env", []) if e.get("name") != INJECTION_ENV],
            "resources": cont.get("resources", {}),  # GPU requests come with it
        },
        "nodeSelector": spec.get("nodeSelector", {}),
        "tolerations": spec.get("tolerations", []),
    }
    if ncu_home:
        values["ncuHome"] = ncu_home
    return values


def chart_path() -> str:
    from importlib import resources

    return str(resources.files(__package__).joinpath("chart"))
