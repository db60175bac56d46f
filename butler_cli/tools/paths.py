"""Path checks shared by the file tools: resolve against the task's directory, keep out of home.

The agent must never reach its own gate (spec X6): parks, the key, the audit log and memory
live under ``BUTLER_HOME``, the config file and the policy files wherever they are; file tools
refuse any path that resolves inside one of them (and, for a change, any folder holding one),
symlinks and ``..`` followed first. :class:`PathRules` is the resolver the gate is given, so
rules, grants and the allowed roots all judge the same resolved path.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from butler_cli.core.notices import notice
from butler_cli.core.patterns import normalize_glob


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


def write_roots_from(base: Path, configured: list[str] | None) -> list[Path]:
    """Where a sandboxed program may write (issue 31): the task's folder, and the roots the
    person named in ``allowed_roots`` — never the home unless named (or the task's folder)."""
    return [base, *(roots_from(base, configured) if configured is not None else [])]


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


class PathRules:
    """Where path arguments may reach, and what they name: the resolver the gate is given.

    ``off_limits`` is the butler's home plus every protected path (config file, policy files):
    nothing inside one is read, listed, written, moved or deleted, and no folder holding one is
    moved or deleted. Everything else must be under one of ``roots``.
    """

    def __init__(
        self, base: Path, home: Path, protected: Sequence[Path], roots: Sequence[Path]
    ) -> None:
        self.base = base
        self.real_base = os.path.realpath(base)
        self.home = Path(os.path.realpath(home))
        self.protected = [Path(os.path.realpath(p)) for p in protected]
        self.roots = [Path(os.path.realpath(r)) for r in roots]
        self._identities: frozenset[tuple[int, int]] | None = None

    def identities(self) -> frozenset[tuple[int, int]]:
        """(device, inode) of every gate file a hard link could name: the protected files and
        the files directly in the home and its ``parks`` folder (park key, databases, audit
        log, parks) — read once, when a file with more than one link is first met."""
        if self._identities is None:
            found: set[tuple[int, int]] = set()
            candidates = [p for p in self.protected if not p.is_dir()]
            for folder in (self.home, *[p for p in self.protected if p.is_dir()]):
                for sub in (folder, folder / "parks"):
                    try:
                        candidates += [Path(e.path) for e in os.scandir(sub)]
                    except OSError:
                        continue
            for path in candidates:
                try:
                    st = os.stat(path, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    found.add((st.st_dev, st.st_ino))
            self._identities = frozenset(found)
        return self._identities

    def same_file_refusal(self, path: Path) -> str | None:
        """The refusal reason when ``path`` is another name (a hard link) for one of the
        gate's files: protection by identity, not only by path (issue 20)."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        if st.st_nlink < 2 or not stat.S_ISREG(st.st_mode):
            return None  # one name only: the path checks already judged it
        if (st.st_dev, st.st_ino) in self.identities():
            return (
                f"{path} is another name (a hard link) for one of the butler's own files; "
                "it is off limits"
            )
        return None

    def off_limits(self, path: Path) -> bool:
        """Whether ``path`` (resolved) is the home, a protected path, or inside one."""
        return any(_within(path, p) for p in (self.home, *self.protected))

    def check(self, path: Path, *, changing: bool) -> None:
        """PermissionError when the resolved ``path`` may not be used (``changing``: by a
        write, delete or move, which also may not take a folder holding the butler's files)."""
        problem = home_refusal(path, self.home) if _within(path, self.home) else None
        for guarded in self.protected:
            if problem is None and _within(path, guarded):
                problem = f"{path} is one of the butler's own files ({guarded}); it is off limits"
        if changing:
            for guarded in (self.home, *self.protected):
                if problem is None and _within(guarded, path):
                    problem = (
                        f"{path} holds the butler's own files ({guarded}); "
                        "it cannot be changed, moved or deleted"
                    )
        if problem is None and not any(_within(path, root) for root in self.roots):
            problem = root_refusal(path, self.roots)
        if problem is None:
            problem = self.same_file_refusal(path)
        if problem:
            raise PermissionError(problem)

    def readable(self, raw: object) -> Path:
        """The resolved path a benign tool may read or list (symlinks followed, then checked)."""
        path = resolve(self.base, raw)
        self.check(path, changing=False)
        return path

    # -- the gate's resolver (core.gate.PathJudge) ------------------------------------------
    def resolve(self, tool: str, key: str, raw: object) -> str:
        """The resolved absolute path a governed tool's ``raw`` argument names. A symlink in
        the last component is refused: the change would land on a file the person never saw."""
        if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
            resolve(self.base, raw)  # raises the ValueError that says what is wrong
            raise ValueError(f"'{key}' must be a path")
        full = self.base / Path(raw).expanduser()
        folder = os.path.realpath(full.parent)
        candidate = os.path.join(folder, full.name)
        # The folder is resolved and the last name is not a link: together they are the file.
        path = Path(candidate if full.name not in ("", "..") else os.path.realpath(candidate))
        if os.path.islink(candidate):
            path = Path(os.path.realpath(candidate))
            raise PermissionError(
                f"'{key}' {raw!r} is a symbolic link (to {path}); the butler never writes, "
                "deletes or moves through a link — name the file itself"
            )
        self.check(path, changing=True)
        return str(path)

    def glob(self, pattern: str, since: float | None = None) -> str:
        """The absolute glob ``pattern`` names (its literal folders resolved; with ``since``,
        through no link younger than that: :func:`bound_realpath`)."""
        if since is None:
            return normalize_glob(pattern, self.real_base, os.path.realpath)
        return normalize_glob(pattern, self.real_base, lambda p: bound_realpath(p, since))


def _within(path: Path, real_root: Path) -> bool:
    """``is_inside`` for a root already resolved (no filesystem access)."""
    root, candidate = os.path.normcase(str(real_root)), os.path.normcase(str(path))
    return candidate == root or candidate.startswith(root.rstrip(os.sep) + os.sep)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_dir(path: Path, *, create: bool = False) -> int:
    """A descriptor on the folder at the resolved ``path``, walked one component at a time
    without following any symlink (created as needed when ``create``): if a folder on the way
    was swapped for a link after the checks, this fails instead of acting elsewhere."""
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in path.parts[1:]:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise PermissionError(
                f"{path} changed since it was checked (a folder on the way is now a link or "
                "a file); nothing was done"
            ) from exc
        raise
    return fd


def read_regular(rules: PathRules, raw: object, limit: int) -> tuple[bytes, int]:
    """At most ``limit`` bytes of the regular file ``raw`` names and its size, read as
    ``read_file`` reads: resolved and checked by ``rules`` (off limits, outside the roots, a
    hard link to a gate file), then opened from its folder without following a link and
    without blocking (a FIFO, socket or device is refused), and judged again by the file
    opened (linked to a gate file after the check)."""
    path = rules.readable(raw)
    if not path.name:
        raise IsADirectoryError(f"{path} is a directory")
    folder = open_dir(path.parent)
    try:  # non-blocking: opening a FIFO must not hang the butler
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        fd = os.open(path.name, flags, dir_fd=folder)
    finally:
        os.close(folder)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(f"{path} is a directory; use list_dir")
        raise ValueError(f"{path} is not a regular file (a FIFO, socket or device)")
    if info.st_nlink > 1 and (info.st_dev, info.st_ino) in rules.identities():
        os.close(fd)  # linked to a gate file after the check: the file opened decides
        raise PermissionError(f"{path} is another name for one of the butler's own files")
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(limit), info.st_size


_told: set[str] = set()


def bound_realpath(path: str, since: float) -> str:
    """``os.path.realpath(path)``, except that a link on the way made after ``since`` (its
    change time, which no one but root can set back) is not followed: from it on the path is
    taken as written. A rule written, or an approval kept, for ``~/notes`` names that folder,
    never ``~/.ssh`` put there later by ``rm -rf ~/notes && ln -s ~/.ssh ~/notes``. Said once
    per link, in one line (`butler policy check` shows it beside the verdict)."""
    done = "/"
    parts = [p for p in os.path.normpath(path).split("/") if p]
    for n, part in enumerate(parts):
        here = os.path.join(done, part)
        try:
            st = os.lstat(here)
        except OSError:
            return os.path.join(here, *parts[n + 1 :])  # not there: nothing more to resolve
        if stat.S_ISLNK(st.st_mode) and st.st_ctime > since:
            if here not in _told:
                _told.add(here)
                notice(
                    f"{here} became a link (to {os.path.realpath(here)}) after the rule or "
                    "kept approval naming it was made: not followed, so that rule does not "
                    "match through it"
                )
            return os.path.join(here, *parts[n + 1 :])
        done = os.path.realpath(here) if stat.S_ISLNK(st.st_mode) else here
    return done
