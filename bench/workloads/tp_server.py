"""A vLLM-like server for live-pod tests: N CUDA worker processes (like tensor-parallel ranks) behind
an OpenAI-style HTTP endpoint.

The parent serves `GET /health` (200 once every worker has loaded its "model") and
`POST /v1/completions` ({"max_tokens": n}): each worker runs n decode steps (RMSNorm, a bf16 GEMM,
SiLU, a residual copy: ~6 small kernels) and the reply carries each rank's µs per step. Workers
are idle between requests, so the kernels run only when traffic arrives, as in a real server.
Every request is also logged as one JSON line, so `kubectl logs` shows the step time over time.

    python3 bench/workloads/tp_server.py --procs 2 --port 8000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import signal
import sys
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Lock
from typing import Any


def worker(rank: int, hidden: int, jobs: Any, results: Any) -> None:
    import torch

    torch.cuda.set_device(rank % torch.cuda.device_count())
    x = torch.randn(8, hidden, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(hidden, hidden, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(hidden, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        h = torch.nn.functional.rms_norm(x, (hidden,), g)
        y = h @ w
        x.copy_((torch.nn.functional.silu(y) + x) * 0.5)

    step()
    torch.cuda.synchronize()
    results.put({"rank": rank, "ready": True, "device": torch.cuda.get_device_name()})
    while (n := jobs.get()) is not None:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        results.put({"rank": rank, "steps": n, "us_per_step": round((time.perf_counter() - t0) / n * 1e6, 1)})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", "--tensor-parallel-size", type=int, default=2,
                    help="worker processes (as vLLM's --tensor-parallel-size starts)")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--port-offset-env", help="add crc32(that env var) %% 500 to --port: pods of a test cluster "
                                              "without network namespaces (all on 127.0.0.1) then do not collide")
    ap.add_argument("--hidden", type=int, default=4096)
    a = ap.parse_args()
    if a.port_offset_env:
        a.port += zlib.crc32(os.environ.get(a.port_offset_env, "").encode()) % 500
    ctx = mp.get_context("spawn")
    jobs = [ctx.Queue() for _ in range(a.procs)]
    results = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, a.hidden, jobs[r], results), daemon=True) for r in range(a.procs)]
    for p in procs:
        p.start()
    state = {"ready": 0}
    lock = Lock()

    def log(row: dict[str, Any]) -> None:
        print(json.dumps({"wall": round(time.time(), 3), **row}), flush=True)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            ok = self.path.startswith("/health") and state["ready"] == a.procs
            self._send(200 if ok else 503, {"ready": state["ready"], "procs": a.procs})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            n = max(1, min(int(body.get("max_tokens", 16)), 4096))
            with lock:  # one batch at a time, as a server's scheduler would
                t0 = time.perf_counter()
                for q in jobs:
                    q.put(n)
                ranks = [results.get() for _ in jobs]
                ms = (time.perf_counter() - t0) * 1e3
            row = {"event": "request", "steps": n, "ms": round(ms, 2),
                   "us_per_step": {str(r["rank"]): r["us_per_step"] for r in ranks}}
            log(row)
            self._send(200, {"object": "text_completion", "choices": [{"text": "ok"}], **row})

    while state["ready"] < a.procs:
        msg = results.get()
        state["ready"] += 1
        log({"event": "worker-ready", **msg})
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)

    def stop(*_: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    log({"event": "serving", "port": a.port, "procs": a.procs})
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        for q in jobs:
            q.put(None)
    sys.exit(0)


if __name__ == "__main__":
    main()
