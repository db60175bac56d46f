"""Argument patterns shared by rule files and session grants: ``glob:…``, ``re:…`` or a bare glob.

A pattern matches the argument as the model wrote it, or with ``~`` expanded; a list (an argv)
is matched as its items joined by spaces. Globs use fnmatch, where ``*`` also crosses ``/``.
"""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Any


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
