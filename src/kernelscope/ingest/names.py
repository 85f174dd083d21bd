"""Kernel names: the short base name a person says ("flash_fwd_kernel") from a demangled one."""

from __future__ import annotations

from functools import lru_cache


def _strip_bracketed(text: str, open_ch: str, close_ch: str) -> str:
    out, depth = [], 0
    for ch in text:
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
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
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
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
