"""Files in and out. Outputs appear whole or not at all (a temp name beside the target, then a
rename), never replace a device, FIFO or socket, and leave no temp file behind on any error. Inputs
are read only from regular files and only up to a size limit, so a FIFO cannot hang a run and
/dev/zero cannot fill memory."""

from __future__ import annotations

import errno
import functools
import io
import json
import marshal
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from importlib.util import cache_from_source
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from .errors import InputError, KernelscopeError, signals_held

if TYPE_CHECKING:
    import yaml

MAX_INPUT_BYTES = 4 << 30  # a report larger than 4 GiB is refused before it is read


def umask_mode(full: int = 0o666) -> int:
    """mkstemp makes 0600 files and mkdtemp 0700 folders; published outputs get the usual mode (0666 a
    file, 0777 a folder) & ~umask."""
    mask = os.umask(0)
    os.umask(mask)
    return full & ~mask


def check_output_path(out: Path) -> None:
    """Refuse to replace anything that is not a regular file (e.g. `--out /dev/null` as root)."""
    try:
        mode = out.lstat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise KernelscopeError(f"{out}: cannot write here ({exc.strerror})") from exc
    if stat.S_ISDIR(mode):
        raise KernelscopeError(f"{out}: is a directory; give a file name")
    if not stat.S_ISREG(mode):
        raise KernelscopeError(f"{out}: not a regular file (device, FIFO, socket or link); refusing to replace it")


@contextmanager
def staged(names: Sequence[str], out_dir: Path) -> Iterator[dict[str, BinaryIO]]:
    """Files to write under `out_dir`, open under temp names beside their own: renamed into place
    together when the block ends, and removed if it raises, so none appears half-written (nor the
    directories made for them)."""
    made = [d for d in (out_dir, *out_dir.parents) if not d.exists()]
    temps: list[tuple[str, Path]] = []
    done = False
    try:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KernelscopeError(f"{out_dir}: cannot create the output directory ({exc.strerror})") from exc
        for name in names:
            check_output_path(out_dir / name)
        with ExitStack() as stack:
            handles: dict[str, BinaryIO] = {}
            for name in names:
                with signals_held():
                    fd, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=out_dir)
                    temps.append((name, Path(temp)))
                handles[name] = stack.enter_context(os.fdopen(fd, "wb"))
                os.chmod(temp, umask_mode())
            yield handles
        with signals_held():  # all of them renamed, or none
            for name, path in temps:
                os.replace(path, out_dir / name)
            done = True
    except OSError as exc:
        raise KernelscopeError(f"{out_dir}: cannot write output ({exc.strerror or exc})") from exc
    finally:
        for _, path in temps:
            path.unlink(missing_ok=True)
        for d in made if not done else ():
            with suppress(OSError):
                d.rmdir()


def write_files(files: Mapping[str, str | bytes], out_dir: Path) -> list[Path]:
    """Write every file under a temp name in `out_dir`, then rename each into place."""
    with staged(list(files), out_dir) as handles:
        for name, data in files.items():
            handles[name].write(data.encode() if isinstance(data, str) else data)
    return [out_dir / name for name in files]


def write_file(data: str | bytes, out: Path) -> Path:
    """One file, written beside its final name and renamed into place."""
    return write_files({out.name: data}, out.parent)[0]


HOLE_SLACK = 1 << 20  # a capture's file has no holes; one with more than this many bytes of holes is refused


class _Capped(io.FileIO):
    """An input file that cannot be read past its limit, should it grow while it is read: every
    buffered read of it comes through readinto or readall."""

    def __init__(self, fd: int, path: Path, limit: int, what: str) -> None:
        super().__init__(fd, "rb")
        self.shown, self.limit, self.what = path, limit, what

    def _check(self) -> None:
        if self.tell() > self.limit:
            raise InputError(self.shown, f"{self.what} grew past the {self.limit:,}-byte limit while being read")

    def readinto(self, buffer: Any) -> int:
        n = super().readinto(buffer)
        self._check()
        return n

    def readall(self) -> bytes:
        chunks = []
        while chunk := super().read(1 << 20):
            chunks.append(chunk)
            self._check()
        return b"".join(chunks)


def _hole_bytes(fd: int, size: int) -> int:
    """Bytes of the file that are holes (SEEK_DATA/SEEK_HOLE), counted until past HOLE_SLACK. A
    file system that cannot tell reports none; a compressed one reports its real holes only."""
    holes = pos = 0
    try:
        while pos < size and holes <= HOLE_SLACK:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # ENXIO: only a hole from pos to the end
                    raise
                data = size
            holes += data - pos
            pos = size if data >= size else os.lseek(fd, data, os.SEEK_HOLE)
    except OSError:
        return 0
    finally:
        os.lseek(fd, 0, os.SEEK_SET)
    return holes


def _kind(mode: int, what: str) -> str:
    if stat.S_ISDIR(mode):
        return f"is a directory, not a {what}"
    if stat.S_ISLNK(mode):
        return f"a link, not a regular {what}"
    return f"not a regular {what} (device, FIFO or socket)"


def _check_input(fd: int, path: Path, limit: int, what: str) -> None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(path, _kind(st.st_mode, what))
    if st.st_size > limit:
        raise InputError(path, f"{what} is {st.st_size:,} bytes, over the {limit:,}-byte limit")
    if st.st_blocks * 512 < st.st_size and (holes := _hole_bytes(fd, st.st_size)) > HOLE_SLACK:
        raise InputError(path, f"a sparse file ({st.st_size:,} bytes long, at least {holes:,} of them holes): not a "
                               f"{what} that ncu or kernelscope wrote")


@contextmanager
def open_input(path: Path, limit: int = MAX_INPUT_BYTES, what: str = "file",
               follow: bool = True) -> Iterator[BinaryIO]:
    """The one way a user's file is opened for reading: only a regular file (a FIFO cannot hang
    the run, /dev/zero cannot fill memory; a device is not even opened, and what is opened is
    checked again, so nothing swapped in between is read), no larger than `limit` bytes and
    without holes (a sparse file costs nothing to make and gigabytes to read or copy), checked
    before a byte is read, and never read past `limit` should it grow. `follow=False`: a link is
    refused, not followed (a file inside a bundle being copied). Errors are one InputError."""
    try:
        mode = (path.stat() if follow else path.lstat()).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(path, _kind(mode, what))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW))
    except FileNotFoundError as exc:
        raise InputError(path, "no such file or directory") from exc
    except OSError as exc:
        problem = "a symbolic link loop" if exc.errno == errno.ELOOP and follow else \
            _kind(stat.S_IFLNK, what) if exc.errno == errno.ELOOP else f"cannot read ({exc.strerror})"
        raise InputError(path, problem) from exc
    except ValueError as exc:  # a NUL byte in the name
        raise InputError(repr(str(path)), "not a usable path (a NUL byte)") from exc
    try:
        _check_input(fd, path, limit, what)
        os.set_blocking(fd, True)
        raw = _Capped(fd, path, limit, what)
    except BaseException:
        os.close(fd)
        raise
    with raw, io.BufferedReader(raw, 1 << 16) as fh:
        yield cast(BinaryIO, fh)


def read_bytes(path: Path, limit: int = MAX_INPUT_BYTES, what: str = "file") -> bytes:
    """The whole file, if it is a regular file no larger than `limit` bytes."""
    with open_input(path, limit, what) as fh:
        try:
            return fh.read()
        except OSError as exc:
            raise InputError(path, f"cannot read ({exc.strerror or exc})") from exc


def read_text(path: Path, limit: int = 64 << 20, what: str = "file") -> str:
    """A UTF-8 text file (a BOM is dropped), bounded like `read_bytes`."""
    data = read_bytes(path, limit, what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"{what} is not UTF-8 text (byte {exc.start})") from exc


def copy_input(src: Path, dst: Path, follow: bool = False, limit: int = MAX_INPUT_BYTES, what: str = "file") -> None:
    """Copy a file (by default not through a link), checked as `open_input` checks it before a
    byte is copied, to `dst`, a new file."""
    with open_input(src, limit, what, follow) as fh, dst.open("xb") as out:
        shutil.copyfileobj(fh, out, 1 << 20)


ALIAS_EXPANSION = 100_000  # nodes that aliases of maps and lists may add, over a whole stream


def _expanded_size(node: yaml.Node, seen: dict[int, int]) -> int:
    """The nodes a YAML node stands for with every alias in it expanded (a cycle counts once)."""
    if id(node) not in seen:
        seen[id(node)] = 1  # a cycle counts once (PyYAML refuses recursive aliases anyway)
        items = node.value if isinstance(node.value, list) else []  # a collection's; a scalar's is text
        seen[id(node)] = 1 + sum(_expanded_size(n, seen) for item in items
                                 for n in (item if isinstance(item, tuple) else (item,)))
    return seen[id(node)]


@functools.cache
def _plain_yaml_loader() -> type[yaml.SafeLoader]:
    """Safe YAML whose aliases expand to at most ALIAS_EXPANSION nodes: a 538-byte file of nested
    aliases of lists can otherwise expand to gigabytes in any reader that walks or copies it ("billion
    laughs"), while the anchors people write in manifests (`<<: *defaults`, a shared env list), which
    kubectl accepts, add a few hundred. Built on first use so that importing this module does not
    import PyYAML (start-up time)."""
    import yaml

    class PlainYamlLoader(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.expanded, self.sizes = 0, dict[int, int]()

        def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()  # type: ignore[no-untyped-call]
                anchored = self.anchors.get(event.anchor)
                if isinstance(anchored, yaml.CollectionNode):
                    self.expanded += _expanded_size(anchored, self.sizes)
                    if self.expanded > ALIAS_EXPANSION:
                        raise yaml.composer.ComposerError(
                            None, None, f"YAML aliases expand past {ALIAS_EXPANSION:,} nodes", event.start_mark)
            return super().compose_node(parent, index)  # type: ignore[arg-type]

    return PlainYamlLoader


def _alias_expansion(roots: list[yaml.Node]) -> int:
    """What PlainYamlLoader counts, over composed documents: each collection reached again (through
    an alias) adds its expanded size. Walked with a stack: libyaml nests up to 1,000 deep."""
    sizes: dict[int, int] = {}
    reached: set[int] = set()
    added, stack = 0, list(roots)
    while stack:
        node = stack.pop()
        if not isinstance(node.value, list):
            continue
        if id(node) in reached:
            added += _expanded_size(node, sizes)
            continue
        reached.add(id(node))
        stack.extend(n for item in node.value for n in (item if isinstance(item, tuple) else (item,)))
    return added


def _yaml(text: str, single: bool) -> Any:
    """A YAML document (`single`) or every document of a stream, as plain data, aliases bounded.
    libyaml's C composer reads it where PyYAML has it (a user's copy of the 97 KB ceilings table:
    16 ms, 155 ms in pure Python) and the bound is checked on its nodes before anything is built;
    what it refuses, and what the bound refuses, is read again by PlainYamlLoader, so errors keep
    its words and its line."""
    import yaml

    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        loader = fast(text)
        try:
            nodes = [loader.get_single_node()] if single else []
            while not single and loader.check_node():
                nodes.append(loader.get_node())
            if _alias_expansion([n for n in nodes if n is not None]) <= ALIAS_EXPANSION:
                docs = [None if n is None else loader.construct_document(n) for n in nodes]
                return docs[0] if single else docs
        except yaml.YAMLError:
            pass  # said below, in PlainYamlLoader's words
        finally:
            loader.dispose()
    if single:
        return yaml.load(text, Loader=_plain_yaml_loader())  # noqa: S506
    return list(yaml.load_all(text, Loader=_plain_yaml_loader()))  # noqa: S506


def parse_yaml(text: str, shown: object, what: str) -> Any:
    """YAML text (safe tags only, aliases bounded) -> plain data, or one InputError."""
    return _plain_yaml(lambda: _yaml(text, single=True), shown, what)


def parse_yaml_documents(text: str, shown: object, what: str) -> list[Any]:
    """Every document of a `---`-separated YAML stream (a Kubernetes manifest), read as parse_yaml reads one."""
    docs: list[Any] = _plain_yaml(lambda: _yaml(text, single=False), shown, what)
    return docs


def _plain_yaml(load: Callable[[], Any], shown: object, what: str) -> Any:
    import yaml

    try:
        return load()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise InputError(shown, f"{what} is not valid YAML{where} ({getattr(exc, 'problem', None) or exc})") from exc
    except RecursionError as exc:
        raise InputError(shown, f"{what} nests too deeply") from exc


def parse_packaged_yaml(path: Path) -> Any:
    """YAML this package ships (the ceilings table, the kernel sets): trusted, so libyaml's C loader reads it
    (~10x faster than the pure-Python loader every run paid) where PyYAML was built with it; and kept, parsed,
    where Python keeps the package's bytecode, as Python keeps a module's: importing PyYAML and parsing the
    ceilings table cost every run ~40 ms, loading the kept copy ~1 ms."""
    st = path.stat()
    key = (st.st_mtime_ns, st.st_size)  # what a .pyc checks of its source
    kept = Path(cache_from_source(f"{path}.py")).with_suffix(".marshal")  # __pycache__ or sys.pycache_prefix
    with suppress(OSError, EOFError, ValueError, TypeError):  # none kept, or one that is not whole
        found, doc = marshal.loads(kept.read_bytes())
        if found == key:
            return doc
    import yaml

    doc = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - ours
    if not sys.dont_write_bytecode:  # PYTHONDONTWRITEBYTECODE, -B: nothing written, as for bytecode
        with suppress(KernelscopeError, ValueError):  # a read-only install; a value marshal cannot keep
            write_file(marshal.dumps((key, doc)), kept)  # whole or not at all, should two runs write it at once
    return doc


def load_yaml(path: Path, what: str, limit: int = 1 << 20) -> Any:
    """A small YAML file (config, ceilings): bounded, UTF-8, no aliases, one clear error if bad."""
    return parse_yaml(read_text(path, limit, what), path, what)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


JSON_BYTES_A_VALUE = 16  # documents we write hold one value in ~45 bytes; `{},` is one in 3


def parse_json(text: str, shown: object, what: str) -> Any:
    """JSON text -> plain data (no NaN or Infinity), or one InputError: every JSON kernelscope reads
    (a file, kubectl's and helm's output) is parsed here, so one nested 100,000 deep is an error
    line, not a RecursionError."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise InputError(shown, f"{what} is not valid JSON ({exc})") from exc
    except RecursionError as exc:
        raise InputError(shown, f"{what} nests too deeply") from exc


def load_json(path: Path, what: str, limit: int = 64 << 20) -> Any:
    """A JSON file we wrote (manifest, campaign cell): bounded, UTF-8, one clear error if bad.
    Parsed memory grows with the values, not the bytes (an empty map is 3 bytes of text and 64 of
    memory: 150 MB of them took 3.6 GB), so a document holding more than one value in
    JSON_BYTES_A_VALUE bytes is refused before it is parsed (values counted as the commas and
    openings that precede them)."""
    text = read_text(path, limit, what)
    values = text.count(",") + text.count("{") + text.count("[")
    if values > 64 + len(text) // JSON_BYTES_A_VALUE:
        raise InputError(path, f"{what} of {len(text):,} bytes holds some {values:,} JSON values, one in "
                               f"{len(text) / values:.1f} bytes (kernelscope writes one in ~45; under "
                               f"{JSON_BYTES_A_VALUE} is refused): not a document it wrote")
    return parse_json(text, path, what)
