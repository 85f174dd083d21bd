"""The shape of the code: imports point down the layers (LAYERS below), no package imports the CLI,
no cycles between packages; one metric catalogue read and collected in both directions; one column
spec whose JSON schema is published in schema/ and which outputs follow."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import get_type_hints

import jsonschema
import pytest

from kernelscope import catalogue, columns, model
from kernelscope.analysis import derive
from kernelscope.cli import main
from kernelscope.ncu import metric_sets

SRC = Path(__file__).resolve().parents[1] / "src" / "kernelscope"
# lowest first: a module may import only from its own layer's package or from lower layers
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "files", "redact", "typed", "argtypes", "model", "catalogue", "report_manifest", "manifest", "serving"),
    ("ncu",),
    ("ingest", "ceilings"),
    ("analysis",),
    ("columns",),
    ("report", "campaign"),
    ("capture",),
    ("k8s",),
    ("app",),
    ("cli",),
)
RANK = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}


def unit_of(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    return rel.parts[0]


def imports(path: Path) -> set[str]:
    """The kernelscope units a module imports (relative and absolute), at any depth of the file."""
    tree = ast.parse(path.read_text())
    pkg = path.relative_to(SRC).parent.parts
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(pkg[: len(pkg) - node.level + 1])
                parts = base + (node.module.split(".") if node.module else [])
                names = [parts[0]] if parts else [a.name for a in node.names]
            elif node.module and node.module.startswith("kernelscope"):
                parts = node.module.split(".")[1:]
                names = [parts[0]] if parts else [a.name for a in node.names]
            else:
                continue
            found.update(n for n in names if n in RANK)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("kernelscope."))
    return found


def test_every_module_has_a_layer() -> None:
    units = {unit_of(p) for p in SRC.rglob("*.py") if p.name != "__init__.py" or p.parent != SRC}
    assert units <= set(RANK), units - set(RANK)


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        if path != SRC / "__init__.py":
            edges.setdefault(unit_of(path), set()).update(imports(path) - {unit_of(path)})
    return edges


def test_imports_point_down() -> None:
    """Down the layers only; side by side only among the ground modules (report and campaign, say,
    never import each other)."""
    wrong = [f"{me} imports {other}" for me, others in graph().items() for other in others
             if RANK[other] > RANK[me] or (RANK[other] == RANK[me] and RANK[me] != 0)]
    assert wrong == []


def in_cycles(edges: dict[str, set[str]]) -> list[str]:
    """The nodes that reach themselves."""
    def reach(start: str) -> set[str]:
        seen, todo = set(), list(edges.get(start, ()))
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo += edges.get(n, ())
        return seen

    return sorted(u for u in edges if u in reach(u))


def test_no_cycles_between_units() -> None:
    assert in_cycles(graph()) == []


def test_nothing_imports_the_cli() -> None:
    users = [p for p in SRC.rglob("*.py") if unit_of(p) != "cli" and "cli" in imports(p)]
    assert users == []


def test_catalogue_both_ways() -> None:
    """Every counter a set collects is read, and every counter read is collected by some set."""
    collected = set(metric_sets.metric_list(tuple(metric_sets.ADDONS)))
    assert collected <= catalogue.WANTED
    collected_by_group = {c.name for c in catalogue.COUNTERS if c.group in ("roofline", "stalls")}
    assert collected == collected_by_group
    groups = {c.group for c in catalogue.COUNTERS}
    assert groups <= {"roofline", "stalls", "sol", "full", "nvlink", "launch", "blackwell", "foreign"}
    # Blackwell-only names are read when a Blackwell report has them, never asked of ncu on Hopper
    blackwell = {c.name for c in catalogue.COUNTERS if c.group == "blackwell"}
    assert "sm__ops_path_tensor_src_fp4_dst_fp32.sum" in blackwell and not blackwell & collected
    # the sol group comes with ncu's SpeedOfLight section, which the sol add-on asks for
    assert metric_sets.ADDONS["sol"].sections == ("SpeedOfLight",)
    # the nvlink group comes with ncu's Nvlink sections: asked by name on a GPU with no NVLink peer,
    # nvlrx/nvltx fail the kernel (measured on the H200); the sections only warn
    assert metric_sets.ADDONS["nvlink"].sections == ("Nvlink", "Nvlink_Tables")
    assert not {c.name for c in catalogue.COUNTERS if c.group == "nvlink"} & collected
    assert len({c.name for c in catalogue.COUNTERS}) == len(catalogue.COUNTERS)  # each named once


def test_figure_sources_name_counters_and_figures_above() -> None:
    """A figure's every source reads only catalogue counters and figures defined above it (evaluated in
    table order), so one pass over FIGURES gives every figure; each figure is named once."""
    seen: set[str] = set()
    for fig in catalogue.FIGURES:
        for src in fig.sources:
            assert all(n in catalogue.WANTED or n in seen for n in src.needs), (fig.name, src.label)
        assert fig.name not in seen and "__" not in fig.name  # figure names never look like counters
        seen.add(fig.name)


def test_each_figure_is_declared_once_and_every_view_reads_the_declaration() -> None:
    """A figure's unit, doc and label live in its column (columns.py), its sources in catalogue.FIGURES:
    every catalogue figure is a column or a map's key (or a step only other figures read), every figure
    a view shows is declared with how it is shown, and a map's per-key units name its keys."""
    from kernelscope.report import diff, join, kernels

    for fig in catalogue.FIGURE_NAMES:
        column, _, key = fig.partition(".")
        assert fig in catalogue.STEPS or (column in columns.BY_NAME and (
            not key or key in dict(columns.BY_NAME[column].keys))), fig
    # and the other way: every figure a record measures comes from the catalogue or from figures (derive.py)
    maps = {name.partition(".")[0] for name in catalogue.FIGURE_NAMES}
    for fig in (*derive.MEASURED, "flops.total", "dominant_precision"):  # the record's flops_total is flops.total
        assert fig in catalogue.FIGURE_NAMES or fig in maps or fig in derive.FROM_FIGURES, fig
    assert set(derive.FROM_FIGURES) <= set(columns.FLAT)
    shown = [name for name, _ in kernels.TABLE_FIGURES] + ["duration_ns", "pct_sol", *diff.COMPARED]
    assert all(columns.BY_NAME[n].shown is not None for n in shown)
    assert {c.name for c in columns.COLUMNS if c.shown} == set(shown)  # no label nothing shows
    assert set(join.JOINED) <= set(columns.BY_NAME)
    assert all(f"pct_of_achievable.{k}" in columns.FLAT for k, _ in kernels.ACHIEVABLE)
    for c in columns.COLUMNS:
        assert set(dict(c.key_units)) | set(dict(c.key_shown)) <= set(dict(c.keys)), c.name
    # units as gates read them: declared, not parsed out of prose
    assert columns.BY_NAME["limiter"].unit_of("clock_hz") == "Hz"
    assert columns.BY_NAME["limiter"].unit_of("pct") == "% of the roof"
    assert columns.BY_NAME["analytic"].unit == ("FLOP (flops); byte (bytes); ratio (counted_over_analytic_flops, "
                                                "counted_over_analytic_bytes)")
    # a percent's source is labelled as computed: `100 x a / b`, never `a / b` (tests/test_docs.py shows them)
    for fig in catalogue.FIGURES:
        for src in fig.sources:
            if fig.name.endswith("_pct") and " / " in src.label and src.formula is not max:
                assert src.label.startswith("100 x ") or "% of peak" in src.label, (fig.name, src.label)


def test_published_schema_is_the_column_spec() -> None:
    published = json.loads((SRC.parents[1] / "schema" / "kernel.schema.json").read_text())
    assert published == columns.json_schema(), "regenerate: python3 -m kernelscope.columns > schema/kernel.schema.json"


@pytest.fixture(scope="module")
def schema() -> dict:
    return columns.json_schema()


def test_analyze_json_follows_the_schema(fx: Path, schema: dict, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = [str(fx / n) for n in ("gemm_bf16.ncu-rep", "gemm_basic.ncu-rep", "bundle_attn_causal",
                                     "decode_gemm-details.csv")]
    assert main(["analyze", *inputs, "--format", "json", "--hw", "h200-sxm"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, schema)
    assert {k["name"] for k in doc["kernels"]} >= {"flash_fwd_kernel"}


def test_campaign_cell_follows_the_schema(fx: Path, tmp_path: Path, schema: dict) -> None:
    assert main(["campaign", "import-ncu", "--root", str(tmp_path), "--campaign", "c", "--cell-id", "x",
                 "--bundle", str(fx / "bundle_attn_causal"), "--bundle", str(fx / "fp8_gemm.ncu-rep")]) == 0
    jsonschema.validate(json.loads((tmp_path / "c" / "cells" / "x" / "ncu_kernels.json").read_text()), schema)


def test_csv_and_parquet_use_the_column_names(fx: Path, tmp_path: Path) -> None:
    assert main(["analyze", str(fx / "fp8_gemm.ncu-rep"), "--out-dir", str(tmp_path / "o")]) == 0
    header = (tmp_path / "o" / "kernels.csv").read_text().splitlines()[0].split(",")
    plain = [c.name for c in columns.COLUMNS if c.kind != "map"]
    assert [h for h in header if h in plain] == plain  # every column, in spec order
    maps = {c.name for c in columns.COLUMNS if c.kind == "map"}
    assert all(h in plain or h in maps or h.split(".", 1)[0] in maps for h in header)  # nothing else


def test_a_columns_kind_is_its_model_fields_type() -> None:
    """columns.py writes each figure's kind (`_num`: number); model.py types the field the value
    comes from: the two agree for every column read off a record, an assessment or their parts."""
    hints: dict[str, object] = {}
    for cls in (model.KernelRecord, model.Assessment, model.Capture, model.Provenance):
        for name, hint in get_type_hints(cls).items():
            hints.setdefault(name, hint)
    read = [c for c in columns.COLUMNS if c.name in hints and c.kind not in ("map", "list")]
    assert len(read) > 50
    assert {c.name for c in read} >= {"dram_throughput_pct", "achieved_tflops", "duration_ns", "bound"}
    assert [(c.name, c.kind) for c in read] == [(c.name, columns._kind_of(hints[c.name])) for c in read]


def module_imports(path: Path) -> set[str]:
    """The kernelscope modules a module imports at import time (top level; a TYPE_CHECKING block or
    an import inside a function is not run then), as dotted paths under kernelscope."""
    pkg = list(path.relative_to(SRC).with_suffix("").parts[:-1]) if path.name != "__init__.py" else \
        list(path.relative_to(SRC).parent.parts)
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = pkg[: len(pkg) - node.level + 1]
            mod = [*base, *(node.module.split(".") if node.module else [])]
            for alias in node.names:  # `from . import watch` names a module; `from .x import y` the module x
                sub = SRC.joinpath(*mod, alias.name)
                found.add(".".join([*mod, alias.name]) if sub.with_suffix(".py").exists() or sub.is_dir()
                          else ".".join(mod))
    return {m for m in found if m}


def test_no_cycles_between_modules() -> None:
    """Within a package too (k8s/inspect and k8s/preflight once imported each other)."""
    edges = {".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__"): module_imports(p)
             for p in SRC.rglob("*.py")}
    assert in_cycles(edges) == []
