"""Secrets are recorded by name, never by value: every command line and env list that kernelscope
writes to a bundle, prints (`--dry-run`, `inspect`) or puts in a report goes through here."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
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


def _split(args: Sequence[str]) -> Iterator[tuple[str, str | None]]:
    """Each arg as it may be shown, with the secret it hides (None when it hides none)."""
    mask_next = False
    for arg in args:
        if mask_next:
            mask_next = False
            yield MASK, arg
            continue
        if arg.startswith("-"):
            name, eq, value = arg.partition("=")
            if is_secret_name(name.lstrip("-")):
                if eq:
                    yield f"{name}={MASK}", value
                else:
                    mask_next = True
                    yield arg, None
                continue
        m = ASSIGNMENT.match(arg)
        if m and is_secret_name(m.group("name")):
            yield f"{m.group('name')}={MASK}", m.group("value")
            continue
        yield _scrub_text(arg), None


def argv(args: Sequence[str]) -> list[str]:
    """A command line with the values of secret-looking options and assignments masked:
    `--api-key sk-1` and `--api-key=sk-1` -> `--api-key <redacted>`, `HF_TOKEN=x` -> `HF_TOKEN=<redacted>`,
    and credentials inside URLs."""
    return [shown for shown, _ in _split(args)]


def secret_values(args: Sequence[str]) -> tuple[str, ...]:
    """The values `argv` masks, so that free text (ncu's output, which echoes the program's own
    output: vLLM prints its arguments at start-up) can be scrubbed of them too. Values shorter than
    4 characters are left out: masking every "1" would garble a log and hide no secret."""
    return tuple(sorted({v for _, v in _split(args) if v is not None and len(v) >= 4}, key=len, reverse=True))


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


def text(value: str, secrets: Iterable[str] = ()) -> str:
    """Free text (a log line, an error message) with credentials in URLs masked, and every known
    secret value (see `secret_values`) replaced wherever it appears."""
    for secret in secrets:
        value = value.replace(secret, MASK)
    return _scrub_text(value)
