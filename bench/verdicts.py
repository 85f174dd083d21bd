"""Our verdicts beside ncu's, on the recorded captures (no GPU):

1. every fixture (the H200 ones, real vLLM 0.26 kernels under tests/fixtures/vllm, and the reports people
   published from other GPUs in ../shared/reports-public when it is there): our bound and limiter, ncu's
   SOLBottleneck title, whether they agree, and the first three levers with their unlock;
2. the capture-set fixtures (tests/fixtures/sets.tar.xz): each kernel under every set a user might
   have used, our verdict (`?`: provisional) beside ncu's title, and whether the sets agree;
3. the agreement rate with ncu over every kernel both judged, each difference in one line.

    python3 bench/verdicts.py [--markdown] [--levers N] [REPORT ...]   (default: the fixtures and the sets)
"""

from __future__ import annotations

import argparse
import tarfile
import tempfile
from pathlib import Path

import kernelscope
from kernelscope.model import Assessment

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "reports-public"  # other people's files: read there
SETS = ("ks_roofline", "ks_stalls", "ks_sol", "full", "ncu_roofline", "detailed", "basic", "default", "sol")


def ours(a: Assessment) -> str:
    lim, near = a.limiter, a.runner_up
    bound = f"{a.bound}?" if a.provisional else a.bound
    if lim.pct is not None:
        return f"{bound}: {lim.name} {lim.pct:.0f} %"
    if lim.kind == "unmeasured":
        return "unmeasured"
    text = bound if lim.kind == "latency" else f"{bound}: {lim.name}"
    return text + ("" if near is None or near.pct is None else f" (nearest {near.name} {near.pct:.0f} %)")


def levers(a: Assessment, n: int) -> str:
    out = []
    for lv in a.next_levers[:n]:
        unlock = "" if lv.unlock_x is None else f" ≤{lv.unlock_x:.2f}x"
        out.append(f"{lv.rule}{unlock}")
    return "; ".join(out)


def agree(a: Assessment) -> str:
    return {True: "yes", False: "NO", None: "n/a"}[a.ncu.agrees]


def print_table(header: tuple[str, ...], rows: list[tuple[str, ...]], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        print("\n".join("| " + " | ".join(r) + " |" for r in rows))
        return
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="*", type=Path)
    ap.add_argument("--markdown", action="store_true", help="Markdown tables (for a note)")
    ap.add_argument("--levers", type=int, default=3, help="levers shown a kernel (default 3)")
    args = ap.parse_args(argv)
    judged: list[tuple[str, str, Assessment]] = []  # (input, set or "", assessment)
    paths = args.reports or [*sorted([*FIXTURES.glob("*.ncu-rep*"), FIXTURES / "bundle_attn_causal"]),
                             *sorted((FIXTURES / "vllm").glob("*.ncu-rep.gz")),
                             *sorted(p for p in PUBLIC.glob("*") if p.suffix in (".ncu-rep", ".csv"))]
    for path in paths:
        judged += [(path.name, "", a) for a in kernelscope.analyze(str(path))[0]]
    with tempfile.TemporaryDirectory() as tmp:
        if not args.reports:
            with tarfile.open(FIXTURES / "sets.tar.xz") as tar:
                tar.extractall(tmp)  # our own fixture archive
            for s in SETS:
                for part in ("torch", "divergent", "copy"):
                    judged += [(part, s, a) for a in kernelscope.analyze(str(Path(tmp) / f"{s}-{part}.ncu-rep"))[0]]

    print("1. fixtures")
    print_table(("fixture", "kernel", "ours", "ncu SOLBottleneck", "agree", "first levers (upper-bound unlock)"),
                [(f, a.record.name[:40], ours(a), a.ncu.bottleneck or "—", agree(a), levers(a, args.levers))
                 for f, s, a in judged if not s], args.markdown)

    by_kernel: dict[str, dict[str, Assessment]] = {}
    for _, s, a in judged:
        if s:
            by_kernel.setdefault(a.record.name, {})[s] = a
    if by_kernel:
        print("\n2. one kernel under every capture set (`?`: provisional, no FLOP or byte counters)")
        rows = []
        for name, found in by_kernel.items():
            sides = {(a.bound, a.provisional) for a in found.values()}
            bounds = {a.bound for a in found.values()}
            for s in SETS:
                a = found[s]
                rows.append((name[:40], s, ours(a), a.ncu.bottleneck or "—", agree(a),
                             "one bound" if len(bounds) == 1 else f"{len(sides)} verdicts"))
        print_table(("kernel", "set", "ours", "ncu SOLBottleneck", "agree", "across sets"), rows, args.markdown)
        split = [n for n, found in by_kernel.items() if len({a.bound for a in found.values()}) > 1]
        print(f"\nkernels whose bound differs between sets: {len(split)} of {len(by_kernel)}"
              + (f" ({', '.join(split)})" if split else ""))

    compared = [(f, s, a) for f, s, a in judged if a.ncu.agrees is not None]
    agreed = sum(1 for *_, a in compared if a.ncu.agrees)
    print("\n3. where ours and ncu's differ, and why")
    for f, s, a in compared:
        if not a.ncu.agrees:
            print(f"- {f}{' ' + s if s else ''} {a.record.name[:40]}: {a.ncu.why}")
    rate = 100 * agreed / len(compared) if compared else 0.0
    print(f"\nagreement with ncu's SOLBottleneck: {agreed}/{len(compared)} = {rate:.1f} % "
          f"({len(judged) - len(compared)} not compared: no SpeedOfLight section in the report, or ours unmeasured)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
