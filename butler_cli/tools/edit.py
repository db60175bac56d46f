"""``edit_file``: a search-and-replace change to one text file (Claude Code's Edit, Aider's
search/replace), governed exactly like ``write_file``.

The gate judges the resolved path as it judges a write (links, ``..``, hard links, the
butler's own files, the allowed roots). Before the call is judged, :func:`seal` records in its
arguments the SHA-256 of the file as it is then (``file_sha256``, whatever the model put
there), so a park keeps the exact edit and the exact file it applies to: the change shown is
that edit applied to that file, and a resume that finds the file changed since refuses instead
of applying the edit to a file nobody was shown. An ``old_string`` that is not in the file, or
is in it several times without ``replace_all``, is refused when judged: an error result the
model sees, never a park.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

from butler_cli.tools.paths import open_dir

#: The argument the gate records the judged file's digest in (never the model's value).
DIGEST_KEY = "file_sha256"
#: A file larger than this is not edited in place (write_file, or a command, can).
EDIT_CAP = 8 * 1024 * 1024

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file to change"},
        "old_string": {
            "type": "string",
            "description": "The exact text to replace, copied from the file (whitespace and "
            "indentation included); it must occur exactly once unless replace_all is true",
        },
        "new_string": {"type": "string", "description": "The text to put in its place"},
        "replace_all": {
            "type": "boolean",
            "description": "Replace every occurrence of old_string (default false)",
        },
    },
    "required": ["path", "old_string", "new_string"],
}
DESCRIPTION = (
    "Change part of an existing text file: replace old_string with new_string. Prefer this "
    "to write_file for a change to a file that exists — send only the part that changes. "
    "old_string must match the file exactly and occur once (add surrounding lines to make it "
    "unique), or set replace_all. Read the file first."
)


def digest(data: bytes) -> str:
    import hashlib  # only when a file is edited: a round that edits nothing hashes nothing

    return hashlib.sha256(data).hexdigest()


def edited(text: str, args: dict[str, Any]) -> tuple[str, int]:
    """``text`` with the edit applied, and how many places changed; ValueError says why the
    edit cannot be made (the model reads it and can try again)."""
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        raise ValueError("'old_string' and 'new_string' must be strings")
    every = args.get("replace_all", False)
    if not isinstance(every, bool):
        raise ValueError("'replace_all' must be true or false")
    if not old:
        raise ValueError("'old_string' is empty; to write a whole new file use write_file")
    if old == new:
        raise ValueError("'old_string' and 'new_string' are the same: nothing would change")
    count = text.count(old)
    if count == 0:
        raise ValueError(
            "'old_string' was not found in the file; read it and copy the exact text "
            "(whitespace and indentation included)"
        )
    if count > 1 and not every:
        raise ValueError(
            f"'old_string' occurs {count} times in the file; add the lines around it so it "
            "occurs once, or set replace_all to change every one"
        )
    places = count if every else 1
    # The size before the text is made: a model's one call must not build (or write) a file
    # no edit could be made to again — 20,000 places x 200,000 characters is 4 GB in memory.
    size = len(text) + places * (len(new) - len(old))
    if size > EDIT_CAP:
        raise ValueError(
            f"the edit would make the file {size} characters long, larger than {EDIT_CAP}; "
            "edit_file does not make it (write_file, or a command, can)"
        )
    return text.replace(old, new), places


def decoded(data: bytes, path: Path) -> str:
    """The file's text; a file that is not UTF-8 text is not edited."""
    if b"\x00" in data:
        raise ValueError(f"{path} is not a text file; edit_file changes text files only")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text; edit_file changes text files only") from None


def open_for_edit(path: Path, identities: frozenset[tuple[int, int]] | None = None) -> int:
    """A read-write descriptor on the regular file at the judged ``path``, reached without
    following a link (a folder or the file swapped for one after the checks fails) and without
    blocking on a FIFO. ``identities``: the gate's files — a hard link to one made after the
    check is refused by the file opened."""
    folder = open_dir(path.parent)
    try:
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        fd = os.open(path.name, flags, dir_fd=folder)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the last name became a link after the check
            raise PermissionError(f"{path} is now a symbolic link; nothing was changed") from exc
        raise
    finally:
        os.close(folder)
    info = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(info.st_mode):
        problem = f"{path} is not a regular file; edit_file changes text files only"
    elif info.st_size > EDIT_CAP:
        problem = f"{path} is larger than {EDIT_CAP} bytes; edit_file does not change it"
    elif identities and info.st_nlink > 1 and (info.st_dev, info.st_ino) in identities:
        problem = f"{path} is another name for one of the butler's own files; it is off limits"
    if problem:
        os.close(fd)
        raise PermissionError(problem)
    os.set_blocking(fd, True)
    return fd


def read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def current_digest(path: Path) -> str:
    """The digest of the file at the judged ``path`` now ("" when it cannot be read: the
    guard then refuses the call, saying why)."""
    try:
        fd = open_for_edit(path)
    except (OSError, ValueError):
        return ""
    try:
        return digest(read_all(fd))
    finally:
        os.close(fd)


def seal(args: dict[str, Any], judged: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments as they are recorded, judged and run: the model's, with the
    digest of the file they name as it is now in :data:`DIGEST_KEY` (the model's own value
    there is replaced)."""
    path = judged.get("path")
    found = current_digest(Path(path)) if isinstance(path, str) else ""
    return {**args, DIGEST_KEY: found}


def check(path: Path, args: dict[str, Any]) -> str | None:
    """Why this edit cannot be made to the file at ``path`` as it is now (None when it can):
    the file changed since the edit was recorded, or the edit does not apply."""
    try:
        fd = open_for_edit(path)
    except FileNotFoundError:
        return f"{path} does not exist; edit_file changes a file that exists (use write_file)"
    except (OSError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    try:
        data = read_all(fd)
    finally:
        os.close(fd)
    if digest(data) != args.get(DIGEST_KEY):
        return f"{path} changed since this edit was asked for; nothing was changed"
    try:
        edited(decoded(data, path), args)
    except ValueError as exc:
        return f"{exc} ({path})"
    return None


def apply(path: Path, args: dict[str, Any], identities: frozenset[tuple[int, int]]) -> str:
    """Make the edit on the file at the judged ``path``, only if it is still the file the
    edit was recorded against (its digest): read, checked and rewritten through one
    descriptor, so the file changed is the file checked."""
    fd = open_for_edit(path, identities)
    try:
        data = read_all(fd)
        if digest(data) != args.get(DIGEST_KEY):
            raise PermissionError(
                f"{path} changed since this edit was asked for; nothing was changed"
            )
        text, count = edited(decoded(data, path), args)
        out = text.encode("utf-8")
        # The room first, then the text over the old, then the end cut: truncating first and
        # writing after left the file cut short, its old text lost, when the disk was full.
        if len(out) > len(data):
            os.posix_fallocate(fd, 0, len(out))  # no room: nothing changed yet
        os.lseek(fd, 0, os.SEEK_SET)
        view = memoryview(out)
        while view:
            view = view[os.write(fd, view) :]
        os.ftruncate(fd, len(out))
    finally:
        os.close(fd)
    return f"edited {path}: replaced {count} occurrence(s); the file is now {len(out)} bytes"
