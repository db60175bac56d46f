"""The butler's home and the few careful file operations everything under it uses.

Directories are 0700 and files 0600 whatever the umask. Writes are atomic: temp file, fsync,
rename, fsync of the directory, so a reader sees the old bytes or the new ones, never half.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

HOME_ENV = "BUTLER_HOME"


def butler_home() -> Path:
    """``$BUTLER_HOME`` if set, else the platformdirs user data dir for ``butler``."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser().absolute()
    import platformdirs

    return Path(platformdirs.user_data_dir("butler", appauthor=False))


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if needed and make it 0700."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_mode & 0o777 != 0o700:
        path.chmod(0o700)
    return path


def write_atomic(path: Path, data: bytes, before_rename: Callable[[], None] | None = None) -> None:
    """Replace ``path`` with ``data`` atomically and durably, mode 0600."""
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    if before_rename is not None:
        before_rename()
    os.replace(tmp, path)
    fsync_dir(path.parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def create_exclusive(path: Path, data: bytes) -> bool:
    """Write a new file 0600 only if none exists; False when another process got there first."""
    ensure_private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return False
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)
    return True


def read_no_follow(path: Path) -> bytes:
    """Read a file, refusing a symlink in its place (``OSError``)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def append_line(path: Path, line: str) -> None:
    """Append one line (a single write, O_APPEND) to a 0600 file."""
    ensure_private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, (line.rstrip("\n") + "\n").encode("utf-8"))
    finally:
        os.close(fd)
