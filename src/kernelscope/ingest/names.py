"""Kernel names: the short base name a person says ("flash_fwd_kernel") from a demangled one, and the
name a kernel is shown by: a CUTLASS/CuTe wrapper's function (`cutlass::device_kernel<...>`, whose
function name is `device_kernel` for every kernel it wraps) is shown by the kernel inside it
(`FlashAttnFwdSm90`), so the tables, filters and provenance see the name that means something."""

from __future__ import annotations

import re
from functools import lru_cache


def _strip_bracketed(text: str, open_ch: str, close_ch: str) -> str:
    """`text` without what its brackets hold (an unmatched close is dropped). Regex steps from bracket
    to bracket: a CuTe name of 100 KB is read in milliseconds, not a Python step a character."""
    out, depth, start = [], 0, 0
    for m in re.finditer(f"[{re.escape(open_ch + close_ch)}]", text):
        if depth == 0:
            out.append(text[start:m.start()])
        depth = depth + 1 if m.group() == open_ch else max(depth - 1, 0)
        start = m.end()
    if depth == 0:
        out.append(text[start:])
    return "".join(out)


def _without_parameters(text: str) -> str:
    """Cut the trailing parameter list (the last top-level parenthesis group)."""
    if "(" in text and text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                return text[:i]
    return text


def _top_level_split(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside template brackets."""
    if "<" not in text:
        return text.split(sep)
    parts, depth, start = [], 0, 0
    for m in re.finditer(f"<|>|{re.escape(sep)}", text):
        token = m.group()
        if token == "<":
            depth += 1
        elif token == ">":
            depth -= 1
        elif depth == 0:
            parts.append(text[start:m.start()])
            start = m.end()
    return [*parts, text[start:]]


@lru_cache(maxsize=4096)
def template_name(name: str) -> str:
    """`void ns::flash_fwd_kernel<Traits<128>, true>(Params)` -> `flash_fwd_kernel<Traits<128>, true>`:
    the base name with its template arguments, which tell two instantiations of one kernel apart."""
    text = _without_parameters(name.strip()).strip()
    text = _top_level_split(text, " ")[-1]
    return _top_level_split(text, "::")[-1] or name


@lru_cache(maxsize=4096)  # a report repeats a few hundred names over many launches
def short_name(name: str) -> str:
    """`void at::native::(anon)::vectorized_elementwise_kernel<4, F>(int, F)` -> its base name.

    Drops the parameter list, template arguments, return type and namespaces, in that order.
    A name that is already short comes back unchanged.
    """
    text = _without_parameters(name.strip())
    text = _strip_bracketed(text, "<", ">").strip()
    text = text.split()[-1] if text.split() else text
    return text.rsplit("::", 1)[-1] or name


# Entry points that wrap the real kernel as a template argument: CUTLASS 3's `device_kernel<Op>`, its
# `enable_sm90_or_later<Op>` guards, CUTLASS 2's `Kernel<Op>`/`Kernel2<Op>`.
WRAPPERS = re.compile(r"^(device_kernel|Kernel2?|enable_sm\d+\w*)$")
# A member type that names no kernel by itself: vLLM's `cutlass_3x_gemm_sm90_fp8<...>::GemmKernel` is shown
# by the template that owns it
MEMBERS = frozenset({"GemmKernel", "Kernel", "KernelType", "Operator", "type"})


def _template_args(text: str, name: str) -> list[str]:
    """The top-level template arguments of `name<...>` in `text` (empty when it has none)."""
    at = text.find(name + "<")
    if at < 0:
        return []
    start, depth = at + len(name) + 1, 1
    for m in re.finditer("[<>]", text[start:]):
        depth += 1 if m.group() == "<" else -1
        if depth == 0:
            return [a.strip() for a in _top_level_split(text[start:start + m.start()], ",")]
    return []


@lru_cache(maxsize=4096)
def kernel_name(full: str, function: str | None = None) -> str:
    """The name a kernel is shown and matched by: its function's name (`function`, as ncu gives it,
    or the base of `full`), or for a wrapper the first kernel inside it that is not one:
    `cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<...>>>` -> FlashAttnFwdSm90."""
    base = function or short_name(full)
    text, name = _without_parameters(full.strip()), base
    for _ in range(8):  # wrappers nest a few deep at most
        if not WRAPPERS.match(name):
            return name
        args = _template_args(text, name)
        if not args:
            return base
        text = args[0]
        name = _owner(text)
    return base


def _owner(text: str) -> str:
    """The kernel a template argument names: its base name, or for a member type (`X<...>::GemmKernel`)
    its owner's (`X`)."""
    name = short_name(text)
    parts = _top_level_split(_without_parameters(text.strip()), "::")
    if name in MEMBERS and len(parts) >= 2:
        return short_name(parts[-2]) or name
    return name
