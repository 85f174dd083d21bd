"""Our verdicts beside ncu's, fixture by fixture: our bound and limiter, ncu's SOLBottleneck title,
the next lever, whether the two agree (and why not), and the agreement rate over the kernels both
judged. Runs on the recorded captures, no GPU:

    python3 bench/verdicts.py [--markdown] [REPORT ...]     (default: every fixture in tests/fixtures)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import kernelscope
from kernelscope.model import Assessment

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
HEADER = ("fixture", "kernel", "ours", "ncu SOLBottleneck", "agree", "next lever")


def ours(a: Assessment) -> str:
    lim, near = a.limiter, a.runner_up
    if lim.pct is not None:
        return f"{a.bound}: {lim.name} {lim.pct:.0f} %"
    if lim.kind == "unmeasured":
        return "unmeasured"
    text = a.bound if lim.kind == "latency" else f"{a.bound}: {lim.name}"
    return text + ("" if near is None or near.pct is None else f" (nearest {near.name} {near.pct:.0f} %)")


def lever(a: Assessment) -> str:
    lv = a.next_levers[0]
    unlock = "" if lv.unlock_x is None else f", up to {lv.unlock_x:.1f}x"
    return f"{lv.rule} ({lv.family}{unlock})"


def row(path: Path, a: Assessment) -> tuple[str, ...]:
    agree = {True: "yes", False: "NO", None: "n/a"}[a.ncu.agrees]
    return (path.name, a.record.name[:40], ours(a), a.ncu.bottleneck or "—", agree, lever(a))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="*", type=Path)
    ap.add_argument("--markdown", action="store_true", help="a Markdown table (for a note)")
    args = ap.parse_args(argv)
    paths = args.reports or sorted([*FIXTURES.glob("*.ncu-rep*"), FIXTURES / "bundle_attn_causal"])
    rows, whys, compared, agreed = [], [], 0, 0
    for path in paths:
        items, _ = kernelscope.analyze(str(path))
        for a in items:
            rows.append(row(path, a))
            if a.ncu.agrees is not None:
                compared += 1
                agreed += a.ncu.agrees
            if a.ncu.agrees is not True:
                whys.append(f"{path.name}: {a.ncu.why}")
    if args.markdown:
        print("| " + " | ".join(HEADER) + " |\n|" + "---|" * len(HEADER))
        print("\n".join("| " + " | ".join(r) + " |" for r in rows))
    else:
        widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
        for r in [HEADER, *rows]:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    print()
    for why in whys:
        print(f"- {why}")
    rate = 100 * agreed / compared if compared else 0.0
    print(f"\nagreement with ncu's SOLBottleneck: {agreed}/{compared} kernels = {rate:.0f} % "
          f"({len(rows) - compared} not compared: no ncu rule results, or our verdict is unmeasured)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
