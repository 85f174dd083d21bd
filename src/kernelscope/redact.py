"""Secrets are recorded by name, never by value: every command line and env list that kernelscope
writes to a bundle, prints (`--dry-run`, `inspect`) or puts in a report goes through here."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MASK = "<redacted>"
# A name (env variable, option or key) whose value is a secret.
SECRET_NAME = re.compile(r"(token|secret|passw(or)?d|passwd|api[-_]?key|apikey|credential|private[-_]?key|auth|"
                         r"access[-_]?key|session[-_]?key|signature|cookie|bearer)", re.IGNORECASE)
URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@\s:]+(:[^/@\s]*)?@", re.IGNORECASE)
ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$", re.DOTALL)


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def _scrub_text(text: str) -> str:
    return URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)


def argv(args: Sequence[str]) -> list[str]:
    """A command line with the values of secret-looking options and assignments masked:
    `--api-key sk-1` and `--api-key=sk-1` -> `--api-key <redacted>`, `HF_TOKEN=x` -> `HF_TOKEN=<redacted>`,
    and credentials inside URLs."""
    out: list[str] = []
    mask_next = False
    for arg in args:
        if mask_next:
            out.append(MASK)
            mask_next = False
            continue
        if arg.startswith("-"):
            name, eq, _ = arg.partition("=")
            if is_secret_name(name.lstrip("-")):
                if eq:
                    out.append(f"{name}={MASK}")
                else:
                    out.append(arg)
                    mask_next = True
                continue
        m = ASSIGNMENT.match(arg)
        if m and is_secret_name(m.group("name")):
            out.append(f"{m.group('name')}={MASK}")
            continue
        out.append(_scrub_text(arg))
    return out


def env_entries(entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Kubernetes env entries with literal values of secret-looking names masked; references
    (`valueFrom: secretKeyRef`, configMapKeyRef, fieldRef) are kept, they hold no value."""
    out = []
    for entry in entries:
        item = dict(entry)
        if "value" in item and is_secret_name(str(item.get("name", ""))):
            item["value"] = MASK
        elif isinstance(item.get("value"), str):
            item["value"] = _scrub_text(item["value"])
        out.append(item)
    return out


def text(value: str) -> str:
    """Free text (a log line, an error message) with credentials in URLs masked."""
    return _scrub_text(value)
