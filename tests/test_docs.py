"""docs/*.md stay true to the code (issue 31):

- every example in their code blocks runs as tests/test_readme.py runs the README's (read there how
  a block is read: transcripts, `...`, `$ echo $?`, ```text and ```yaml file=PATH blocks), in one
  directory, in the order of DOCS; the Python blocks run too;
- the sections generated from the code (each between `<!-- generated: NAME ...` and
  `<!-- end of generated: NAME -->`) are what the code makes now: the verbs and options of
  `kernelscope VERB --help` (from the parser that prints them, kernelscope.cli.parser()), the
  columns (kernelscope.columns.COLUMNS, the one column spec) and the levers (analysis/levers.py).
  After changing the code, `python3 tests/test_docs.py` rewrites them;
- each constant a "lines the verdicts use" row cites (`rules.AT_ROOF_PCT`) has the value printed;
- the README's GPU table counts each architecture's datasheet entries as sol-ceilings.yaml does
  (the guide's SQL runs in tests/test_campaign.py).
"""

from __future__ import annotations

import argparse
import importlib
import re
import runpy
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

import test_readme as readme

ROOT = readme.ROOT
DOCS = ROOT / "docs"
ORDER = ("guide.md", "reference.md", "explanation.md", "measurements.md", "hopper-measurements.md")
workdir = readme.workdir  # a fixture of its own in this module: one directory for every document's steps


def docs() -> list[Path]:
    """Every docs/*.md, in the order a reader goes (campaigns made in the guide are checked in the reference)."""
    found = sorted(DOCS.glob("*.md"), key=lambda p: (p.name not in ORDER, ORDER.index(p.name) if p.name in ORDER
                                                      else 0, p.name))
    return found


STEPS = [s for doc in docs() for s in readme.examples(doc)]
RUN = [s for s in STEPS if readme.skipped(s.command) is None]


def test_every_docs_example_is_run_or_skipped_with_a_reason() -> None:
    assert {p.name for p in docs()} >= set(ORDER), "a document the README points to is missing"
    everything = [s.command for s in STEPS + readme.STEPS]
    assert all(any(c.startswith(start) for c in everything) for start in readme.SKIPPED), "a skip no line needs"
    assert len(RUN) >= 40 and sum(1 for s in RUN if s.shown) >= 3, [s.command for s in STEPS]
    for step in RUN:
        if step.content is None:
            argv, _ = readme.argv_of(step.command)
            assert argv and argv[0] in ("analyze", "report", "roofline", "diff", "join", "campaign", "bundle",
                                        "ceilings", "capture", "op", "launch", "kernels", "k8s"), step.where


@pytest.mark.parametrize("step", RUN, ids=[s.where for s in RUN])
def test_docs_command_runs_as_printed(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str], step: readme.Example) -> None:
    readme.run_step(step, workdir, monkeypatch, capsys)


def python_blocks() -> list[tuple[Path, int, str]]:
    return [(doc, b.lines[0][0], "".join(t + "\n" for _, t in b.lines))
            for doc in [readme.README, *docs()] for b in readme.blocks(doc) if b.info == "python" and b.lines]


@pytest.mark.parametrize("doc,line,code", python_blocks(), ids=[f"{d.name}:{n}" for d, n, _ in python_blocks()])
def test_the_python_blocks_run(workdir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                               doc: Path, line: int, code: str) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    monkeypatch.chdir(workdir)
    found = runpy.run_path(str(script))
    if "records" in found:  # the guide's: the figures it names are the fixture's
        assert found["records"][0].metrics["gpu__time_duration.sum"] == pytest.approx(338432.0)
        assert list(found["kernels"]["rank"]) == [1] and found["df"].attrs["units"]["duration_ns"] == "ns"


def _anchors(doc: Path) -> set[str]:
    """The anchors GitHub makes of a document's headings (code blocks' `#` lines are not headings)."""
    text = "\n".join(re.sub(r"^```.*?^```", "", doc.read_text(), flags=re.S | re.M).splitlines())
    return {re.sub(r"[^\w\- ]", "", h.strip().lower().replace("`", "")).replace(" ", "-")
            for h in re.findall(r"^#+ (.*)$", text, re.M)}


def test_every_link_between_the_documents_lands() -> None:
    """A link to a document, or to a heading of one, names one that is there."""
    for doc in [readme.README, *docs()]:
        for target, anchor in re.findall(r"\]\(([\w./-]*\.md|)(?:#([^)]*))?\)", doc.read_text()):
            path = (doc.parent / target) if target else doc
            assert path.exists(), f"{doc.name}: no {target}"
            assert not anchor or anchor in _anchors(path), f"{doc.name}: no heading #{anchor} in {path.name}"


# -- the generated sections ---------------------------------------------------------------------
def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _parsers(p: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def _value(action: argparse.Action) -> str:
    """What an option takes, as `--help` shows it: its choices, its metavar, or nothing for a flag."""
    said = []
    if action.option_strings and action.nargs == 0:
        said.append("flag")
    elif action.choices:
        said.append(" \\| ".join(f"`{c}`" for c in action.choices))
    elif action.option_strings:
        said.append(f"`{action.metavar or action.dest.upper()}`")
    if not action.option_strings:
        said.append({"+": "one or more", "*": "any number", "?": "optional"}.get(str(action.nargs), "one"))
    if action.required and action.option_strings:
        said.append("required")
    if isinstance(action, argparse._AppendAction):
        said.append("repeatable")
    return ", ".join(said)


def verbs_markdown() -> str:
    """Every verb and sub-verb with its description, options and example, from kernelscope.cli.parser()."""
    from kernelscope import cli

    out = []
    for path, p in _parsers(cli.parser(), "kernelscope"):
        if path == "kernelscope":
            out += ["```text", (p.description or "").strip(), "```", ""]
            continue
        out += [f"### `{path}`", "", (p.description or "").replace("%%", "%").strip(), ""]
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if subs:
            out += [", ".join(f"[`{path} {name}`](#{(path + ' ' + name).replace(' ', '-')})"
                              for name in subs[0].choices), ""]
        rows = [a for a in p._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
        if rows:
            out += ["| argument | takes | what it does |", "|---|---|---|"]
            out += [f"| `{', '.join(a.option_strings) or a.metavar or a.dest}` | {_value(a)} | "
                    f"{_cell((a.help or '').replace('%%', '%'))} |" for a in rows]
            out.append("")
        if p.epilog:
            out += ["```text", p.epilog.strip(), "```", ""]
    return "\n".join(out).rstrip() + "\n"


def columns_markdown() -> str:
    """The column spec as tables: a launch's own figures (RECORD), then its judgement (PLACED)."""
    from kernelscope import columns as C

    out = []
    for title, cols in (("Per launch, from the report's counters (`columns.RECORD`)", C.RECORD),
                        ("The judgement, against the ceilings (`columns.PLACED`)", C.PLACED)):
        out += [f"**{title}**", "", "| column | kind | unit | meaning |", "|---|---|---|---|"]
        for c in cols:
            keys = f" Keys: {', '.join(f'`{k}`' for k, _ in c.keys)}." if c.keys else ""
            kind = c.kind if c.nullable else f"{c.kind}, never null"
            out.append(f"| `{c.name}` | {kind} | {_cell(c.unit)} | {_cell(c.doc)}{keys} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def sources_markdown() -> str:
    """Each catalogue figure with its unit (the column spec's) and its sources, in the order tried;
    then the figures made from other figures (derive.FROM_FIGURES)."""
    from kernelscope import catalogue as K
    from kernelscope.analysis.derive import FROM_FIGURES
    from kernelscope.columns import BY_NAME

    out = ["| figure | unit | from, in the order tried |", "|---|---|---|"]
    for f in K.FIGURES:
        column, _, key = f.name.partition(".")
        unit = "" if f.name in K.STEPS else BY_NAME[column].unit_of(key)
        arch = {s.arch for s in f.sources}
        tried = "; else ".join(f"`{s.label}`" + (f" ({s.arch})" if s.arch and len(arch) > 1 else "")
                               for s in f.sources)
        out.append(f"| `{f.name}`{' (feeds flops)' if f.name in K.STEPS else ''} | {_cell(unit)} | {_cell(tried)} |")
    out += [f"| `{name}` | {_cell(BY_NAME[column].unit_of(key))} | {_cell(how)} (of figures) |"
            for name, how in FROM_FIGURES.items() for column, _, key in [name.partition(".")]]
    return "\n".join(out) + "\n"


def config_markdown() -> str:
    """The campaign config.yaml's fields (campaign.store.CONFIG_FIELDS)."""
    from kernelscope.campaign.store import CONFIG_FIELDS

    out = ["| field | type | read by | meaning |", "|---|---|---|---|"]
    out += [f"| `{f.name}` | {_cell(f.holds)} | {_cell(f.read_by)} | {_cell(f.meaning)} |" for f in CONFIG_FIELDS]
    return "\n".join(out) + "\n"


def levers_markdown() -> str:
    """Every lever rule in the order levers() weighs them, with who can pull its family."""
    from kernelscope.analysis import levers as L
    from kernelscope.analysis.rules import LIMITERS

    owners = {fam: [k for k, fams in L.PULLABLE.items() if fam in fams]
              for fam in {r.family for r in (*L.LEVERS, L.FALLBACK)}}
    out = ["| lever | family | pulled by | gain | cost |", "|---|---|---|---|---|"]
    out += [f"| `{r.name}` | {r.family} | {', '.join(owners[r.family])} | {r.gain} | {r.cost} |"
            for r in (*L.LEVERS, L.FALLBACK)]
    out += ["", "The limiter stories (`rules.LIMITERS`), told in this order when their condition holds: "
            + ", ".join(f"`{r.name}`" for r in LIMITERS) + "."]
    return "\n".join(out) + "\n"


GENERATED: dict[tuple[str, str], Callable[[], str]] = {
    ("reference.md", "verbs"): verbs_markdown,
    ("reference.md", "columns"): columns_markdown,
    ("reference.md", "sources"): sources_markdown,
    ("reference.md", "config"): config_markdown,
    ("explanation.md", "levers"): levers_markdown,
}


def _section(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {name} .*?-->\n)(.*?)(<!-- end of generated: {name} -->)", re.S)


@pytest.mark.parametrize("doc,name", list(GENERATED), ids=[f"{d}:{n}" for d, n in GENERATED])
def test_generated_sections_are_what_the_code_makes(doc: str, name: str) -> None:
    found = _section(name).search((DOCS / doc).read_text())
    assert found is not None, f"docs/{doc} has no generated section {name}"
    assert found.group(2) == "\n" + GENERATED[doc, name]() + "\n", \
        f"docs/{doc}: section {name} differs from the code: run `python3 tests/test_docs.py` to rewrite it"


def test_the_lines_the_verdicts_use_are_the_codes() -> None:
    """Each `| ... | value | `module.NAME` |` row of explanation.md holds the constant's value."""
    modules = r"rules|levers(?:\.\w+)?|verdict\.roofs|verdict\.placement|verdict\.bound|from_report"
    rows = re.findall(rf"^\|[^|\n]*\| ([^|\n]*) \| `({modules})\.([A-Z_]+)` \|$",
                      (DOCS / "explanation.md").read_text(), re.M)
    assert len(rows) >= 10, rows
    for value, module, name in rows:
        where = "ceilings.from_report" if module == "from_report" else f"analysis.{module}"
        actual = getattr(importlib.import_module(f"kernelscope.{where}"), name)
        shown = float(re.search(r"-?[\d,]*\.?\d+", value).group().replace(",", ""))  # type: ignore[union-attr]
        assert shown == pytest.approx(actual), (name, value, actual)


def test_the_readme_counts_the_datasheet_entries() -> None:
    """The README's GPU table: each architecture row's count of sol-ceilings.yaml entries is the file's."""
    devices = yaml.safe_load((ROOT / "src/kernelscope/ceilings/sol-ceilings.yaml").read_text())["devices"]
    by_cc: dict[str, int] = {}
    for d in devices.values():
        by_cc[str(d["cc"])] = by_cc.get(str(d["cc"]), 0) + 1
    rows = dict(re.findall(r"^\| [^|]*\(sm_(\d+)\) \| (\d+) \|", readme.README.read_text(), re.M))
    shown = {f"{int(k) // 10}.{int(k) % 10}": int(v) for k, v in rows.items()}
    assert shown == by_cc and f"{len(devices)} datasheet entries" in readme.README.read_text()


def rewrite() -> None:
    """Rewrite every generated section from the code as it is now."""
    for (doc, name), make in GENERATED.items():
        path = DOCS / doc
        text, n = _section(name).subn(lambda m, make=make: m.group(1) + "\n" + make() + "\n" + m.group(3),
                                      path.read_text())
        assert n == 1, f"docs/{doc}: no generated section {name}"
        path.write_text(text)
        print(f"rewrote docs/{doc}: {name}")


if __name__ == "__main__":
    sys.exit(rewrite())
