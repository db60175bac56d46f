"""Kept approvals: ``approvals.toml`` in the butler's home, a file the person owns.

Each ``[[approval]]`` lets one tool run without asking in one folder: with exactly the
arguments the person saw (``arguments``, and the files they resolved to then, ``files``), or
with arguments matching the patterns the policy offered and the person was shown
(``patterns``). Numbered by their place in the file, as `butler grants list` shows them.
Written through tomlkit (a person's comments and edits survive), atomically, under a lock;
a malformed file is reported naming it and left exactly as it is. The home is one of the
gate's own files: no tool and no sandboxed program can read or change it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butler_cli.core.errors import UsageError
from butler_cli.core.patterns import compile_pattern
from butler_cli.store.files import ensure_private_dir, read_text_regular, write_atomic

if TYPE_CHECKING:  # loaded when there is a file to read (LAZY: a round without one loads none)
    from butler_cli.core.grants import KeptApproval

FILE = "approvals.toml"
HEADER = """\
# Approvals you kept ("always allow this here"). Each lets one tool run without asking, in
# one folder only. `butler grants list` shows them, `butler grants revoke N` takes one back;
# you may also edit or delete an entry here.
"""
_KEYS = {"tool", "folder", "arguments", "files", "patterns", "granted_at", "sandboxed"}


def approvals_path(home: Path) -> Path:
    return home / FILE


def load_kept(home: Path) -> list[KeptApproval]:
    """Every kept approval, in the file's order; none when there is no file. A malformed or
    unreadable file is a usage error naming it (it is left as it is)."""
    path = approvals_path(home)
    try:
        text = read_text_regular(path)
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"kept approvals {path} cannot be read: {exc} (left as it is)") from exc
    import tomllib

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _bad(path, f"malformed: {exc}") from exc
    if set(raw) - {"approval"} or not isinstance(raw.get("approval", []), list):
        raise _bad(path, "it holds only [[approval]] tables")
    return [_entry(path, n, item) for n, item in enumerate(raw.get("approval", []), start=1)]


def _entry(path: Path, number: int, item: Any) -> KeptApproval:
    from butler_cli.core.grants import Grant, KeptApproval

    where = f"approval {number}"
    if not isinstance(item, dict) or set(item) - _KEYS:
        raise _bad(path, f"{where} takes {', '.join(sorted(_KEYS))}")
    tool, folder = item.get("tool"), item.get("folder")
    if not (isinstance(tool, str) and tool and isinstance(folder, str) and os.path.isabs(folder)):
        raise _bad(path, f"{where} needs a tool and an absolute folder")
    exact, patterns = item.get("arguments"), item.get("patterns")
    if (exact is None) == (patterns is None):
        raise _bad(path, f"{where} needs either arguments (exact) or patterns, not both")
    files = item.get("files")
    if exact is not None:
        if not isinstance(exact, str) or not isinstance(files, str):
            # files: what the arguments resolved to when kept — without it, the same text
            # could name other files later (a folder swapped for a symlink)
            raise _bad(path, f"{where}: arguments and files are JSON text, both needed")
        try:
            if not isinstance(json.loads(exact), dict):
                raise ValueError("not an object")
        except ValueError as exc:
            raise _bad(path, f"{where}: arguments must be a JSON object") from exc
        grant = Grant(tool, exact=exact, judged=files)
    else:
        if not (
            isinstance(patterns, dict)
            and patterns
            and all(isinstance(v, str) for v in patterns.values())
        ):
            raise _bad(path, f"{where}: patterns is a table of argument = pattern")
        for key, pattern in patterns.items():
            try:
                compile_pattern(pattern)
            except ValueError as exc:
                raise _bad(path, f"{where}: patterns.{key}: {exc}") from exc
        grant = Grant(
            tool, patterns=tuple(sorted(patterns.items())), since=_stamp(item.get("granted_at"))
        )
    granted, sandboxed = item.get("granted_at", ""), item.get("sandboxed", False)
    if not isinstance(sandboxed, bool):
        raise _bad(path, f"{where}: sandboxed is true or false")
    return KeptApproval(
        number, grant, folder, granted if isinstance(granted, str) else "", sandboxed
    )


def _stamp(granted_at: Any) -> float | None:
    """``granted_at`` as seconds since the epoch (None when absent or not a time): the
    patterns bind the folders as they were then."""
    try:
        return datetime.fromisoformat(granted_at).timestamp()
    except (TypeError, ValueError):
        return None


def keep(home: Path, kept: KeptApproval) -> tuple[int, bool]:
    """Add one approval at the end of the file: its number, and True. One the file already
    holds (the same tool, folder and scope): its number, and False — never a duplicate."""
    import tomlkit

    with _locked(home):
        for held in load_kept(home):  # the same one kept twice (two tabs, a second click)
            same = (held.folder, held.sandboxed) == (kept.folder, kept.sandboxed)
            if same and held.grant.same_scope(kept.grant):
                return held.number, False
        doc = _document(home)
        table = tomlkit.table()
        table["tool"] = kept.grant.tool
        table["folder"] = kept.folder
        if kept.grant.exact is not None:
            table["arguments"] = kept.grant.exact
            if kept.grant.judged is not None:
                table["files"] = kept.grant.judged
        else:
            table["patterns"] = dict(kept.grant.patterns)
        table["granted_at"] = kept.granted_at
        if kept.sandboxed:
            table["sandboxed"] = True  # it answers only while a sandbox is active
        doc.setdefault("approval", tomlkit.aot()).append(table)
        _write(home, doc)
        return len(doc["approval"]), True


def revoke(home: Path, number: int) -> KeptApproval:
    """Remove approval ``number``; what it was. Unknown numbers are a usage error."""
    with _locked(home):
        kept = load_kept(home)
        if not 1 <= number <= len(kept):
            raise UsageError(f"no kept approval {number} (`butler grants list` shows them)")
        doc = _document(home)
        del doc["approval"][number - 1]
        if len(doc["approval"]) == 0:
            del doc["approval"]
        _write(home, doc)
        return kept[number - 1]


def _document(home: Path) -> Any:
    import tomlkit

    load_kept(home)  # a malformed file is refused here, never rewritten
    try:
        return tomlkit.parse(read_text_regular(approvals_path(home)))
    except FileNotFoundError:
        return tomlkit.parse(HEADER)


def _write(home: Path, doc: Any) -> None:
    import tomlkit

    ensure_private_dir(home)
    write_atomic(approvals_path(home), tomlkit.dumps(doc).encode("utf-8"))


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    """One writer at a time (two chats keeping approvals at once lose neither)."""
    ensure_private_dir(home)
    fd = os.open(home / "approvals.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _bad(path: Path, what: str) -> UsageError:
    return UsageError(f"kept approvals {path}: {what} (it was left as it is)")
