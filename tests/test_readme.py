"""The README's examples run as printed (issues 22 and 31), and the machinery tests/test_docs.py uses
for docs/*.md: every `kernelscope ...` line of a document's code blocks is run through
kernelscope.cli.main, at COLUMNS=100, in a tmp directory holding the files the documents name, made
from the committed H200 fixtures (RENAMED below; `tests/fixtures` is there too; `bundles/gemm` and
`bundles/base|cand` are directories of reports, `bundles/attn` the real causal-attention bundle,
`llama.yaml` the vLLM TP-2 manifest as deploy/llama in namespace serving, `kern_sum.csv` and
`shares.csv` an nsys kern_sum and a shares file naming the GEMM and FA2). The commands run in the
document's order in one directory, as a reader would type them, so run the module whole.

How a code block is read:
- A fenced block whose lines start with `$ ` is a transcript: each `$ kernelscope ...` line is run
  and the lines under it, up to the next `$ `, are its stdout as printed. A line `...` stands for
  any number of lines, and `...` inside a line for any text (a capture id, a cut line); anything
  else must be exactly what the command printed. A `$ echo $?` line after it, with the exit code
  on the next line, is the code the command must exit with (0 otherwise).
- In any other fenced or indented block every line starting with `kernelscope ` is run (a comment
  after `#` is dropped). A `| head -N`, `> FILE` or `>> FILE` is applied to the captured stdout;
  `bundles/*` is expanded as the shell would; a line continued with `\\` is joined.
- A block fenced as ```text (help texts, files, pod specs) runs nothing. A block fenced as
  ```yaml file=PATH is written to PATH in the directory before the commands below it run.

Exercised in their `--dry-run` form (they need ncu and a GPU as printed): `capture`, `op`,
`launch` and `kernels` lines: the same options with --dry-run, which checks the plan and prints
ncu's argv without ncu. Skipped (SKIPPED below, with the reason): lines whose `...` stands for
options, `ceilings measure` (torch and a GPU), and the k8s lines that need a cluster
(tests/test_k8s.py runs them against one); `k8s capture ... --dry-run --from-manifest` runs.
"""

from __future__ import annotations

import glob
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from kernelscope.cli import main

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
RENAMED = {  # a document's file -> the fixture it is made from
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
DRY_RUN = ("kernelscope capture ", "kernelscope op ", "kernelscope launch ", "kernelscope kernels ")
EXIT = {"kernelscope campaign check --campaign decode-h200 --strict": 1}  # L4 with no krhpa block: a failure
NSYS = ('"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Name"\n'
        '70.0,"3,384,320",10,338432,338432,338432,338432,0,"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"\n'
        '30.0,1450000,3,483333,480000,470000,500000,0,"void pytorch_flash::flash_fwd_kernel<...>(Flash_fwd_params)"\n')
SHARES = "name,share %\nnvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT,55.0\nflash_fwd_kernel,30.0\n"


@dataclass
class Block:
    info: str  # the fence's info string ("" for an indented block)
    lines: list[tuple[int, str]]  # (line number, text) of its content


@dataclass
class Example:
    """One step of a document, in its order: a command to run, or a file to write."""

    doc: Path
    line: int
    command: str  # the kernelscope command, or the path a ```yaml file=PATH block is written to
    shown: list[str] | None = None  # a transcript's stdout as printed; None: not shown
    code: int | None = None  # a transcript's `$ echo $?`
    content: str | None = None  # a file block's text

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    """The code blocks of a markdown file: fenced (```info), or lines indented by four spaces."""
    found: list[Block] = []
    fence: str | None = None
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith("```"):
            if fence is None:
                fence = line[: len(line) - len(stripped)]
                found.append(Block(stripped[3:].strip(), []))
            else:
                fence = None
        elif fence is not None:
            found[-1].lines.append((n, line.removeprefix(fence)))
        elif line.startswith("    ") and line.strip():
            if found and found[-1].info == "" and found[-1].lines and found[-1].lines[-1][0] == n - 1:
                found[-1].lines.append((n, line))
            else:
                found.append(Block("", [(n, line)]))
    return found


def _joined(lines: list[tuple[int, str]], i: int, text: str) -> tuple[int, str]:
    """A command continued with backslashes, joined; the index of its last line."""
    while text.rstrip().endswith("\\") and i + 1 < len(lines):
        i += 1
        text = text.rstrip()[:-1] + " " + lines[i][1].strip()
    return i, text


def examples(doc: Path) -> list[Example]:
    """Every step of a document, in its order (the module docstring says how blocks are read)."""
    found: list[Example] = []
    for block in blocks(doc):
        lines = block.lines
        if block.info == "text" or not lines:
            continue
        if block.info.startswith("yaml file="):
            found.append(Example(doc, lines[0][0] - 1, block.info.removeprefix("yaml file="),
                                 content="".join(t + "\n" for _, t in lines)))
            continue
        transcript = any(t.startswith("$ ") for _, t in lines)
        i = 0
        while i < len(lines):
            at, text = lines[i]
            if transcript and not text.startswith("$ "):
                i += 1
                continue
            text = re.sub(r"^\s*(\$ )?", "", text)
            if "&& kernelscope " in text:
                text = text[text.index("kernelscope "):]
            i, text = _joined(lines, i, text)
            i += 1
            if not text.startswith("kernelscope "):
                continue
            step = Example(doc, at, text)
            if transcript:
                step.shown = []
                while i < len(lines) and not lines[i][1].startswith("$ "):
                    step.shown.append(lines[i][1])
                    i += 1
                if i + 1 < len(lines) and lines[i][1] == "$ echo $?":
                    step.code = int(lines[i + 1][1])
                    i += 2
            found.append(step)
    return found


def commands(doc: Path = README) -> list[tuple[int, str]]:
    """(line number, command) of every kernelscope command in a document's code blocks."""
    return [(e.line, e.command) for e in examples(doc) if e.content is None]


def skipped(command: str) -> str | None:
    return next((why for start, why in SKIPPED.items() if command.startswith(start)), None)


def argv_of(command: str) -> tuple[list[str], str | None]:
    """The argv after `kernelscope`, and what is done with stdout (`| head -N`, `> FILE`, `>> FILE`)."""
    words = shlex.split(command, comments=True)[1:]
    for i, w in enumerate(words):
        if w in ("|", ">", ">>"):
            return words[:i], " ".join(words[i:])
    return words, None


def fits(shown: list[str], printed: str) -> bool:
    """Whether printed output is what a transcript shows: `...` alone any lines, inside a line any text."""
    pattern = "".join(r"(?:.*\n)*?" if s.strip() == "..." else
                      re.escape(s.rstrip()).replace(r"\.\.\.", ".*?") + r"[ \t]*\n" for s in shown)
    return re.fullmatch(pattern, "".join(line.rstrip() + "\n" for line in printed.splitlines())) is not None


def make_workdir(fx: Path, root: Path) -> Path:
    """The files the documents' commands name, made from the fixtures: the directory they run in."""
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


@pytest.fixture(scope="module")
def workdir(fx: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_workdir(fx, tmp_path_factory.mktemp("docs"))


def run_step(step: Example, workdir: Path, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> None:
    """Run one step as a reader would, and hold it to what the document shows."""
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("COLUMNS", "100")
    if step.content is not None:
        (workdir / step.command).parent.mkdir(parents=True, exist_ok=True)
        (workdir / step.command).write_text(step.content)
        return
    argv, sink = argv_of(step.command)
    argv = [m for w in argv for m in (sorted(glob.glob(w)) if "*" in w else [w])]
    if step.command.startswith(DRY_RUN) and "--dry-run" not in argv:
        at = argv.index("--") if "--" in argv else len(argv)
        argv = [*argv[:at], "--dry-run", *argv[at:]]
    code = main(argv)
    out, err = capsys.readouterr()
    # a transcript says its exit code (`$ echo $?`, else 0); another line, EXIT where it is not 0
    expected = (step.code or 0) if step.shown is not None else EXIT.get(step.command.split("  #")[0].strip(), 0)
    assert code == expected, f"{step.where}: {step.command}\nexit {code}, not {expected}\n{err}"
    assert "error" not in err, f"{step.where}: {err}"
    head = re.match(r"\| head -(\d+)$", sink or "")
    if head:
        out = "".join(line + "\n" for line in out.splitlines()[: int(head.group(1))])
    elif sink:
        assert out, f"{step.where}: nothing on stdout for {sink}"
        with (workdir / sink.split()[-1]).open("a" if sink.startswith(">>") else "w") as fh:
            fh.write(out)
    if step.shown is not None:
        assert fits(step.shown, out), f"{step.where}: {step.command}\nprinted:\n{out}\nshown:\n" + "\n".join(step.shown)


STEPS = examples(README)
RUN = [s for s in STEPS if skipped(s.command) is None]


def test_the_readme_examples_are_found() -> None:
    """The five things a newcomer does, each with its output as printed, and the quick start's analyze."""
    shown = [s for s in RUN if s.shown]
    assert len(RUN) >= 6 and len(shown) >= 5, [s.command for s in STEPS]
    assert {s.command.split()[1] for s in shown} >= {"analyze", "diff", "capture", "k8s"}
    assert all(s.command.split()[1] in ("analyze", "diff", "capture", "k8s") for s in RUN), STEPS


@pytest.mark.parametrize("step", RUN, ids=[s.where for s in RUN])
def test_readme_command_runs_as_printed(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str], step: Example) -> None:
    run_step(step, workdir, monkeypatch, capsys)


def test_the_two_commands_are_the_ci_contract() -> None:
    """`.ci/run` runs the README's test line exactly; both lines stay at the top, byte for byte."""
    text = README.read_text()
    first = text[text.index("```bash"):].split("```")[1]
    assert ("python3 -m venv .venv && . .venv/bin/activate && pip install -e . && kernelscope analyze "
            "tests/fixtures/gemm_bf16.ncu-rep tests/fixtures/decode_gemm.ncu-rep tests/fixtures/gemm_basic.ncu-rep "
            "--details\n") in first
    ci = (ROOT / ".ci" / "run").read_text().splitlines()[-1]
    assert ci in first.splitlines() and ci.endswith("&& pytest")


def test_fits_reads_elisions() -> None:
    assert fits(["a", "...", "d ... f"], "a\nb\nc\nd e f\n")
    assert fits(["a", "..."], "a\n") and not fits(["a"], "a\nb\n") and not fits(["a ... c"], "a b\nc\n")
