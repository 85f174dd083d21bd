"""Secrets are recorded by name, never by value: every command line, env list, pod spec and
`--context` that kernelscope writes to a bundle, prints (`--dry-run`, `inspect`) or puts in a
report goes through here, and the values masked here are scrubbed from free text (ncu's log, which
echoes the program's own output, and error lines) by `text`.

A name (env variable, option, annotation, header, `--context` key) is judged by its words, so
`--api-key`, `OPENAI_KEY`, `DB_PASS`, `PGPASS`, `MYSQL_PWD` are secret and `--kv-cache-dtype`,
`KEYBOARD`, `--skip-tokenizer-init`, `--max-num-batched-tokens` are not. An option's value is
masked by that option's own name, whatever precedes it (`--opt V`, `--opt=V`, `--opt:V`); an
option followed by another option is a flag and has no value. A word holding a command line
(`sh -c "..."`, an env value `--api-key k`) is split as a shell would split it and redacted word by
word; one that cannot be split is masked whole if anything secret shows in it. Values in the
shape of a well-known credential (`sk-...`, `hf_...`, `ghp_...`, a Vault token, a JWT, `Bearer ...`)
are masked wherever they stand."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MASK = "<redacted>"
# a kubectl annotation holding the whole object as last applied, env values included: never copied
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

# words that make a name secret wherever they stand in it
SECRET_WORDS = frozenset({"token", "secret", "secrets", "password", "passwd", "passphrase", "pass", "pw", "credential",
                          "credentials", "creds", "auth", "authorization", "cookie", "bearer", "signature", "apikey",
                          "pat", "webhook", "dsn"})  # GITHUB_PAT, SLACK_WEBHOOK_URL (its path is the key), SENTRY_DSN
# endings that make a one-word name secret (PGPASS, PGPASSWORD, HFTOKEN, CLIENTSECRET)
SECRET_ENDINGS = ("token", "secret", "password", "passwd", "passphrase", "pass", "apikey")
SECRET_SHORT = frozenset({"-k"})  # short options whose value is a secret (`curl -k`-style keys, `-k KEY`)
WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")  # HFToken -> HF Token, apiKey -> api Key

OPTION = re.compile(r"(?P<name>--?[A-Za-z][\w.-]*)(?:(?P<sep>[=:])(?P<value>.*))?", re.DOTALL)
ASSIGNMENT = re.compile(r"(?P<name>[A-Za-z_][\w.-]*)=(?P<value>.*)", re.DOTALL)  # HF_TOKEN=x, auth.token=x
HEADER = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_-]*):(?P<space>\s*)(?P<value>\S.*)", re.DOTALL)  # Name: value
SPLIT_AT_MOST = 1 << 16  # a longer command string is probed, not split (shlex is character by character)
NESTING = 3  # command strings (or NAME=value) inside command strings, at most
# masked values not hunted in free text: short ones (masking every "1" hides nothing) and a flag's
# (an annotation `agent-inject-token: "true"` must not mask every "true" in a log)
MIN_SECRET = 4
BOOLEANS = frozenset({"true", "false", "yes", "none", "null", "enabled", "disabled"})

# credentials in free text, each with the part to mask as `secret`
SCRUBS = (
    # a URL's user:password@ (an empty user too; a raw @ in the password: up to the authority's last @)
    re.compile(r"\b[a-z][a-z0-9+.-]*://(?P<secret>[^/?#\s]+)@(?=[^/?#\s@]*(?:[/?#\s\"'<>]|$))", re.IGNORECASE),
    # user:password@host:port with no scheme (HTTP_PROXY=user:pw@proxy:3128)
    re.compile(r"(?<![\w/.:%@-])(?P<secret>[\w.%~-]+:[^@\s/:]+)@[\w.-]+:\d{2,5}\b"),
    re.compile(r"\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{4,})", re.IGNORECASE),
    re.compile(r"\b(?:proxy-)?authorization\s*[:=]\s*(?:(?:basic|bearer|digest|token|negotiate)\s+)?"
               r"(?!(?:basic|bearer|digest|token|negotiate)\b)(?P<secret>[^\s\"',;<]{4,})", re.IGNORECASE),
    re.compile(r"\b(?P<secret>sk-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}"
               r"|glpat-[\w-]{16,}|hv[sbr]\.[\w-]{20,}|(?:AKIA|ASIA)[0-9A-Z]{16}|xox[abposr]-[\w-]{10,}"
               r"|nvapi-[\w-]{16,}|eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]*)"),
    # a URL's query credentials: ?token=, &sig=, X-Amz-Signature=, access_key=, ...
    re.compile(r"[?&;](?:[\w.-]*(?:token|sig|signature|secret|password|passwd|key|credential|auth)[\w.-]*)="
               r"(?P<secret>[^&;\s#\"'<>]{4,})", re.IGNORECASE),
    # a PEM private key wherever it stands (an argument, an env value)
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?P<secret>.*?)-----END [A-Z ]*PRIVATE KEY-----", re.DOTALL),
)
# options whose value is `user:password` (curl -u, --user, --proxy-user): the password after the colon
USER_PASSWORD = frozenset({"-u", "--user", "--proxy-user", "-U"})
# a short option with its secret value attached: mysql -pPASSWORD
ATTACHED = re.compile(r"-p(?!thread$|edantic$|ipe$|ie$)(?P<value>[^\s=-][^\s]{3,})")  # not gcc's -pthread
# Kubernetes maps of name -> value whose secret names hide their values (a CSI volume's volumeAttributes,
# a flexVolume's options, a StorageClass's parameters, a ConfigMap's or Secret's data)
NAMED_VALUES = frozenset({"volumeAttributes", "options", "parameters", "data", "stringData"})
# structured values: a list of NAME=value (`k=v,secret_key=x`, `AccountName=a;AccountKey=b`)
PAIRS = re.compile(r"(?P<name>[A-Za-z_][\w.-]*)=(?P<value>[^,;&]*)")


def is_secret_name(name: str) -> bool:
    words = [w.lower() for w in WORD.findall(name)]
    if not words:
        return False
    if any(w in SECRET_WORDS for w in words):
        return True
    if words[-1] == "key" or (words[-1] == "pwd" and len(words) > 1):  # `PWD` alone is the working directory
        return True
    return len(words) == 1 and words[0].endswith(SECRET_ENDINGS)


def _secret_option(name: str) -> bool:
    return name in SECRET_SHORT or is_secret_name(name.lstrip("-"))


def shell_words(line: str) -> list[str]:
    """The words of a shell command line, `;`, `&&`, `|` and parentheses apart; ValueError when
    its quotes do not close."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split, lex.commenters = True, ""
    return list(lex)


class _Redaction:
    """One redaction pass: what may be shown, and the values it masked (for `text`)."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def hide(self, value: str) -> str:
        self.found.add(value)
        return MASK

    @property
    def secrets(self) -> tuple[str, ...]:
        """Longest first, so that a secret holding another is replaced whole."""
        hunted = {v for v in self.found if len(v) >= MIN_SECRET and v != MASK and v.lower() not in BOOLEANS}
        return tuple(sorted(hunted, key=len, reverse=True))

    def argv(self, args: Sequence[str], depth: int = 0) -> list[str]:
        out: list[str] = []
        value_next = False  # the word before was a secret option: this one is its value, unless an option
        user_next = False  # the word before was `-u`/`--user`: this one is user:password
        for arg in args:
            if value_next and not arg.startswith("-"):
                out.append(self.hide(arg))
                value_next = False
                continue
            if user_next and not arg.startswith("-"):
                out.append(self.user_password(arg))
                user_next = value_next = False
                continue
            user_next = arg in USER_PASSWORD
            if (attached := ATTACHED.fullmatch(arg)) is not None:
                out.append("-p" + self.hide(attached["value"]))
                value_next = False
                continue
            m = OPTION.fullmatch(arg)
            if m is None:
                value_next = False
                out.append(self.word(arg, depth))
                continue
            if m["name"] in USER_PASSWORD and m["sep"] is not None:
                out.append(m["name"] + m["sep"] + self.user_password(m["value"]))
                value_next = user_next = False
                continue
            secret = _secret_option(m["name"])
            value_next = secret and m["sep"] is None
            if m["sep"] is None:
                out.append(arg)
            else:
                out.append(m["name"] + m["sep"] + (self.hide(m["value"]) if secret else self.word(m["value"], depth)))
        return out

    def user_password(self, value: str) -> str:
        """`user:password` as curl takes it: the user shown, the password masked."""
        user, colon, password = value.partition(":")
        return f"{user}:{self.hide(password)}" if colon and password else value

    def structured(self, word: str) -> str | None:
        """A JSON value or a list of NAME=value pairs inside one word (`--hf-overrides '{"hf_token": ...}'`,
        `k=v,secret_key=x`, `AccountName=a;AccountKey=b`): the values of secret names masked where they
        stand; None when the word is neither."""
        found: list[str] = []
        text = word.strip()
        if text[:1] in "{[":
            try:
                _secret_leaves(json.loads(text), found)
            except ValueError:
                return None
        elif "=" in text and any(c in text for c in ",;&") and not any(c.isspace() for c in text):
            found = [m["value"] for m in PAIRS.finditer(text) if is_secret_name(m["name"]) and m["value"]]
        else:
            return None
        for value in sorted(set(found), key=len, reverse=True):
            word = word.replace(value, self.hide(value))
        return self.scrub(word)

    def word(self, word: str, depth: int = 0) -> str:
        """One word that is no option: `NAME=value`, a header `Name: value`, a command line, or text."""
        if (done := self.structured(word)) is not None:
            return done
        if depth < NESTING and (m := ASSIGNMENT.fullmatch(word)):
            value = self.hide(m["value"]) if is_secret_name(m["name"]) else self.word(m["value"], depth + 1)
            return f"{m['name']}={value}"
        if (m := HEADER.fullmatch(word)) and is_secret_name(m["name"]):
            self.found.add(m["value"].split()[-1])  # the credential alone, as a log may print it
            return f"{m['name']}:{m['space']}{self.hide(m['value'])}"
        if depth < NESTING and any(c.isspace() for c in word):
            return self.command(word, depth + 1)
        return self.scrub(word)

    def command(self, line: str, depth: int) -> str:
        """A command line inside one word, split as a shell would and redacted word by word; the
        values found are masked where they stand in it, so that the script reads as it was."""
        probe = _Redaction()
        try:
            if len(line) > SPLIT_AT_MOST:
                raise ValueError("too long to split")
            probe.argv(shell_words(line), depth)
            probe.scrub(line)  # a credential across words (`Bearer x`)
            whole = any(v not in line for v in probe.found)  # unquoting changed a value: it cannot be found
        except ValueError:  # unbalanced quotes: where a value ends is unknown, so the whole word goes
            probe.argv([w for w in re.split(r"[\s'\"]+", line) if w], NESTING)
            whole = True
        if not probe.found:
            return line
        self.found |= probe.found
        if whole:
            return self.hide(line)
        for value in sorted(filter(None, probe.found), key=len, reverse=True):
            line = line.replace(value, MASK)
        return line

    def scrub(self, text: str) -> str:
        for pattern in SCRUBS:
            text = pattern.sub(self._mask, text)
        return text

    def _mask(self, m: re.Match[str]) -> str:
        start, end = m.span("secret")
        return m.string[m.start():start] + self.hide(m["secret"]) + m.string[end:m.end()]

    def env(self, entries: Iterable[Any]) -> list[Any]:
        """Kubernetes name/value entries (env, httpHeaders): literal values of secret names masked;
        references (`valueFrom: secretKeyRef`, configMapKeyRef, fieldRef) hold no value and stay."""
        out: list[Any] = []
        for entry in entries:
            if not isinstance(entry, Mapping):
                out.append(self.kube(entry))
                continue
            secret = is_secret_name(str(entry.get("name", "")))
            out.append({k: (self.hide(str(v)) if secret else self.word(v) if isinstance(v, str) else v) if k == "value"
                        else self.kube(v) for k, v in entry.items()})
        return out

    def mapping(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """name -> value (annotations, `--context`): values of secret names masked, the others
        redacted as one word; the last-applied configuration is dropped."""
        return {k: self.hide(str(v)) if is_secret_name(str(k)) else self.word(v) if isinstance(v, str) else self.kube(v)
                for k, v in values.items() if k != LAST_APPLIED}

    def kube(self, obj: Any) -> Any:
        """A Kubernetes object or any part of it: env and headers, commands, annotations redacted;
        every other text scrubbed of credentials."""
        if isinstance(obj, Mapping):
            out: dict[str, Any] = {}
            for k, v in obj.items():
                if k == "annotations" and isinstance(v, Mapping):
                    out[k] = self.mapping(v)
                elif k in NAMED_VALUES and isinstance(v, Mapping):
                    out[k] = self.mapping(v)  # a CSI volume's attributes, a flexVolume's options: secret names
                elif k in ("env", "httpHeaders") and isinstance(v, list):
                    out[k] = self.env(v)
                elif k in ("command", "args") and isinstance(v, list):
                    out[k] = self.argv([str(x) for x in v])
                else:
                    out[k] = self.kube(v)
            return out
        if isinstance(obj, list):
            return [self.kube(x) for x in obj]
        return self.scrub(obj) if isinstance(obj, str) else obj


def _secret_leaves(obj: Any, found: list[str], secret: bool = False) -> None:
    """The scalar values under a secret name in parsed JSON, as text."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            _secret_leaves(v, found, secret or is_secret_name(str(k)))
    elif isinstance(obj, list):
        for v in obj:
            _secret_leaves(v, found, secret)
    elif secret and obj is not None and not isinstance(obj, bool):
        found.append(str(obj))


def argv(args: Sequence[str]) -> list[str]:
    """A command line as it may be shown: `--api-key sk-1`, `--api-key=sk-1`, `--api-key:sk-1` ->
    `--api-key <redacted>` (the same forms), `HF_TOKEN=x` -> `HF_TOKEN=<redacted>`,
    `sh -c "curl -H 'Authorization: Bearer x'"` -> `sh -c "curl -H 'Authorization: <redacted>'"`."""
    return _Redaction().argv(args)


def secret_values(args: Sequence[str]) -> tuple[str, ...]:
    """The values `argv` masks, so that free text can be scrubbed of them too (see `text`)."""
    r = _Redaction()
    r.argv(args)
    return r.secrets


def mapping(values: Mapping[str, Any]) -> dict[str, Any]:
    return _Redaction().mapping(values)


def kube(obj: Any) -> Any:
    """A copy of a Kubernetes object (a pod template, a sister's values) as it may be shown or stored."""
    return _Redaction().kube(obj)


def kube_secret_values(obj: Any) -> tuple[str, ...]:
    """The values `kube` masks in obj (a pod template's literal env secrets, its annotations)."""
    r = _Redaction()
    r.kube(obj)
    return r.secrets


def text(value: str, secrets: Iterable[str] = ()) -> str:
    """Free text (a log, an error message) with every known secret value (see `secret_values`)
    replaced wherever it appears, and credentials in URLs, headers and known shapes masked."""
    for secret in secrets:
        value = value.replace(secret, MASK)
    return _Redaction().scrub(value)
