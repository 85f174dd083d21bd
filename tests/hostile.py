"""The tally of hostile inputs the suites try (printed at the end of the run by conftest.py), and
the two ways an input may end: handled (valid output) or a clean error (one KernelscopeError from
the API; exit 2 with one `kernelscope: error:` line from the CLI). Anything else is a failure:
the attempt records it and re-raises, so the test fails too. Each attempt names its class (the kind
of hostility it tries), and the tally is printed by class."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from kernelscope.cli import main
from kernelscope.errors import KernelscopeError

TALLY: Counter[str] = Counter()
BY_CLASS: Counter[str] = Counter()  # attempts by class
EARLIER = "files, documents, options, API types (issue 10)"
LAST_ERROR = [""]  # the stderr of the latest CLI attempt
LAST_OUTPUT = [""]  # and its stdout


def _no_constant(name: str) -> Any:
    raise AssertionError(f"JSON output holds {name}")


def cli(argv: Sequence[str], klass: str = EARLIER) -> str:
    """Run the CLI in-process: 'handled' or 'clean'; a traceback, a multi-line error or another exit
    code is a failure. JSON printed on success must be valid JSON (no NaN, no Infinity)."""
    out, err = io.StringIO(), io.StringIO()
    TALLY["tried"] += 1
    BY_CLASS[klass] += 1
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse refusing a value
                code = exc.code if isinstance(exc.code, int) else 2
        LAST_ERROR[0], LAST_OUTPUT[0] = err.getvalue(), out.getvalue()
        lines = [x for x in err.getvalue().splitlines() if x.startswith("kernelscope: error:")]
        if code == 2:
            assert len(lines) == 1 and "Traceback" not in err.getvalue(), err.getvalue()
            TALLY["clean"] += 1
            return "clean"
        assert code in (0, 1), (code, err.getvalue())
        if "--format" in argv and "json" in argv:
            json.loads(out.getvalue(), parse_constant=_no_constant)
        TALLY["handled"] += 1
        return "handled"
    except BaseException:
        TALLY["failures"] += 1
        raise


def api(call: Callable[[], object], klass: str = EARLIER) -> str:
    """Call the Python API: it may return, or raise a KernelscopeError; nothing else."""
    TALLY["tried"] += 1
    BY_CLASS[klass] += 1
    try:
        call()
    except KernelscopeError:
        TALLY["clean"] += 1
        return "clean"
    except BaseException:
        TALLY["failures"] += 1
        raise
    TALLY["handled"] += 1
    return "handled"
