"""The flows real vLLM needs (issue 20), on what runs without a GPU: kernel names as ncu's
demangled names give them (a CUTLASS-wrapped FlashAttention-3 kernel is `device_kernel` by its
function name), the kernel listing pass's grouping and selectors, and `launch`'s hold watch on a
real process."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

from kernelscope.capture import inventory, launcher
from kernelscope.ingest.names import kernel_name
from kernelscope.ncu.plan import CapturePlan, combined_filter, name_regex

FA3 = ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
       "CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1>>, cute::tuple<cute::C<128>, "
       "cute::C<128>, cute::C<128>>, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false>, "
       "flash::CollectiveEpilogueFwd<>, flash::VarlenDynamicPersistentTileScheduler<128, 256, 128, false, true, "
       "true>>>>(T1::Params)")
COMBINE = ("void cutlass::device_kernel<flash::FlashAttnFwdCombine<cute::tuple<cute::C<8>, cute::C<256>>, 7, 256, 1, "
           "false, true, cutlass::bfloat16_t, float, cutlass::arch::Sm90>>(T1::Params)")
KV_WRITE = ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>("
            "__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, "
            "long, long, int, int, int, float const*, float const*)")


def test_a_wrapped_kernel_goes_by_the_kernel_inside() -> None:
    assert kernel_name(FA3, "device_kernel") == "FlashAttnFwdSm90"
    assert kernel_name(COMBINE, "device_kernel") == "FlashAttnFwdCombine"
    assert kernel_name(KV_WRITE, "reshape_and_cache_flash_kernel") == "reshape_and_cache_flash_kernel"


def test_filters_are_matched_against_demangled_names() -> None:
    """`regex:flash|fmha|attn` matched vLLM's KV-cache write by function name and never FA3, whose
    function name is device_kernel: against demangled names FA3's own name selects it, and an exact
    name finds the kernel inside its wrapper."""
    plan = CapturePlan(kernels=("regex:FlashAttnFwdSm90", "FlashAttnFwdCombine"))
    assert plan.name_base == "demangled"
    (fa3, combine) = plan.units()
    assert re.search(fa3.kernel_filter.removeprefix("regex:"), FA3)  # type: ignore[union-attr]
    assert not re.search(fa3.kernel_filter.removeprefix("regex:"), KV_WRITE)  # type: ignore[union-attr]
    assert re.search(name_regex("FlashAttnFwdCombine"), COMBINE) and not re.search(name_regex("FlashAttnFwd"), FA3)
    both = combined_filter(("regex:FlashAttnFwdSm90", "reshape_and_cache_flash_kernel"))
    assert re.search(both.removeprefix("regex:"), FA3) and re.search(both.removeprefix("regex:"), KV_WRITE)
    assert not re.search(both.removeprefix("regex:"), COMBINE)


def test_listing_selectors_pick_each_kernel_alone(sets_dir: Path) -> None:
    """The listing pass groups by full name; each kernel's --kernel value matches it and no other
    listed kernel, under ncu's demangled names."""
    rows = inventory.group(sets_dir / "ks_roofline-torch.ncu-rep")
    assert len(rows) == 9 and all(r.launches == 1 and r.total_ns for r in rows)
    assert rows[0].total_ns >= rows[-1].total_ns  # type: ignore[operator]
    for r in rows:
        pattern = r.select.removeprefix("regex:")
        assert [x.name_full for x in rows if re.search(pattern, x.name_full)] == [r.name_full], r.select
    assert {r.name: r.select for r in rows}["mm_kernel"] == "regex:mm_kernel"
    assert inventory.inventory_argv("ncu", ["python3", "x.py"], "/t/k.ncu-rep", 100) == [
        "ncu", "--clock-control", "none", "--target-processes", "all", "--metrics", "gpu__time_duration.sum",
        "--launch-count", "100", "-f", "-o", "/t/k", "python3", "x.py"]


def _program(seconds: float) -> list[str]:
    return [sys.executable, "-c", f"import time; time.sleep({seconds})"]


def test_a_held_program_with_no_attach_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its port open and its processes idle for the idle window, then the hold timeout: stopped."""
    monkeypatch.setattr(launcher, "IDLE_WINDOW_S", 2.0)
    said: list[str] = []
    t0 = time.monotonic()
    code = launcher.run(_program(60), "vllm", 49999, hold_timeout=1.5, say=said.append, probe=lambda h, p: True)
    assert code == 3 and time.monotonic() - t0 < 15
    assert said[0].startswith("vllm is held at its first CUDA call, waiting for an attach on 127.0.0.1:49999")
    assert said[-1].startswith("vllm stayed held at its first CUDA call with no attach for 2 s")


def test_a_program_that_runs_is_never_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The port open but the processes busy (released by an attach, loading, serving): it runs to its end."""
    monkeypatch.setattr(launcher, "IDLE_WINDOW_S", 1.0)
    busy = [sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 4: pass"]
    said: list[str] = []
    assert launcher.run(busy, "vllm", None, hold_timeout=0.5, say=said.append, probe=lambda h, p: True) == 0
    assert said and not any("stopping" in s for s in said)


def test_group_cpu_is_read_from_proc() -> None:
    import os

    assert launcher.group_cpu_s(os.getpgrp()) > 0


@pytest.mark.parametrize("text", ['{"profiler": "cuda"}', '{"profiler":"cuda","max_iterations":4}'])
def test_vllm_cuda_profiler_keeps_profile_from_start_off(text: str) -> None:
    from kernelscope.capture.preflight import lint

    serve = ("vllm", "serve", "m", "--profiler-config", text)
    plan, findings = lint(CapturePlan(kernels=("regex:x",), target=serve, profile_from_start=False))
    assert not plan.profile_from_start and not [f for f in findings if f.code == "profile-from-start"]
    plan, findings = lint(CapturePlan(kernels=("regex:x",), target=serve[:3], profile_from_start=False))
    assert not plan.profile_from_start  # the user's choice stands, with a warning of what it needs
    assert [f.level for f in findings if f.code == "profile-from-start"] == ["warning"]


def test_the_serving_command_is_the_bundles_context() -> None:
    from kernelscope.serving import context_of, from_context

    cmd = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m/llama", "-tp", "2",
           "--max-num-seqs=64", "--kv-cache-dtype", "fp8", "--enforce-eager", "--port", "8000"]
    ctx = context_of(cmd)
    assert ctx == {"serving.engine": "vllm", "serving.model": "/m/llama", "serving.tensor_parallel_size": "2",
                   "serving.max_num_seqs": "64", "serving.kv_cache_dtype": "fp8", "serving.enforce_eager": "true",
                   "serving.dtype": "not set: auto, the model's own dtype",
                   "serving.max_num_batched_tokens": "not set: 8192 for the server on a GPU of 70 GB or more other "
                                                     "than A100, else 2048",
                   "serving.quantization": "not set: none", "serving.cudagraph_mode": "none: --enforce-eager"}
    served = from_context(ctx)
    assert served is not None and served.eager and not served.cuda_graphs
    assert dict(served.options) == {"model": "/m/llama", "tensor_parallel_size": "2", "max_num_seqs": "64",
                                    "kv_cache_dtype": "fp8", "enforce_eager": "true"}  # defaults are not options
    default = context_of(["vllm", "serve", "m"])
    assert default["serving.tensor_parallel_size"] == "not set: 1 GPU"
    assert default["serving.cudagraph_mode"] == "not set: FULL_AND_PIECEWISE, decode replayed in CUDA graphs"
    graphs = context_of(["vllm", "serve", "m", "-O", '{"cudagraph_mode": "PIECEWISE"}'])
    assert graphs["serving.cudagraph_mode"] == "PIECEWISE"
    assert context_of(["vllm", "serve", "meta-llama/Llama-3-8B"])["serving.model"] == "meta-llama/Llama-3-8B"
    assert context_of(["python3", "step.py"]) == {}


def _assess(fx: Path, name: str, command: list[str]) -> object:
    from kernelscope.analysis.pipeline import load
    from kernelscope.analysis.verdict import assess
    from kernelscope.ceilings import load as load_ceilings
    from kernelscope.serving import context_of, from_context

    (rec,) = load(str(fx / name))
    return assess(rec, load_ceilings().pick(rec.device), from_context(context_of(command)))


VLLM = ["vllm", "serve", "/m/llama", "--max-num-seqs", "8"]


def test_levers_at_the_level_a_vllm_user_works_at(fx: Path) -> None:
    """A decode GEMM at the HBM roof under vLLM: the flags to change, sized from its figures."""
    a = _assess(fx, "decode_gemm.ncu-rep", VLLM)
    rules = {lv.rule: lv for lv in a.next_levers}  # type: ignore[attr-defined]
    assert "--max-num-seqs (now 8)" in rules["batch-rows"].action
    assert "--quantization fp8 (not set: none)" in rules["quantise-operands"].action
    assert "8 FLOP a DRAM byte against a ridge of 206" in rules["vllm-speculative"].expected


def test_a_kernel_already_in_vllms_graph_is_never_told_to_use_one(fx: Path) -> None:
    compiled = {lv.rule for lv in _assess(fx, "tiny.ncu-rep.gz", VLLM).next_levers}  # type: ignore[attr-defined]
    assert "cuda-graph" not in compiled and "vllm-cuda-graphs" not in compiled and "profile-the-graph" in compiled
    eager = {lv.rule for lv in _assess(fx, "tiny.ncu-rep.gz", [*VLLM, "--enforce-eager"]).next_levers}  # type: ignore[attr-defined]
    assert "vllm-cuda-graphs" in eager and "cuda-graph" not in eager
    plain = {lv.rule for lv in _assess(fx, "tiny.ncu-rep.gz", ["python3", "x.py"]).next_levers}  # type: ignore[attr-defined]
    assert "cuda-graph" in plain


@pytest.fixture(scope="module")
def vllm_bundle(fx: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real capture of vLLM 0.26 (tests/fixtures/README.md, "vLLM"), as the bundle it came in:
    its manifest and its report (stored gzipped, unpacked to the name and sha256 the manifest records)."""
    import gzip
    import json
    import shutil

    bundle = tmp_path_factory.mktemp("vllm") / "bundle"
    manifest = json.loads((fx / "vllm_offline-manifest.json").read_text())
    report = bundle / manifest["captures"][0]["report"]
    report.parent.mkdir(parents=True)
    with gzip.open(fx / "vllm_offline.ncu-rep.gz") as src, report.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return bundle


def test_real_vllm_kernels_by_name_owner_and_window(vllm_bundle: Path) -> None:
    """vLLM offline, compiled, one generation round between LLM.start_profile and stop_profile (its CUDA
    profiler, ncu --profile-from-start off), five filters in one run on demangled names."""
    import json

    import kernelscope

    items, _ = kernelscope.analyze(str(vllm_bundle))
    by = {a.record.name: a for a in items}
    assert {"FlashAttnFwdSm90", "FlashAttnFwdCombine", "reshape_and_cache_flash_kernel",
            "triton_red_fused_fused_add_rms_norm_0"} <= set(by)
    assert by["FlashAttnFwdSm90"].record.name_full.startswith("void cutlass::device_kernel<flash::enable_sm90")
    assert by["FlashAttnFwdSm90"].provenance.family == "FlashAttention-3 (vLLM)"
    assert by["FlashAttnFwdCombine"].provenance.family == "FlashAttention-3 (vLLM)"
    assert by["reshape_and_cache_flash_kernel"].provenance.family == "vLLM"
    assert by["triton_red_fused_fused_add_rms_norm_0"].provenance.family == "Triton (torch.compile)"
    gemms = [a for n, a in by.items() if n.startswith("nvjet_")]
    assert gemms and all(a.provenance.family == "cuBLAS" for a in gemms)
    assert all(a.record.l2_sectors_pct is not None for a in items)  # our list now holds L2's data paths
    manifest = json.loads((vllm_bundle / "manifest.json").read_text())
    assert manifest["scoping"]["window"] == "profiler-range" and manifest["scoping"]["name_base"] == "demangled"
    assert manifest["context"]["serving.engine"] == "vllm"
    # launch-bound kernels inside vLLM's CUDA graphs (compiled, not eager) are never told to use a graph
    assert all("cuda-graph" not in {lv.rule for lv in a.next_levers} for a in items)
    top = max(gemms, key=lambda a: a.record.duration_ns or 0)
    assert top.bound == "memory" and "--max-num-seqs" in " ".join(lv.action for lv in top.next_levers)


FAKE_NCU = Path(__file__).parent / "local" / "fake-ncu.sh"


def test_the_kernels_verb_lists_names_then_times(capsys: pytest.CaptureFixture[str]) -> None:
    """By default nothing is profiled: the names ncu 2025.3.1 lists after an empty capture (its real
    output, replayed by the stand-in ncu), each with its selector; --timed reads a real report."""
    import json

    from kernelscope.cli import main

    prog = ["--", sys.executable, "-c", "pass"]
    assert main(["kernels", "--ncu", str(FAKE_NCU), "--format", "json", *prog]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(k["name"], k["launches"], k["select"]) for k in doc["kernels"]] == [
        ("cunn_SoftMaxForwardReg", None, "regex:cunn_SoftMaxForwardReg"),
        ("distribution_elementwise_grid_stride_kernel", None, "regex:distribution_elementwise_grid_stride_kernel")]
    assert doc["launch_cap"] is None
    assert main(["kernels", "--ncu", str(FAKE_NCU), "--timed", "50", "--format", "json", *prog]) == 0
    doc = json.loads(capsys.readouterr().out)
    (k,) = doc["kernels"]
    assert (k["name"], k["launches"], doc["profiled_launches"]) == ("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT", 1, 1)
    assert k["total_ns"] == pytest.approx(35_264, abs=1000)
    assert main(["kernels", "--dry-run", *prog]) == 0
    assert "--kernel-name kernelscope-list-only-matches-nothing" in capsys.readouterr().out


def test_the_process_behind_each_attach_port_is_named() -> None:
    """A child of the launch listening on an attach port (as a held EngineCore does) is found by
    /proc: its port, its pid and its command line, so the user attaches to the process that runs."""
    import os
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]
    try:
        found = launcher.listeners(os.getpgrp(), port)
        assert [(x.port, x.pid) for x in found] == [(port, os.getpid())]
        assert "pytest" in found[0].title or "python" in found[0].title
        assert launcher.listeners(os.getpgrp() + 1_000_000, port) == []
    finally:
        srv.close()


def test_an_attach_reads_the_held_program_from_the_launchs_process_group(tmp_path: Path) -> None:
    """Real processes in vLLM's shape: a launch's group leader (a program named ncu), its child (the API
    server, given as the program) and a grandchild that listens (the EngineCore): the program is the
    child's command line, as given; with the program itself the leader, the leader's; and nothing is
    read for another host."""
    import subprocess
    import sys
    import time

    ready = tmp_path / "port"
    engine = ("import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
              "open(sys.argv[1], 'w').write(str(s.getsockname()[1])); time.sleep(60)")
    server = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {engine!r}, {str(ready)!r}])"
    program = (sys.executable, "-c", server, "--model", "tiny", "--max-num-seqs", "8")
    ncu = tmp_path / "ncu"  # the launch's leader, by name: it starts the program as its child
    ncu.write_text(f"#!{sys.executable}\nimport subprocess, sys\nsubprocess.run(sys.argv[1:])\n")
    ncu.chmod(0o755)
    for leader_argv in ([str(ncu), *program], list(program)):  # ncu's child, or the leader itself
        ready.unlink(missing_ok=True)
        leader = subprocess.Popen(leader_argv, start_new_session=True)
        try:
            for _ in range(100):
                if ready.exists() and ready.read_text():
                    break
                time.sleep(0.1)
            port = int(ready.read_text())
            assert launcher.held_program("127.0.0.1", port) == program
            assert launcher.held_program("10.0.0.7", port) == ()
        finally:
            os.killpg(leader.pid, 9)
            leader.wait()


def test_an_unset_batch_limit_names_vllms_default_for_the_gpu(fx: Path) -> None:
    """vLLM 0.26 sizes --max-num-seqs by the GPU (1024 on an H200, 256 on an A100), never one figure."""
    a = _assess(fx, "decode_gemm.ncu-rep", ["vllm", "serve", "/m/llama"])
    action = {lv.rule: lv for lv in a.next_levers}["batch-rows"].action  # type: ignore[attr-defined]
    assert "--max-num-seqs (not set: 1024 on a GPU of 70 GB or more other than A100, else 256)" in action


def test_a_bare_vllm_report_is_read_as_vllms(fx: Path) -> None:
    """The report's own recorded command (python3 bench/vllm_offline.py: a script that builds vllm.LLM)
    says vLLM: no "use a CUDA graph" for kernels vLLM already replays in its graphs, the batch flags
    named as the script sets them (never vLLM's CLI defaults), FA3's combine told by its split."""
    import kernelscope

    items, _ = kernelscope.analyze(str(fx / "vllm_offline.ncu-rep.gz"))
    rules = {a.record.name: [lv.rule for lv in a.next_levers] for a in items}
    assert not any("cuda-graph" in r or "vllm-cuda-graphs" in r for r in rules.values())
    levers = {(a.record.name, lv.rule): lv for a in items for lv in a.next_levers}
    batch = levers[("nvjet_sm90_tst_128x16_64x11_2x1_v_bz_TNT", "batch-rows")].action
    assert "--max-num-seqs (not on its command line: set in its script, if at all)" in batch and "1024" not in batch
    combine = levers[("FlashAttnFwdCombine", "fuse-launch")].action
    assert combine.startswith("FlashAttention's split-KV combine") and "torch.compile" not in combine
    algo = levers[("nvjet_sm90_tst_64x16_64x16_4x1_v_bz_TNT", "another-algorithm")].action
    assert algo.startswith("cuBLAS's heuristic chose this algorithm and vLLM offers no switch for it")


def test_a_quoted_separator_inside_an_option_does_not_cut_the_server_command() -> None:
    """`sh -c` is split as the shell splits it (redact.shell_words): a `;` inside a quoted JSON
    option stays in the option; the server is the script's last simple command."""
    from kernelscope.serving import vllm_options

    script = "pip install x && exec vllm serve m --compilation-config '{\"a\": 1; \"b\": 2}' --max-num-seqs 4"
    assert vllm_options(["sh", "-c", script]) == {"compilation_config": '{"a": 1; "b": 2}', "max_num_seqs": "4",
                                                  "model": "m"}


def test_every_spelling_vllm_reads_is_one_option() -> None:
    """vLLM's parser takes `--max_num_batched_tokens` (its Kubernetes guide's form) as
    `--max-num-batched-tokens`: the lever said "not set" and inspect gave no memory warning."""
    from kernelscope.k8s.inspect import option, parallel_processes
    from kernelscope.serving import vllm_options

    command = ["/bin/sh", "-c", "exec vllm serve m --max_num_batched_tokens 1024 --gpu_memory_utilization=0.95 "
               "--tensor_parallel_size 2 --kv_cache_dtype fp8"]
    assert vllm_options(command) == {"max_num_batched_tokens": "1024", "gpu_memory_utilization": "0.95",
                                     "tensor_parallel_size": "2", "kv_cache_dtype": "fp8", "model": "m"}
    argv = ["vllm", "serve", "m", "--gpu_memory_utilization=0.95", "--tensor_parallel_size", "2",
            "--pipeline-parallel-size=2"]
    assert option(argv, "--gpu-memory-utilization") == "0.95" and parallel_processes(argv) == 4
