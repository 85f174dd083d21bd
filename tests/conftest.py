"""Shared fixtures: paths to the real ncu reports under tests/fixtures (see its README)."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fx() -> Path:
    return FIXTURES


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def chromium() -> str:
    """A real Chromium for the HTML checks. A test run never installs system packages: without one
    on PATH the browser tests skip and say how to run them."""
    found = _chromium()
    if found is None:
        pytest.skip("no chromium on PATH: install it (Debian: apt-get install chromium) to run the browser tests")
    return found


def raw_csv_variant(src: Path, dst: Path, name: str | None = None, duration_factor: float = 1.0,
                    copies: int = 1) -> Path:
    """A copy of a real `--page raw` CSV export with its kernel renamed, its duration scaled or its
    rows replicated (distinct IDs; `{i}` in `name` numbers the copies): the figures stay real."""
    import csv

    with src.open(newline="") as fh:
        header, units, *rows = list(csv.reader(fh))
    at = {h: i for i, h in enumerate(header)}
    out = []
    for i in range(copies):
        for row in rows:
            row = list(row)
            row[at["ID"]] = str(len(out))
            if name is not None:
                row[at["Kernel Name"]] = name.replace("{i}", str(i))
            t = at["gpu__time_duration.sum"]
            row[t] = f"{float(row[t].replace(',', '')) * duration_factor:.6f}"
            out.append(row)
    with dst.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows([header, units, *out])
    return dst


@pytest.fixture(scope="session")
def variant() -> object:
    return raw_csv_variant


SETS_ARCHIVE = FIXTURES / "sets.tar.xz"


def unpacked(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fixture archive of ours, unpacked into a fresh folder."""
    import tarfile

    out = tmp_path_factory.mktemp(archive.name.split(".")[0])
    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python 3.11.2 has no filters
    with tarfile.open(archive) as tar:
        tar.extractall(out, **safe)  # type: ignore[arg-type]
    return out


@pytest.fixture(scope="session")
def sets_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The capture-set fixtures (tests/fixtures/README.md, "Capture sets"), unpacked once: the same
    kernels captured by every set a user might have used. One archive, since the reports of one set
    share the embedded code of their kernels (1.7 MB as one xz archive, 24 MB as separate gzips)."""
    return unpacked(SETS_ARCHIVE, tmp_path_factory)


@pytest.fixture(scope="session")
def attach_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Attach captures replayed and multiplexed, of a serving loop and of vLLM (tests/fixtures/README.md,
    "One kernel replayed and multiplexed"): 5.3 MB of bundles, 0.13 MB as one xz archive."""
    return unpacked(FIXTURES / "multiplex" / "attach.tar.xz", tmp_path_factory)


GOLDEN = Path(__file__).parent / "golden"


def check_golden(name: str, text: str) -> None:
    """`text` equals tests/golden/NAME (KERNELSCOPE_GOLDEN=write pytest ... rewrites the files)."""
    path = GOLDEN / name
    if os.environ.get("KERNELSCOPE_GOLDEN") == "write":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{path} differs; review, then rewrite with KERNELSCOPE_GOLDEN=write"


@pytest.fixture(scope="session")
def golden() -> object:
    return check_golden


HERE = Path(__file__).parent
# the modules that drive the test cluster: test_k8s.py, with its `cluster` fixture, and those that take it from there
ON_CLUSTER = frozenset(f"tests/{p.name}" for p in HERE.glob("test_*.py")
                       if p.name == "test_k8s.py" or "from test_k8s import" in p.read_text())
# two test clusters at once (a third's API server, etcd and node poller cost more CPU than it saves): the
# captures and inspections of test_k8s*.py on one, about half the time on the cluster, the other modules on the
# other; one when KUBECONFIG names the cluster (two workers would share its namespace and its names)
CORE = ("tests/test_k8s.py", "tests/test_k8s_capture.py")
CLUSTER_OF = {module: "on-cluster" if os.environ.get("KUBECONFIG") else
              "on-cluster-core" if module in CORE else "on-cluster-rest" for module in ON_CLUSTER}


@pytest.hookimpl(optionalhook=True)  # an xdist hook: on the controller
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist workers take a module's tests together, in their order (as one process would: the
    documents' steps build on the ones before, module fixtures are made once). The modules on the
    test cluster go out first as two groups, each a worker's and its own cluster's (their pods
    get that worker's ports: tests/toyk8s.py): they are the longest and spend most of their time
    waiting on pods, which a third worker's tests fill; a worker already holding a group is given
    the smallest module left beside it. (xdist's own xdist_group marks do nothing under pytest 9.2:
    it renames nodes by an attribute pytest no longer reads.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return CLUSTER_OF.get(module, module)

        def _assign_work_unit(self, node: Any) -> None:
            queue = self.workqueue  # scopes by number of tests, most first
            held = self.assigned_work.get(node, {})  # scope -> {nodeid: done}, finished scopes too
            if any(scope.startswith("on-cluster") and not all(done.values()) for scope, done in held.items()):
                pick = next((s for s in reversed(queue) if not s.startswith("on-cluster")), None)
            else:
                pick = next((s for s in queue if s.startswith("on-cluster")), None)
            if pick is not None:
                queue.move_to_end(pick, last=False)
            super()._assign_work_unit(node)

    return ByModule(config, log)


TERMINAL_ENV = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)  # an xdist hook: on the controller, a worker is being started
def pytest_configure_node(node: Any) -> None:
    node.workerinput["terminal_env"] = {k: os.environ.get(k) for k in TERMINAL_ENV}


def pytest_configure(config: pytest.Config) -> None:
    given = getattr(config, "workerinput", None)
    _sigint_as_at_a_terminal()
    if given is None:
        _bytecode_once()
    else:
        _controllers_terminal(given["terminal_env"])


def _controllers_terminal(given: dict[str, str | None]) -> None:
    """An xdist worker starts with COLUMNS=80 and LINES=24 set: the CLI's output fits $COLUMNS,
    so a worker takes the controller's (unset: piped output is not wrapped), as one process would."""
    for key, value in given.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _sigint_as_at_a_terminal() -> None:
    """A background job of a non-interactive shell (`bash .ci/run &`) starts with SIGINT ignored, and
    every process it starts inherits that: the tests that press Ctrl-C on a kernelscope process
    play a user at a terminal, so its processes get Python's own handler back."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _bytecode_once() -> None:
    """kernelscope's bytecode, written once before the workers start. Under PYTHONDONTWRITEBYTECODE
    (set on many CI images) an editable install has none, and each kernelscope process the tests
    start would compile the package again (0.3-0.6 s each on 2 busy cores)."""
    import compileall

    import kernelscope

    compileall.compile_dir(Path(kernelscope.__file__).parent, quiet=2)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands its hostile-input counts to the controller, which prints them."""
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        from hostile import BY_CLASS, TALLY

        out["hostile"] = [dict(TALLY), dict(BY_CLASS)]


@pytest.hookimpl(optionalhook=True)  # an xdist hook: on the controller, a worker has finished
def pytest_testnodedown(node: object, error: object) -> None:
    from hostile import BY_CLASS, TALLY

    tally, by_class = getattr(node, "workeroutput", {}).get("hostile", ({}, {}))
    TALLY.update(tally)
    BY_CLASS.update(by_class)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The counts the hostile-input issue asks for: inputs tried, clean errors, failures (summed
    over the xdist workers)."""
    from hostile import BY_CLASS, TALLY

    if TALLY["tried"]:
        terminalreporter.write_line(
            f"hostile inputs: {TALLY['tried']} tried, {TALLY['clean']} clean errors, {TALLY['handled']} handled "
            f"with valid output, {TALLY['failures']} failures")
        for klass, n in sorted(BY_CLASS.items()):
            terminalreporter.write_line(f"  {n:6d}  {klass}")


# A report ncu_report loaded, and each launch read from it, stay in the process until it ends
# (src/kernelscope/ingest/ncu_rep.py, _Opened): a worker that ran every module would hold every
# distinct report file the suite reads (~10 MB a report, ~0.4 MB a launch; the copies in tmp
# directories are distinct files), ~3 GB. So each module off the test cluster runs in a child
# process forked from its worker, which ends after the module's last test, its reports with it:
# the module's tests run there in their order with their module fixtures made once, as in the
# worker, and the worker reports their results as its own. The session fixtures the worker has
# made are the child's too; ones first asked for in a child are made again by the next that asks.
_APART: dict[str, list[dict[str, Any]]] = {}  # nodeid -> its reports, serialized, from its module's child
_APART_DONE: set[Path] = set()  # modules whose child has ended


def _run_apart(item: pytest.Item) -> None:
    """Runs `item`'s module, from `item` on, in a forked child; its reports land in _APART. A test
    that ends its child (a crash) fails, and the module goes on from the next test in another."""
    import json
    import tempfile

    from _pytest.runner import runtestprotocol

    from hostile import BY_CLASS, TALLY

    session, config = item.session, item.config
    at = session.items.index(item)
    mine = [i for i in session.items[at:] if i.path == item.path]
    after = next((i for i in session.items[at:] if i.path != item.path), None)  # to tear down to
    config._tmp_path_factory.getbasetemp()  # made (emptied) here once, not by a child
    _APART_DONE.add(item.path)
    while mine:
        with tempfile.TemporaryFile() as out:
            pid = os.fork()
            if pid == 0:  # the child: it reports to the worker through `out` only, and ends without cleanup
                code = 1
                try:
                    TALLY.clear()
                    BY_CLASS.clear()
                    for n, each in enumerate(mine):
                        reports = runtestprotocol(each, nextitem=mine[n + 1] if n + 1 < len(mine) else after,
                                                  log=False)
                        line = {"nodeid": each.nodeid, "hostile": [TALLY, BY_CLASS],
                                "reports": [config.hook.pytest_report_to_serializable(config=config, report=r)
                                            for r in reports]}
                        out.write(json.dumps(line).encode() + b"\n")
                        out.flush()
                    code = 0
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            out.seek(0)
            lines = [json.loads(line) for line in out.read().splitlines()]
        for line in lines:
            _APART[line["nodeid"]] = line["reports"]
        if lines:
            TALLY.update(lines[-1]["hostile"][0])
            BY_CLASS.update(lines[-1]["hostile"][1])
        mine = mine[len(lines):]
        if mine:
            _APART[mine[0].nodeid] = [_died(mine[0], f"the test ended its process (wait status {status})")]
            mine = mine[1:]


def _died(item: pytest.Item, why: str) -> dict[str, Any]:
    from _pytest.reports import TestReport

    rep = TestReport(item.nodeid, item.location, {k: 1 for k in item.keywords}, "failed", why, "call")
    data: dict[str, Any] = item.config.hook.pytest_report_to_serializable(config=item.config, report=rep)
    return data


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    if str(Path(item.path).relative_to(HERE.parent)) in ON_CLUSTER or not hasattr(os, "fork"):
        return None  # the cluster's modules share the worker's cluster: run in the worker
    if item.nodeid not in _APART:
        if item.path in _APART_DONE:
            _APART[item.nodeid] = [_died(item, "not run in its module's child process")]
        else:
            _run_apart(item)
    config = item.config
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for data in _APART.pop(item.nodeid):
        if isinstance(data.get("longrepr"), list):  # a skip's (path, line, reason), a list after JSON; -v wants a tuple
            data["longrepr"] = tuple(data["longrepr"])
        item.ihook.pytest_runtest_logreport(report=config.hook.pytest_report_from_serializable(config=config,
                                                                                               data=data))
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
