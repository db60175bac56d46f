"""The butler's home and the few careful file operations everything under it uses.

Directories are 0700 and files 0600 whatever the umask. Writes are atomic: temp file, fsync,
rename, fsync of the directory, so a reader sees the old bytes or the new ones, never half. A
write that fails (a full disk, a permission) removes its temp file and raises StorageError:
one line for the person, the old file untouched. Reads open without blocking and refuse
anything but a regular file, so a FIFO, socket or device named like a state file is reported,
never waited on.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING

from butler_cli.core.errors import StorageError

if TYPE_CHECKING:  # not at run time: pathlib (with urllib.parse) is not needed for a prompt
    from pathlib import Path
    from typing import TypeVar

    #: A folder given as a string or a Path; the functions below return what they were given.
    Folder = TypeVar("Folder", str, Path)

HOME_ENV = "BUTLER_HOME"


def butler_home() -> Path:
    """``$BUTLER_HOME`` if set, else the platformdirs user data dir for ``butler``."""
    from pathlib import Path

    return Path(home_dir())


def home_dir() -> str:
    """``str(butler_home())``, made without pathlib (the chat's first prompt needs only this):
    ``$BUTLER_HOME`` with ``~`` expanded, made absolute against the current folder and spelt
    as ``Path`` spells it (``..`` kept), else the platformdirs user data dir."""
    override = os.environ.get(HOME_ENV)
    if override:
        path = os.path.expanduser(override)
        return spelt_as_path(path if os.path.isabs(path) else os.path.join(os.getcwd(), path))
    import platformdirs

    return spelt_as_path(platformdirs.user_data_dir("butler", appauthor=False))


def spelt_as_path(path: str) -> str:
    """``path`` as ``str(Path(path))`` spells it, without importing pathlib: no empty or ``.``
    parts, no trailing slash, a leading ``//`` kept only when there are exactly two. (Only on
    POSIX; elsewhere the path is left as it is.)"""
    if os.name != "posix":
        return path
    if path.startswith("/"):
        root = "//" if path.startswith("//") and not path.startswith("///") else "/"
    else:
        root = ""
    return root + "/".join(part for part in path.split("/") if part and part != ".") or "."


def ensure_private_dir(path: Folder) -> Folder:
    """Create ``path`` (and parents) if needed and make it 0700."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    if os.stat(path).st_mode & 0o777 != 0o700:
        os.chmod(path, 0o700)
    return path


def write_atomic(
    path: Path,
    data: bytes,
    before_rename: Callable[[], None] | None = None,
    *,
    durable: bool = True,
) -> None:
    """Replace ``path`` with ``data`` atomically, mode 0600; ``durable``: fsynced (the file,
    then its folder after the rename) before this returns. Not durable: the same write and
    rename, in the kernel's cache — exact for every later reader while the machine runs (a
    killed process loses nothing); only a power cut may lose it (see ``store/boot.py``)."""
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        _write_durably(
            os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600),
            data,
            sync=durable,
        )
    except OSError as exc:
        _discard(tmp)
        raise _unwritten(path, exc) from exc
    if before_rename is not None:
        before_rename()
    try:
        os.replace(tmp, path)
    except OSError as exc:
        _discard(tmp)
        raise _unwritten(path, exc) from exc
    if durable:
        fsync_dir(path.parent)


def _discard(tmp: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _unwritten(path: Path, exc: OSError) -> StorageError:
    return StorageError(
        f"cannot write {path}: {exc.strerror or exc}; nothing was changed (the file is as it was)"
    )


def _write_durably(fd: int, data: bytes, *, sync: bool = True) -> None:
    """Write all of ``data`` to the open ``fd``, fsync it (``sync``) and close it (closed on
    error too)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


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
    except OSError as exc:
        raise _unwritten(path, exc) from exc
    try:
        _write_durably(fd, data)
    except OSError as exc:
        _discard(path)  # ours alone (O_EXCL): a half-written new file must not stay
        raise _unwritten(path, exc) from exc
    fsync_dir(path.parent)
    return True


class NotRegularFile(OSError):
    """A state file's name holds a FIFO, socket, device or directory."""

    def __str__(self) -> str:
        return str(self.strerror)


def read_regular(path: str | Path, *, follow_symlinks: bool = False) -> bytes:
    """Read a regular file without ever blocking on what is in its place.

    Opens non-blocking (a FIFO opens at once instead of waiting for a writer), then checks the
    open file: anything but a regular file raises :class:`NotRegularFile` naming its kind; a
    symlink raises ``OSError`` (ELOOP) unless ``follow_symlinks``."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow_symlinks else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(0, f"not a regular file ({_kind(mode)}); skipped", str(path))
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a file"


def read_text_regular(path: str | Path) -> str:
    """A user-named text file (config, rules, script), symlinks followed, checked as above."""
    return read_regular(path, follow_symlinks=True).decode("utf-8")


def read_no_follow(path: Path) -> bytes:
    """Read a regular file, refusing a symlink (``OSError``) or a FIFO/device in its place."""
    return read_regular(path, follow_symlinks=False)


def append_line(path: Path, line: str, *, durable: bool = False, what: str = "") -> None:
    """Append one line (a single write, O_APPEND) to a 0600 regular file. A last line left
    torn by a crash or a full disk (no newline) is closed off first, so this line is never
    written onto it and lost with it; the torn one stays as it was. ``durable``: fsynced
    before this returns (and the folder, for a new file). ``what`` names the file in the
    error ("the decided-park ledger")."""
    ensure_private_dir(path.parent)
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    try:
        created = durable and not os.path.lexists(path)
        # read and write (O_RDWR): the last byte is read through the same descriptor, and a
        # FIFO put in the file's place opens at once instead of waiting for a reader
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise NotRegularFile(0, f"not a regular file ({_kind(st.st_mode)})", str(path))
            if st.st_size and os.pread(fd, 1, st.st_size - 1) != b"\n":
                data = b"\n" + data
            os.write(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(path.parent)
    except OSError as exc:
        where = f"{what} {path}" if what else str(path)
        raise StorageError(f"cannot append to {where}: {exc.strerror or exc}") from exc
