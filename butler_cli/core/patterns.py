"""Argument patterns shared by rule files and session grants: ``glob:…``, ``re:…`` or a bare glob.

On a **path argument** (one the tool declares in ``ToolSpec.path_args``) a pattern is matched
against the resolved absolute path only — never the text the model wrote. The glob itself is
``~``-expanded, taken from the task folder when relative, folded (``.``, ``..``, ``//``) and its
literal leading folders resolved — a link among them younger than the pattern (``since``: the
rule file written, the approval kept) is not followed, so a folder swapped for a link is never
what the pattern names; it is matched with wcmatch, where ``*`` never crosses ``/``
and ``**`` does. A ``re:`` pattern searches the resolved path.

On any other argument a pattern matches the text as the model wrote it, or with ``~``
expanded; a list (an argv) is matched as its items joined by spaces, and ``*`` matches anything
(fnmatch), since a command line or a URL is text, not a path.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from butler_cli.core.judged import JudgedArgs

_MAGIC = frozenset("*?[")


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """A regex for the pattern; ``re.error`` (or ValueError) when it is not valid."""
    if pattern.startswith("re:"):
        return re.compile(pattern[3:])
    glob = pattern[5:] if pattern.startswith("glob:") else pattern
    if not glob:
        raise ValueError("empty glob")
    return re.compile(fnmatch.translate(os.path.expanduser(glob)))


def as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return " ".join(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def matches(compiled: re.Pattern[str], value: Any, *, anchored: bool) -> bool:
    """Whether the argument matches: a regex searches (``re:``), a glob matches whole."""
    text = as_text(value)
    if text is None:
        return False
    candidates = {text, os.path.expanduser(text)}
    if anchored:
        return any(compiled.match(c) for c in candidates)
    return any(compiled.search(c) for c in candidates)


def normalize_glob(glob: str, base: str, real: Callable[[str], str]) -> str:
    """The absolute glob a path pattern means: ``~`` expanded, relative to ``base``, ``.``,
    ``..`` and ``//`` folded, its literal leading folders passed through ``real`` (which
    resolves symlinks; the tools layer injects ``os.path.realpath``)."""
    text = os.path.expanduser(glob)
    if not text.startswith("/"):
        text = f"{base.rstrip('/')}/{text}"
    parts = text.split("/")
    cut = next((i for i, part in enumerate(parts) if _MAGIC & set(part)), len(parts))
    prefix = real("/".join(parts[:cut]) or "/")
    out = [p for p in prefix.split("/") if p]
    for part in parts[cut:]:
        if part in ("", "."):
            continue
        if part == "..":
            if out:
                out.pop()
            continue
        out.append(part)
    return "/" + "/".join(out)


def path_matches(glob: str, path: str) -> bool:
    """Whether the absolute ``path`` matches the absolute ``glob`` (``*`` stays in one folder)."""
    from wcmatch import glob as wcglob  # 30 ms to import: only when a path rule is matched

    flags = wcglob.GLOBSTAR | wcglob.DOTGLOB | wcglob.FORCEUNIX
    return bool(wcglob.globmatch(path, glob, flags=flags))


def arg_matches(
    pattern: str, key: str, args: Mapping[str, Any], *, since: float | None = None
) -> bool:
    """Whether argument ``key`` of ``args`` matches ``pattern`` (see the module docstring).
    ``since``: when the pattern was made (a rule file written, an approval kept) — a link on
    a path pattern's literal folders that is younger is not followed (it does not match)."""
    if key not in args:
        return False
    value = args[key]
    if isinstance(args, JudgedArgs) and args.is_path(key):
        if pattern.startswith("re:"):
            return compile_pattern(pattern).search(value) is not None
        glob = pattern[5:] if pattern.startswith("glob:") else pattern
        return bool(glob) and path_matches(args.path_glob(glob, since), value)
    return matches(compile_pattern(pattern), value, anchored=not pattern.startswith("re:"))
