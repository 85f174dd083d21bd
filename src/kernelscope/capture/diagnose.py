"""Why a capture came back empty or failed, and what to do, from ncu's own output.

Patterns are taken from real ncu 2025.3.1 output saved on the GPU machine (tests/fixtures/ncu-output)
and, for the two causes that machine cannot produce, from NVIDIA's documented messages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

NO_KERNELS = "No kernels were profiled"
REPLAY_FAILED = re.compile(r'==ERROR== Failed to profile "([^"]+)"')


@dataclass(frozen=True)
class Diagnosis:
    cause: str
    explanation: str
    fix: str


def available_kernels(output: str) -> list[str]:
    """The names ncu lists after an empty capture ("Available Kernels:\\n1. name")."""
    m = re.search(r"Available Kernels:\s*\n((?:\s*\d+\.\s*.+\n?)+)", output)
    if not m:
        return []
    return [re.sub(r"^\s*\d+\.\s*", "", line).strip() for line in m.group(1).splitlines() if line.strip()]


def suggest_regex(kernel_filter: str | None, names: Sequence[str]) -> str | None:
    """An exact name that matches nothing but is part of a kernel that ran: the regex that would
    match (ncu's --kernel-name is exact unless it starts with regex:)."""
    if not kernel_filter or kernel_filter.startswith("regex:"):
        return None
    if any(kernel_filter in n for n in names):
        return f"regex:{re.escape(kernel_filter)}"
    return None


def cuda_major(text: str | None) -> int | None:
    m = re.search(r"(\d+)\.\d+", text or "")
    return int(m.group(1)) if m else None


def matches(kernel_filter: str, name: str) -> bool:
    """ncu's filter syntax: `regex:EXPR` searches the name, anything else must equal it."""
    if kernel_filter.startswith("regex:"):
        try:
            return re.search(kernel_filter.removeprefix("regex:"), name) is not None
        except re.error:
            return False
    return kernel_filter == name


def unmatched_kernels(kernels: Sequence[str], profiled: Sequence[str]) -> list[str]:
    """The kernels of a combined filter that no profiled launch matched (only asked for when a
    session covered several: its launch count may have gone to the others)."""
    if len(kernels) < 2:
        return []
    return [k for k in kernels if not any(matches(k, name) for name in profiled)]


def diagnose(output: str, target: Sequence[str] = (), driver_cuda: str | None = None,
             app_cuda: str | None = None, kernel_filter: str | None = None,
             launch_skip: int = 0, attached: bool = False) -> list[Diagnosis]:
    """Every cause the output (and the CUDA versions, when known) points to; empty if none.
    `attached`: the output is an attach session's, against a process held by `kernelscope launch`."""
    found: list[Diagnosis] = []
    if "ERR_NVGPUCTRPERM" in output:
        found.append(Diagnosis("counter-permission",
                               "the user may not read GPU performance counters (ERR_NVGPUCTRPERM)",
                               "run as root, or load nvidia with NVreg_RestrictProfilingToAdminUsers=0; in a pod, "
                               "give the container CAP_SYS_ADMIN (securityContext.capabilities.add)"))
    drv, app = cuda_major(driver_cuda), cuda_major(app_cuda)
    skew_text = re.search(r"(driver version is insufficient|CUDA_ERROR_(?:INSUFFICIENT_DRIVER|COMPAT_NOT_SUPPORTED)"
                          r"|Failed to initialize the profiler|CUPTI_ERROR_\w+)", output)
    if (drv is not None and app is not None and drv != app) or skew_text:
        versions = ""
        if drv and app:
            versions = f" (driver supports CUDA {driver_cuda}, application built for CUDA {app_cuda})"
        found.append(Diagnosis("cuda-driver-skew",
                               "CUPTI could not initialise: the application's CUDA major version differs from the "
                               f"driver's{versions}" + (f"; ncu said: {skew_text.group(0)}" if skew_text else ""),
                               "use an image whose CUDA major version matches the node driver (or a newer driver); "
                               "ncu records 0 kernels until then"))
    if "Unexpected number of profiled kernels" in output or "kernel count differs" in output:
        found.append(Diagnosis("app-replay-varying-kernels",
                               "application replay saw a different number of kernels in a later pass",
                               "use --replay-mode kernel (the default), or the single-op harness: kernelscope op ..."))
    if "No attachable process found" in output:
        found.append(Diagnosis("no-attachable-process",
                               "no process waits for an attach on that host/port: it was not started with "
                               "`kernelscope launch`, has exited, or an earlier attach client was cut off before ncu "
                               "finished its report (ncu 2025.3.1 took three sessions in a row on one process when "
                               "each ended after its report was whole)",
                               "start the program with `kernelscope launch -- PROGRAM`, and let each capture --attach "
                               "end by itself"))
    unknown = re.search(r"Failed to prepare kernel for profiling|Unknown Error on device", output) is not None
    if attached and unknown:
        found.append(Diagnosis("held-process-unprofilable",
                               "the held process can no longer be profiled (ncu: Failed to prepare kernel for "
                               "profiling, Unknown Error on device): measured with ncu 2025.3.1 on an H200, a held "
                               "process is left so, for its life, by an earlier attach session whose launches took "
                               "one pass (an `ncu --metrics` list of one pass), while sessions of several passes "
                               "leave it whole",
                               "restart the program under `kernelscope launch`; against it, capture --attach "
                               "(--multiplex gives every session a counter of several passes), and give a one-pass "
                               "ncu session only as the last"))
    failed = list(dict.fromkeys(REPLAY_FAILED.findall(output)))
    if failed and not unknown:  # that error is not replay's memory
        found.append(Diagnosis("replay-failed",
                               f"ncu matched {', '.join(failed)} and failed to profile it (ncu: Failed to profile); "
                               "the cause measured here: kernel replay could not save the memory the launch may "
                               "write before its first pass (on an H200 with ncu 2025.3.1, a launch in a process "
                               "holding a 132 GiB tensor profiled in one pass and failed at five, after 72 s, "
                               "killing the program)",
                               "capture the program with --multiplex (not --attach: a held process takes no "
                               "one-pass session), whose one-pass groups save nothing and whose counters of several "
                               "passes stay unmeasured; or lower the program's memory use (vLLM: "
                               "--gpu-memory-utilization), or --replay-mode application"))
    if NO_KERNELS in output and not failed:  # a failed launch is listed as available: not a filter or skip cause
        if "requires the --target-processes all" in output:
            wrapper = target and target[0].rsplit("/", 1)[-1] in {"env", "sh", "bash"}
            found.append(Diagnosis("child-processes",
                                   "the kernels ran in a child process that ncu was told not to follow"
                                   + (f" (the program is the wrapper `{target[0]}`)" if wrapper else ""),
                                   "use --target-processes all (kernelscope's default); for `env VAR=v cmd`, let "
                                   "kernelscope set the variables on ncu instead"))
        names = available_kernels(output)
        hits = [n for n in names if kernel_filter and matches(kernel_filter, n)]
        if hits and launch_skip > 0:
            found.append(Diagnosis("skipped-by-launch-skip",
                                   f"the filter matched {', '.join(hits)}, but --launch-skip {launch_skip} skipped "
                                   "every matching launch before the program ended",
                                   "lower --launch-skip (it counts matching launches only), or let the program "
                                   "run longer"))
        elif names:
            hint = suggest_regex(kernel_filter, names)
            found.append(Diagnosis("filter-matched-nothing",
                                   "the --kernel filter matched none of the kernels that ran: " + ", ".join(names),
                                   "pick one of those names (or regex:PART of one) with --kernel"
                                   + (f"; did you mean --kernel {hint}?" if hint else "")))
        if not found:
            found.append(Diagnosis("no-kernels", "ncu profiled no kernel and said nothing more",
                                   "check that the program launches CUDA kernels, and --launch-skip is not past "
                                   "the last launch"))
    return found
