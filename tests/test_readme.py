"""The README's examples run as printed (issue 22): every `kernelscope ...` line of its code blocks,
run through kernelscope.cli.main in a tmp directory holding the files the README names, made from
the committed H200 fixtures (RENAMED below; `bundles/gemm` and `bundles/base|cand` are directories
of reports, `bundles/attn` the real causal-attention bundle, `llama.yaml` the vLLM TP-2 manifest
as deploy/llama in namespace serving, `kern_sum.csv` and `shares.csv` an nsys kern_sum and a shares
file naming the GEMM and FA2). Comments are dropped; a `| head`, `> out.json` or `>> pr.md` is
applied to the captured stdout; `bundles/*` is expanded as the shell would. The commands run in the
README's order in one directory, as a reader would type them (`campaign render` finds the cell
`campaign import-ncu` made), so run the module whole.

Exercised as printed: the quick start's analyze --details, every line of "Use" and of "Reports,
campaigns, gates" (exit 0, but `campaign check --strict` exits 1 on a fresh import: an L4 campaign
with no krhpa block, as the README says), `analyze bundles/gemm`, and `k8s capture ... --dry-run
--from-manifest llama.yaml` (no cluster). "What the terminal shows" is run and its output compared
with the block. The Python block is run too.

Exercised in their `--dry-run` form (they need ncu and a GPU as printed): the `capture`, `op` and
`launch` lines of "Capture": the same options with --dry-run, which checks the plan and prints
ncu's argv without ncu.

Skipped (SKIPPED below, with the reason): `capture ... --dry-run` and `k8s capture ... --dry-run`
(`...` stands for options), `ceilings measure` (torch and a GPU), `k8s inspect`, `k8s capture`
without --from-manifest and `k8s cleanup` (a cluster; tests/test_k8s.py runs them against one).
"""

from __future__ import annotations

import glob
import re
import runpy
import shlex
import shutil
from pathlib import Path

import pytest

from kernelscope.cli import main

README = Path(__file__).parents[1] / "README.md"
RENAMED = {  # the README's file -> the fixture it is made from
    "gemm.ncu-rep": "gemm_bf16.ncu-rep", "a.ncu-rep": "gemm_bf16.ncu-rep", "b-raw.csv": "decode_gemm-raw.csv",
    "report.ncu-rep": "decode_gemm.ncu-rep", "big-raw.csv": "gemm_bf16-raw.csv",
    "mine.yaml": "measured-ceilings-h200.yaml", "h200.yaml": "measured-ceilings-h200.yaml",
    "gemm_bf16.ncu-rep": "gemm_bf16.ncu-rep", "decode_gemm.ncu-rep": "decode_gemm.ncu-rep",
    "gemm_basic.ncu-rep": "gemm_basic.ncu-rep", "bundles/gemm/gemm_bf16.ncu-rep": "gemm_bf16.ncu-rep",
    "bundles/base/decode_gemm.ncu-rep": "decode_gemm.ncu-rep",
    "bundles/cand/decode_gemm.ncu-rep": "decode_gemm.ncu-rep",
}
SKIPPED = {  # a command's start -> why it is not run here
    "kernelscope capture ... --dry-run": "`...` stands for a capture's options (the lines above run with --dry-run)",
    "kernelscope k8s capture ... --dry-run": "`...` stands for a capture's options (the --from-manifest line runs)",
    "kernelscope ceilings measure": "needs PyTorch and a GPU",
    "kernelscope k8s inspect": "needs a cluster (tests/test_k8s.py)",
    "kernelscope k8s cleanup": "needs a cluster, --dry-run too: it reads the releases (tests/test_k8s.py)",
    "kernelscope k8s capture -n serving deploy/llama --kernel regex:nvjet --kernel": "needs a cluster",
}
DRY_RUN = ("kernelscope capture ", "kernelscope op ", "kernelscope launch ")  # need ncu and a GPU as printed
EXIT = {"kernelscope campaign check --campaign decode-h200 --strict": 1}  # L4 with no krhpa block: a failure
NSYS = ('"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Name"\n'
        '70.0,"3,384,320",10,338432,338432,338432,338432,0,"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"\n'
        '30.0,1450000,3,483333,480000,470000,500000,0,"void pytorch_flash::flash_fwd_kernel<...>(Flash_fwd_params)"\n')
SHARES = "name,share %\nnvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT,55.0\nflash_fwd_kernel,30.0\n"


def commands() -> list[tuple[int, str]]:
    """(line number, command) of every kernelscope command in the README's code blocks: indented
    or fenced lines starting with `kernelscope` (or `$ kernelscope`, or after `&&`), continuation
    lines joined."""
    found: list[tuple[int, str]] = []
    fenced = False
    lines = README.read_text().splitlines()
    i = 0
    while i < len(lines):
        line, at = lines[i], i + 1
        if line.startswith("```"):
            fenced = not fenced
        elif fenced or line.startswith("    "):
            text = re.sub(r"^\s*(\$ )?", "", line)
            if "&& kernelscope " in text:
                text = text[text.index("kernelscope "):]
            while text.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text.rstrip()[:-1] + " " + lines[i].strip()
            if text.startswith("kernelscope "):
                found.append((at, text))
        i += 1
    return found


def argv_of(command: str) -> tuple[list[str], str | None]:
    """The argv after `kernelscope`, and what is done with stdout (`| head -N`, `> FILE`, `>> FILE`)."""
    words = shlex.split(command, comments=True)[1:]
    for i, w in enumerate(words):
        if w in ("|", ">", ">>"):
            return words[:i], " ".join(words[i:])
    return words, None


@pytest.fixture(scope="module")
def workdir(fx: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files the README's commands name, made from the fixtures, and its cwd for the run."""
    root = tmp_path_factory.mktemp("readme")
    for name, source in RENAMED.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(fx / source, root / name)
    shutil.copytree(fx / "bundle_attn_causal", root / "bundles" / "attn")
    (root / "tests").mkdir()
    (root / "tests" / "fixtures").symlink_to(fx)
    (root / "kern_sum.csv").write_text(NSYS)
    (root / "shares.csv").write_text(SHARES)
    manifest = (fx / "k8s" / "vllm-tp2.yaml").read_text()
    (root / "llama.yaml").write_text(manifest.replace("vllm-llama", "llama").replace("namespace: inference",
                                                                                     "namespace: serving"))
    return root


def test_every_readme_command_is_run_or_skipped_with_a_reason() -> None:
    assert len(commands()) >= 35 and len(RUN) >= 30, commands()  # the extraction finds the README's blocks
    assert all(any(cmd.startswith(s) for _, cmd in commands()) for s in SKIPPED), "a skip no README line needs"
    for _, cmd in RUN:
        argv, _ = argv_of(cmd)
        assert argv and argv[0] in ("analyze", "report", "roofline", "diff", "join", "campaign", "bundle",
                                    "ceilings", "capture", "op", "launch", "k8s"), cmd


RUN = [(at, cmd) for at, cmd in commands() if not any(cmd.startswith(s) for s in SKIPPED)]


@pytest.mark.parametrize("line,command", RUN, ids=[f"README.md:{at}" for at, _ in RUN])
def test_readme_command_runs_as_printed(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str], line: int, command: str) -> None:
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("COLUMNS", "100")
    argv, sink = argv_of(command)
    argv = [m for w in argv for m in (sorted(glob.glob(w)) if "*" in w else [w])]
    if command.startswith(DRY_RUN):
        at = argv.index("--") if "--" in argv else len(argv)
        argv = [*argv[:at], "--dry-run", *argv[at:]]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == EXIT.get(command.split("  #")[0].strip(), 0), f"README line {line}: {command}\n{err}"
    assert "error" not in err, err
    if sink and sink.startswith(">"):
        assert out, f"README line {line}: nothing on stdout for {sink}"


def test_the_terminal_block_is_what_the_terminal_shows(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The block under "What the terminal shows" is the command's output, at the width it names."""
    text = README.read_text()
    block = text[text.index("### What the terminal shows"):].split("```")[1].splitlines()[1:]
    head, shown = block[0], block[1:]
    cols = re.search(r"COLUMNS=(\d+)", head)
    n = re.search(r"\| head -(\d+)", head)
    assert cols and n and len(shown) == int(n.group(1)), head
    argv, _ = argv_of(head.removeprefix("$ "))
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("COLUMNS", cols.group(1))
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[:len(shown)] == shown


def test_the_python_block_runs(workdir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    text = README.read_text()
    code = text[text.index("```python"):].split("```")[1].removeprefix("python\n")
    script = tmp_path / "readme_example.py"
    script.write_text(code)
    monkeypatch.chdir(workdir)
    found = runpy.run_path(str(script))
    assert found["records"][0].metrics["gpu__time_duration.sum"] == pytest.approx(338432.0)
    assert list(found["kernels"]["rank"]) == [1] and found["df"].attrs["units"]["duration_ns"] == "ns"
