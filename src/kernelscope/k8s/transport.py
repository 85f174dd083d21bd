"""The capture engine's Kubernetes transport: ncu runs in a pod, reports come back with `kubectl cp`.

- wrap (default): a sister pod runs the serving command under a scoped `ncu --target-processes all`
  (every tensor-parallel rank is covered; no TCP session); the report lands in an emptyDir that the
  sister's tools sidecar shares, and exports run there.
- attach: a sister holds a single-process server under `ncu --mode launch`; the tools sidecar runs
  `ncu --mode attach` to 127.0.0.1.
- direct: the production pod itself, already attachable; a debug container attaches, and at the
  end kernelscope ends the in-pod ncu and the container's sleep by pid, so nothing stays running.

Each capture unit gets its own sister (a launched process takes one attach session; a wrapped pod
runs one ncu); the sister is uninstalled when the unit ends, and on any failure or signal.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import redact
from ..capture.bundle import parse_gpu_facts
from ..capture.transport import Outcome, Progress, complete_report
from ..errors import KubeError
from ..files import parse_json
from ..manifest import Transport
from ..ncu.argv import launch_argv
from ..report_manifest import GpuFacts
from . import sister, watch
from .findings import Inspection, named
from .inspect import INJECTION_ENV
from .kubectl import Kube, Step, check_name, ref

POLL_S = 2.0
PIDFILE = "/tmp/kernelscope-ncu.pid"
# constant scripts: user values only ever arrive as their positional arguments ("$@", "$1")
RECORD_PID_AND_EXEC = 'echo $$ > "$0"; exec "$@"'
SLEEP_WITH_PID = 'sleep "$1" & echo $! > "$0"; wait'
KILL_PIDFILES = 'for f in "$@"; do [ -f "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null; done; true'
# a warm-up POST: "$1" the body, "$2" the URL; the server's API key (if it wants one) is read from the
# container's env, which the sister fills by reference (sister.API_KEY_ENV), so no value passes here;
# each ends with the HTTP status, which _status reads
KEY = 'k="${KERNELSCOPE_API_KEY:-$VLLM_API_KEY}"; '
POST_CURL = (KEY + 'if [ -n "$k" ]; then set -- "$1" "$2" -H "Authorization: Bearer $k"; fi; b=$1; u=$2; shift 2; '
             'exec curl -s -m 120 -w "\nHTTP %{http_code}\n" -X POST -H "Content-Type: application/json" "$@" '
             '-d "$b" "$u"')
POST_WGET = (KEY + 'if [ -n "$k" ]; then set -- "$1" "$2" "--header=Authorization: Bearer $k"; fi; b=$1; u=$2; '
             'shift 2; exec wget -S -q -O - --header="Content-Type: application/json" "$@" --post-data="$b" "$u" 2>&1')
POST_PY = ("import os, sys, urllib.error, urllib.request as u\n"
           "k = os.environ.get('KERNELSCOPE_API_KEY') or os.environ.get('VLLM_API_KEY')\n"
           "h = {'Content-Type': 'application/json', **({'Authorization': 'Bearer ' + k} if k else {})}\n"
           "try:\n r = u.urlopen(u.Request(sys.argv[2], data=sys.argv[1].encode(), headers=h), timeout=120)\n"
           " print(r.read().decode(errors='replace')[-2000:]); print('HTTP', r.status)\n"
           "except urllib.error.HTTPError as e:\n print('HTTP', e.code)")
POSTS = (("curl", ["sh", "-c", POST_CURL, "ks"]), ("wget", ["sh", "-c", POST_WGET, "ks"]),
         ("python3", ["python3", "-c", POST_PY]))
HTTP_STATUS = re.compile(r"HTTP(?:/[\d.]+)? (\d{3})\b")
REFUSED = (401, 403)  # the server wants credentials kernelscope did not find
REFUSALS_TO_STOP = 3


def _status(reply: str) -> int | None:
    """The HTTP status a POST script's output ends with (wget -S: the last response line)."""
    found = HTTP_STATUS.findall(reply)
    return int(found[-1]) if found else None


@dataclass(frozen=True)
class Warmup:
    """OpenAI-style requests sent to the sister itself (from inside its pod, to 127.0.0.1). With the
    serving window, `requests` go first (compilation, caches), then vLLM's POST /start_profile opens
    ncu's window (`--profile-from-start off`), and requests go on until the report is whole."""

    requests: int
    port: int | None  # None: the port the server's log says it listens on
    path: str = "/v1/completions"
    body: str = '{"prompt": "hello", "max_tokens": 16}'
    serving_window: bool = False

    def url(self, port: int, path: str | None = None) -> str:
        return f"http://127.0.0.1:{port}{path or self.path}"


# vLLM (uvicorn) says where it serves: "Uvicorn running on http://0.0.0.0:8000"
SERVING_PORT = re.compile(r"Uvicorn running on https?://[^\s:]+:(\d+)")


class PodTransport:
    kind: Transport = "pod"

    def __init__(self, kube: Kube, ins: Inspection, opts: sister.SisterOptions, serving: Sequence[str],
                 warmup: Warmup | None, say: Progress, one_sister: bool = False) -> None:
        self.kube, self.ins, self.opts, self.serving = kube, ins, opts, list(serving)
        self.warmup, self.say = warmup, say
        self.strategy = ins.strategy
        # attach strategy, --multiplex: one held sister takes every unit's session (one model load)
        self.one_sister = one_sister and ins.strategy == "attach"
        self.pod: str | None = None  # the pod ncu runs in, for this unit
        self.tools: str = sister.TOOLS
        self.installed: list[str] = []  # releases not yet uninstalled
        self.session: subprocess.Popen[str] | None = None
        self.debug_container: str | None = None
        self.facts: GpuFacts | None = None
        self.values: dict[str, Any] | None = None  # the last sister's values (for the bundle, redacted)
        self.sisters: list[dict[str, Any]] = []  # every sister's Pod, secrets redacted (a dry run prints them)
        self.replies: list[dict[str, Any]] = []  # warm-up replies, for the bundle
        self.window_opened_s: float | None = None  # when POST /start_profile opened the serving window
        self.port: int | None = None  # where the sister's server listens, once known
        self.poster: tuple[str, str, list[str]] | None = None  # the container and program warm-ups are sent with
        # the literal secrets the pod is given (template env, annotations, serving command): masked in its logs
        self.secrets = (*redact.kube_secret_values(ins.template), *redact.secret_values(self.serving))
        self.unit = 0

    # -- the engine's protocol -------------------------------------------------------------------
    def report_path(self, local: Path) -> str:
        base = sister.REPORTS if self.strategy != "direct" else "/tmp/kernelscope"
        return f"{base}/{local.name}"

    def capture(self, argv: list[str], remote: str, local: Path, env: Mapping[str, str], timeout: float,
                progress: Progress) -> Outcome:
        t0 = time.monotonic()
        self.unit += 1
        if self.strategy == "direct":
            self._debug_container()
        elif not (self.one_sister and self.pod):  # a sister a unit, or the first unit's kept for the rest
            command = argv if self.strategy == "wrap" else launch_argv(self.serving, ncu=self.opts.ncu)
            self._install(command)
        complete, output = self._wait(argv, remote, local, t0 + timeout, progress)
        return Outcome(None, output, complete, time.monotonic() - t0)

    def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        """A command in the tools sidecar (or the debug container): exports, nvidia-smi."""
        if self.pod is None:
            return 127, ""
        step = self.kube.k(*self._exec(self.tools), *argv, check=False, defer=True, timeout=timeout)
        code = self.kube.steps[-1].exit_code
        return (0 if code is None else code), step or ""

    def gpu_facts(self) -> GpuFacts:
        return self.facts or GpuFacts()

    def extra_files(self) -> dict[str, str]:
        """What the bundle keeps of the sister: its values (secrets redacted) and the warm-up replies."""
        files = {}
        if self.values:
            files["sister-values.json"] = json.dumps(sister.redacted(self.values), indent=1) + "\n"
        if self.replies:
            files["warmup.json"] = json.dumps(self.replies, indent=1) + "\n"
        return files

    def end_unit(self) -> None:
        """Remove this unit's sister (or end the direct session) before the next one; with one sister
        for every unit, end only this unit's attach session (the sister is removed by cleanup)."""
        if self.one_sister:
            self._end_session()
            return
        self.cleanup()
        self.pod = None

    def _end_session(self) -> None:
        """The in-pod attach client ended by its pid (ending kubectl exec leaves it running), then the exec."""
        if self.pod and not self.kube.dry_run:
            self.kube.k(*self._exec(self.tools), "sh", "-c", KILL_PIDFILES, "ks", PIDFILE, mutates=True, check=False,
                        timeout=60)
        self._close_exec()

    def _close_exec(self) -> None:
        """The local kubectl exec of this unit's attach session, ended."""
        if self.session is not None and self.session.poll() is None:
            self.session.terminate()
            self.session.wait(timeout=10)
        self.session = None

    # -- steps -----------------------------------------------------------------------------------
    def _release(self) -> str:
        return self.opts.release if self.unit == 1 else f"{self.opts.release[:50]}-{self.unit}"

    def _install(self, gpu_command: list[str]) -> None:
        release = self._release()
        ours = replace(self.opts, release=release)
        self.values = sister.values(self.ins, ours, gpu_command)
        self.sisters.append(sister.pod(release, sister.redacted(self.values)))
        existing = self.kube.h("status", "-o", "json", "--", release, mutates=False, check=False)
        if existing and existing.strip().startswith("{"):
            labels = (parse_json(existing, f"helm status {release}", "the output").get("labels") or {})
            if labels.get(sister.OWNER_LABEL) != sister.OWNER:
                raise KubeError(f"release {release} exists and is not kernelscope's: refusing to touch it; "
                                "pass another --release")
            raise KubeError(f"release {release} exists (a kernelscope sister left behind?): run "
                            f"`kernelscope k8s cleanup -n {self.kube.namespace} --release {release}` first")
        with tempfile.TemporaryDirectory() as tmp:
            vf = Path(tmp) / "values.json"
            vf.write_text(json.dumps(self.values))
            self.installed.append(release)  # from here on, cleanup uninstalls (also if helm fails half-way)
            labels = f"{sister.OWNER_LABEL}={sister.OWNER},{sister.CAPTURE_LABEL}={self.opts.capture_id}"
            self.kube.h("install", "-f", str(vf), "--labels", labels, "--timeout", f"{int(self.kube.timeout)}s",
                        "--", release, sister.chart_path())
        self.pod = release
        if not self.kube.dry_run:
            self.say(f"sister {release} installed ({self.strategy}); waiting for it to run")

    def _debug_container(self) -> None:
        """A debug container in the production pod (no --target: it must not share PIDs with the
        server), its sleep's pid recorded so that cleanup can end it."""
        assert self.ins.pod
        self.pod = self.ins.pod
        self.tools = self.debug_container = f"kernelscope-{self.opts.capture_id}-{self.unit}"
        self.kube.k("debug", ref("pod", self.pod), f"--image={self.opts.tools_image}", f"--container={self.tools}",
                    "--", "sh", "-c", SLEEP_WITH_PID, f"{PIDFILE}.sleep", str(self.opts.ttl_s), mutates=True)
        if self.kube.dry_run:
            return
        deadline = time.monotonic() + self.kube.timeout
        while time.monotonic() < deadline:
            pod = self.kube.get_json(ref("pod", self.pod), check=False)
            states = {s.get("name"): s.get("state") or {} for s in
                      (pod.get("status") or {}).get("ephemeralContainerStatuses") or []}
            if "running" in states.get(self.tools, {}):
                self.kube.k(*self._exec(self.tools), "mkdir", "-p", "/tmp/kernelscope", mutates=True)
                return
            if "terminated" in states.get(self.tools, {}):
                raise KubeError(f"debug container {self.tools} in {self.pod} ended: {states[self.tools]}")
            time.sleep(0.5)
        raise KubeError(f"debug container {self.tools} not running in {self.pod} within {self.kube.timeout:.0f} s")

    def _ready(self, progress: Progress, t0: float) -> None:
        """Once Ready: the admitted pod must not carry another profiler's injection; note the GPU."""
        pod = self.kube.get_json(ref("pod", self.pod), check=False)
        gpu = named(pod.get("spec", {}), self.ins.container)
        injected = [e for e in gpu.get("env") or [] if e.get("name") == INJECTION_ENV]
        if injected and self.strategy != "direct":
            raise KubeError(f"the admitted sister carries {INJECTION_ENV} (added at admission, e.g. by a profiler's "
                            "webhook): exclude kernelscope's pods from that webhook (label "
                            f"{sister.OWNER_LABEL}={sister.OWNER}) and run again")
        for smi in ("nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi"):  # the toolkit puts it in one of these
            q = self.kube.k(*self._exec(self.ins.container), smi, "--query-gpu=name,driver_version",
                            "--format=csv,noheader", check=False, defer=True)
            if q:
                banner = self.kube.k(*self._exec(self.ins.container), smi, check=False, defer=True)
                self.facts = parse_gpu_facts(q, banner or "")
                break
        name = self.facts.name if self.facts else None
        progress(f"{self.pod} Ready after {time.monotonic() - t0:.0f} s (GPU {name or 'unknown'})")

    def _post(self, t0: float, report_bytes: int, port: int, path: str | None = None, body: str | None = None) -> bool:
        """One request from inside the pod: curl, else busybox wget, else python3, from the tools
        container, else from the serving container (NVIDIA's CUDA image, the default tools image, has
        none of them; a vLLM image has python3). The one that answers is kept for the next requests.
        The reply and its HTTP status are kept (with its time and the report's size then) for the
        bundle's warmup.json and for saying why a window never opened."""
        assert self.warmup
        w = self.warmup
        url, data = w.url(port, path), w.body if body is None else body
        start = time.monotonic()
        tries = [self.poster] if self.poster else [(c, t, s) for c in dict.fromkeys((self.tools, self.ins.container))
                                                   for t, s in POSTS]
        for container, tool, script in tries:
            reply = self.kube.k(*self._exec(container), *script, data, url, check=False, defer=True, timeout=180)
            code = self.kube.steps[-1].exit_code
            if code in (126, 127):  # no such program here
                continue
            self.poster = (container, tool, script)
            status = _status(reply or "")
            self.replies.append({"unit": self.unit, "path": path or w.path, "t_s": round(start - t0, 2),
                                 "seconds": round(time.monotonic() - start, 3), "report_bytes": report_bytes,
                                 "exit_code": code, "status": status, "tool": tool, "container": container,
                                 "reply": redact.text(HTTP_STATUS.sub("", reply or "").strip()[-2000:], self.secrets)})
            self._refused()
            return status is not None and 200 <= status < 300
        return False

    def _refused(self) -> None:
        """Stop at once when the server keeps answering 401/403: no window will ever open."""
        last = [r.get("status") for r in self.replies[-REFUSALS_TO_STOP:]]
        if len(last) == REFUSALS_TO_STOP and all(s in REFUSED for s in last):
            where = sister.API_KEY_ENV if self.ins.api_key else "no API key found"
            raise KubeError(f"{self.pod}: warm-up refused: {REFUSALS_TO_STOP} requests answered HTTP {last[-1]} "
                            f"(the server wants credentials; {where}: "
                            + (f"the key kernelscope passed by reference ({self.ins.api_key}) was refused)"
                               if self.ins.api_key else "set VLLM_API_KEY from a Secret in the deployment, or "
                               "--api-key $VAR in its command, so the sister's requests carry it)"))

    def _traffic(self, t0: float, size: int, sent: int, log: str) -> int:
        """The next step of the traffic the sister gets once Ready: warm-up requests, then (serving
        window) POST /start_profile once and requests until the report is whole. The requests sent."""
        w = self.warmup
        assert w is not None
        found = SERVING_PORT.findall(log)
        port = self.port = w.port or (int(found[-1]) if found else None)
        if port is None:  # the server has not said where it listens yet
            return sent
        if sent < w.requests or (w.serving_window and self.window_opened_s is not None):
            return sent + 1 if self._post(t0, size, port) else sent  # not yet: again at the next poll
        if w.serving_window and self.window_opened_s is None:
            if self._post(t0, size, port, "/start_profile", "{}"):
                self.window_opened_s = round(time.monotonic() - t0, 2)
                self.say(f"{self.pod}: serving window opened (POST /start_profile) after {sent} warm-up request(s), "
                         f"{self.window_opened_s:.0f} s after the sister started")
        return sent

    def _start_attach(self, argv: list[str]) -> None:
        cmd = self.kube.kubectl_argv(*self._exec(self.tools), "sh", "-c", RECORD_PID_AND_EXEC, PIDFILE, *argv)
        self.kube.steps.append(Step(cmd, True))
        if not self.kube.dry_run:
            self.session = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def _size(self, remote: str) -> int:
        out = (self.kube.k(*self._exec(self.tools), "wc", "-c", remote, check=False, defer=True) or "").split()
        return int(out[0]) if out and out[0].isdigit() else 0

    def _log(self) -> str:
        if self.strategy != "wrap":
            return ""
        return self.kube.k("logs", ref("pod", self.pod), f"--container={self.ins.container}", "--tail=3000",
                           check=False,
                           defer=True) or ""

    def _wait(self, argv: list[str], remote: str, local: Path, deadline: float,
              progress: Progress) -> tuple[bool, str]:
        t0, ready, sent, last, said, pod = time.monotonic(), False, 0, -1, 0.0, {}
        if self.kube.dry_run:
            if self.strategy != "wrap":
                self._start_attach(argv)
            self.kube.k(*self._cp(remote, local), defer=True)
            return False, ""
        if self.strategy == "direct":
            self._start_attach(argv)
        while time.monotonic() < deadline:
            pod = self.kube.get_json(ref("pod", self.pod), check=False)
            st = watch.state(pod, self.ins.container)
            log = self._log() if st.running or st.failure else ""
            errors = watch.ncu_errors(log)
            if st.failure or errors:
                if st.culprit and st.culprit != self.ins.container:
                    culprit = check_name("container", st.culprit, cluster=True)
                    log = self.kube.k("logs", ref("pod", self.pod), f"--container={culprit}", "--tail=20",
                                      check=False) or ""
                tail = " | ".join((errors or log.strip().splitlines())[-5:])
                why = st.failure or "ncu reported an error"
                raise KubeError(f"{self.pod}: " + redact.text(why + (f"; log: {tail}" if tail else ""), self.secrets))
            if st.running and self.strategy == "attach" and self.session is None:
                self._start_attach(argv)
            if st.ready and not ready:
                ready = True
                self._ready(progress, t0)
            size = self._size(remote) if st.running else 0
            if ready and self.warmup:
                sent = self._traffic(t0, size, sent, log if self.strategy == "wrap" else self._serving_log())
            if size > 0 and size == last:
                self.kube.k(*self._cp(remote, local), check=False)
                if complete_report(local):
                    return True, self._ncu_lines(log)
            last = size
            if time.monotonic() - said > 10:
                said = time.monotonic()
                progress(f"{self.pod}: {st.phase}{', Ready' if ready else ''}, {sent} warm-up request(s), report "
                         f"{f'{size:,} bytes' if size else 'not yet written'} ({time.monotonic() - t0:.0f} s)")
            time.sleep(POLL_S)
        waited = f"{self.pod}: no complete report after {time.monotonic() - t0:.0f} s"
        stuck = watch.waiting_on(pod, self.ins.container) or self._traffic_stuck(sent)
        if stuck:
            raise KubeError(f"{waited}, stuck at {stuck}")
        log = self._ncu_lines(self._log())
        return False, f"{log}\n(kernelscope: {waited}; {watch.ncu_phase(log)})"

    def _traffic_stuck(self, sent: int) -> str | None:
        """Where the traffic a Ready sister needs stopped: warm-up (with the replies' HTTP statuses)
        or the serving window; None when it got through (ncu's part is next)."""
        w = self.warmup
        if w is None:
            return None
        statuses = ", ".join(f"{n} x {s or 'no reply'}" for s, n in
                             Counter(r.get("status") for r in self.replies if r["path"] == w.path).items())
        if self.port is None:
            return ("warm-up: the server never said where it listens (no 'Uvicorn running on' line in its log): "
                    "still loading, or pass --warmup-port")
        if sent < w.requests:
            return f"warm-up: {sent} of {w.requests} request(s) to {w.path} succeeded (HTTP: {statuses or 'none sent'})"
        if w.serving_window and self.window_opened_s is None:
            tried = [r.get("status") for r in self.replies if r["path"] == "/start_profile"]
            return (f"window: POST /start_profile was not accepted (HTTP: {', '.join(map(str, tried)) or 'not sent'}); "
                    "the server's vLLM may not have its CUDA profiler on (the plan's window notes say how it was "
                    "asked for)")
        return None

    def _serving_log(self) -> str:
        """The server container's own log (attach: the launched server's), for the port it serves on."""
        return self.kube.k("logs", ref("pod", self.pod), f"--container={self.ins.container}", "--tail=500",
                           check=False, defer=True) or ""

    def _exec(self, container: str) -> list[str]:
        """`kubectl exec` in this unit's pod, up to the `--` its command follows."""
        return ["exec", ref("pod", self.pod), f"--container={container}", "--"]

    def _cp(self, remote: str, local: Path) -> list[str]:
        """`kubectl cp` of the report: its pod as NAMESPACE/POD:PATH (a word kubectl cannot read as an
        option), both paths after `--`."""
        pod = check_name("pod", self.pod)
        return ["cp", f"--container={self.tools}", "--", f"{self.kube.namespace}/{pod}:{remote}", str(local)]

    def _ncu_lines(self, log: str) -> str:
        if self.session is not None and self.session.stdout is not None and self.session.poll() is not None:
            log += self.session.stdout.read()
        return "\n".join(line for line in log.splitlines() if line.startswith("==")) or log[-4000:]

    # -- cleanup ---------------------------------------------------------------------------------
    def cleanup(self) -> list[str]:
        """Everything this transport started, removed; each step tried even if one fails."""
        problems = []
        if self.debug_container and self.pod:
            try:  # end the in-pod ncu and the debug container's sleep by pid: nothing stays running
                self.kube.k(*self._exec(self.debug_container), "sh", "-c", KILL_PIDFILES, "ks", PIDFILE,
                            f"{PIDFILE}.sleep", mutates=True, check=False, timeout=60)
            except KubeError as exc:
                problems.append(str(exc))
        self._close_exec()
        while self.installed:
            release = self.installed[0]
            if not self.kube.dry_run:
                self.say(f"cleaning up: uninstalling {release}")
            try:
                self.kube.uninstall(release, self.kube.timeout)
                self.kube.k("wait", "--for=delete", ref("pod", release), f"--timeout={int(self.kube.timeout)}s",
                            mutates=True, check=False, timeout=self.kube.timeout + 30)
            except KubeError as exc:
                problems.append(str(exc))
            self.installed.pop(0)
        return problems
