"""Path checks shared by the file tools: resolve against the task's directory, keep out of home.

The agent must never reach its own gate (spec X6): parks, the key, the audit log and the
policy all live under ``BUTLER_HOME``, so file tools refuse any path that resolves inside it,
symlinks and ``..`` followed first.
"""

from __future__ import annotations

import os
from pathlib import Path


def resolve(base: Path, raw: object) -> Path:
    """The real absolute path ``raw`` names, relative paths taken from ``base``."""
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("'path' must be a non-empty string")
    if "\x00" in raw:
        raise ValueError("'path' contains a NUL byte")
    return Path(os.path.realpath(base / Path(raw).expanduser()))


def is_inside(path: Path, root: Path) -> bool:
    """True when ``path`` is ``root`` or below it (both compared case-normalised, resolved)."""
    real_root = os.path.normcase(os.path.realpath(root))
    candidate = os.path.normcase(str(path))
    try:
        return os.path.commonpath([candidate, real_root]) == real_root
    except ValueError:
        return False


def default_roots(base: Path) -> list[Path]:
    """Where file tools may reach when the config names no allowed_roots: the task's folder
    and the person's home folder."""
    return [base, Path.home()]


def roots_from(base: Path, configured: list[str] | None) -> list[Path]:
    if configured is None:
        return default_roots(base)
    return [Path(os.path.realpath(base / Path(r).expanduser())) for r in configured]


def root_refusal(path: Path, roots: list[Path]) -> str | None:
    """The refusal reason when ``path`` is under none of ``roots``, else None."""
    if any(is_inside(path, root) for root in roots):
        return None
    shown = ", ".join(str(r) for r in roots)
    return (
        f"{path} is outside the allowed folders ({shown}); "
        "change them with `butler config set allowed_roots DIR,DIR`"
    )


def home_refusal(path: Path, home: Path) -> str | None:
    """The refusal reason when ``path`` is inside the butler's home, else None."""
    if is_inside(path, home):
        return f"{path} is inside the butler's own home ({home}); its files are off limits"
    return None
