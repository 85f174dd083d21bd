"""Files in and out. Outputs appear whole or not at all (a temp name beside the target, then a
rename), never replace a device, FIFO or socket, and leave no temp file behind on any error. Inputs
are read only from regular files and only up to a size limit, so a FIFO cannot hang a run and
/dev/zero cannot fill memory."""

from __future__ import annotations

import functools
import json
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

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


def regular_file(path: Path, what: str = "file") -> os.stat_result:
    """The stat of `path`, which must be a regular file (no FIFO, device or socket)."""
    try:
        st = path.stat()
    except FileNotFoundError as exc:
        raise InputError(path, "no such file or directory") from exc
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror})") from exc
    if not stat.S_ISREG(st.st_mode):
        raise InputError(path, f"not a regular {what} (device, FIFO or socket)")
    return st


def bounded_file(path: Path, limit: int = MAX_INPUT_BYTES, what: str = "file") -> os.stat_result:
    """The stat of `path`, which must be a regular file no larger than `limit` bytes."""
    st = regular_file(path, what)
    if st.st_size > limit:
        raise InputError(path, f"{what} is {st.st_size:,} bytes, over the {limit:,}-byte limit")
    return st


def read_bytes(path: Path, limit: int = MAX_INPUT_BYTES, what: str = "file") -> bytes:
    """The whole file, if it is a regular file no larger than `limit` bytes."""
    bounded_file(path, limit, what)
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror})") from exc
    if len(data) > limit:
        raise InputError(path, f"{what} grew past the {limit:,}-byte limit while being read")
    return data


def read_text(path: Path, limit: int = 64 << 20, what: str = "file") -> str:
    """A UTF-8 text file (a BOM is dropped), bounded like `read_bytes`."""
    data = read_bytes(path, limit, what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"{what} is not UTF-8 text (byte {exc.start})") from exc


@functools.cache
def _plain_yaml_loader() -> type[yaml.SafeLoader]:
    """Safe YAML whose aliases may only name a scalar: a 538-byte file of nested aliases of lists
    can otherwise expand to gigabytes ("billion laughs"), while a repeated string (a source cited
    by many ceilings) cannot multiply. Built on first use so that importing this module does not
    import PyYAML (start-up time)."""
    import yaml

    class PlainYamlLoader(yaml.SafeLoader):
        def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()  # type: ignore[no-untyped-call]
                anchored = self.anchors.get(event.anchor)
                if not isinstance(anchored, yaml.ScalarNode):  # a scalar alias is one string, it cannot multiply
                    raise yaml.composer.ComposerError(None, None, "YAML aliases of maps or lists are not allowed",
                                                      event.start_mark)
            return super().compose_node(parent, index)  # type: ignore[arg-type]

    return PlainYamlLoader


def parse_yaml(text: str, shown: object, what: str) -> Any:
    """YAML text (no aliases, no tags beyond the safe ones) -> plain data, or one InputError."""
    import yaml

    try:
        return yaml.load(text, Loader=_plain_yaml_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise InputError(shown, f"{what} is not valid YAML{where} ({getattr(exc, 'problem', None) or exc})") from exc
    except RecursionError as exc:
        raise InputError(shown, f"{what} nests too deeply") from exc


def parse_packaged_yaml(text: str) -> Any:
    """YAML this package ships (the ceilings table, the kernel sets): trusted, so libyaml's C loader reads it
    (~10x faster than the pure-Python loader every run paid) where PyYAML was built with it."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader, on our own file


def load_yaml(path: Path, what: str, limit: int = 1 << 20) -> Any:
    """A small YAML file (config, ceilings): bounded, UTF-8, no aliases, one clear error if bad."""
    return parse_yaml(read_text(path, limit, what), path, what)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


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
    """A JSON file we wrote (manifest, campaign cell): bounded, UTF-8, one clear error if bad."""
    return parse_json(read_text(path, limit, what), path, what)
