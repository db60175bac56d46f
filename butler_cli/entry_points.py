"""The installed packages' entry points, read once per process and kept between processes.

The tool plug-ins (``butler.tools``), the policies (``butler.policies``) and the plug-ins'
config sections (``butler.settings``) are all found there, and each read opens the metadata of
every installed package: one read serves them all.
``importlib.metadata`` (with the ``email``, ``zipfile`` and ``csv`` modules it imports) is
about a tenth of a run's start, so what one scan found is kept in the butler's home
(:data:`CACHE_FILE`), keyed by a fingerprint of everything the scan reads: the interpreter,
``sys.path``, and for each of its folders the folder itself (an entry added or removed changes
its times), each ``*.dist-info`` / ``*.egg-info`` folder in it and its ``entry_points.txt``
(device, inode, size, modification and change times). The files always win: a cache that is
stale, corrupt, unreadable or made for another interpreter is ignored, and the scan is made
and kept again. Where the fingerprint cannot cover what the scan reads (a zip or an egg on the
path, a distribution finder other than the standard one) nothing is kept. The cache is written
only into a home that exists: a read-only command on a fresh home still creates nothing.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import json
import os
import re
import stat
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butler_cli.store.files import home_dir

if TYPE_CHECKING:
    from importlib.metadata import Distribution

CACHE_FILE = "entry-points.json"
#: Bumped when what the cache holds changes: a cache of another format is rebuilt.
FORMAT = 2
#: The groups a scan keeps (the only ones the butler reads).
GROUPS = ("butler.policies", "butler.tools", "butler.settings")
#: ``importlib.metadata.EntryPoint.pattern``: how an entry point's value is read.
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


class FoundEntryPoint:
    """One entry point as a scan found it: what :class:`importlib.metadata.EntryPoint` gives
    the loaders (``name``, ``value``, ``module``, ``load()``, ``dist``), loaded the same way.
    ``package`` is its distribution's normalized name, read from its folder's name;
    ``dist`` (name and version, for messages) parses the package's metadata when asked."""

    __slots__ = ("group", "name", "value", "package", "_path", "_dist")

    def __init__(
        self,
        group: str,
        name: str,
        value: str,
        package: str | None,
        path: str | None,
        dist: Distribution | None = None,
    ) -> None:
        self.group = group
        self.name = name
        self.value = value
        self.package = package
        self._path = path
        self._dist = dist

    @property
    def module(self) -> str:
        match = _VALUE.match(self.value)
        return match.group("module") if match is not None else self.value

    @property
    def dist(self) -> Distribution | None:
        if self._dist is None and self._path is not None:
            from importlib.metadata import PathDistribution

            self._dist = PathDistribution(Path(self._path))
        return self._dist

    def load(self) -> Any:
        """What ``EntryPoint.load`` returns — the module, or the attribute its value names —
        by the same steps, without importing importlib.metadata (a value it cannot read is
        handed to it, to fail as it fails)."""
        match = _VALUE.match(self.value)
        if match is None:
            from importlib.metadata import EntryPoint

            return EntryPoint(self.name, self.value, self.group).load()
        found = importlib.import_module(match.group("module"))
        for attr in filter(None, (match.group("attr") or "").split(".")):
            found = getattr(found, attr)
        return found

    def __repr__(self) -> str:
        return f"FoundEntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"


@cache
def _every() -> list[FoundEntryPoint]:
    key = _fingerprint()
    path = _cache_path()
    if key is not None and path is not None:
        kept = _read(path, key)
        if kept is not None:
            return kept
    found, cacheable = _scan()
    if key is not None and path is not None and cacheable:
        _write(path, key, found)
    return found


def in_group(group: str) -> list[FoundEntryPoint]:
    """The entry points of ``group``, in the order importlib finds them."""
    return [ep for ep in _every() if ep.group == group]


def _scan() -> tuple[list[FoundEntryPoint], bool]:
    """Every entry point of :data:`GROUPS`, from importlib; and whether each came from a
    distribution folder the fingerprint covers."""
    from importlib.metadata import entry_points

    every = entry_points()
    found: list[FoundEntryPoint] = []
    cacheable = True
    for group in GROUPS:
        # Python 3.11 gives its (deprecated) groups mapping for no arguments, 3.12
        # EntryPoints: both select by group alike, as entry_points(group=...) does.
        for ep in every.select(group=group):
            dist = ep.dist
            path = getattr(dist, "_path", None)
            package = getattr(dist, "_normalized_name", None) if dist is not None else None
            if dist is not None and (path is None or package is None):
                cacheable = False
            found.append(
                FoundEntryPoint(
                    group, ep.name, ep.value, package, str(path) if path else None, dist
                )
            )
    return found, cacheable


def _cache_path() -> str | None:
    try:
        return os.path.join(home_dir(), CACHE_FILE)
    except (OSError, ValueError):
        return None


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode]


def _fingerprint() -> str | None:
    """What the scan reads, as one string; None when it reads more than this covers."""
    for finder in sys.meta_path:
        if (
            getattr(finder, "find_distributions", None) is not None
            and finder is not importlib.machinery.PathFinder
        ):
            return None
    parts: list[Any] = [FORMAT, sys.version, sys.executable]
    for entry in sys.path:
        root = entry or "."
        if os.path.basename(root).lower().endswith(".egg"):
            return None
        seen = _stat(root)
        parts.append([entry, seen])
        if seen is None:
            continue
        if not os.path.isdir(root):
            return None  # a zip on the path: its contents are not stat-able
        try:
            children = sorted(os.listdir(root))
        except OSError:
            return None
        for child in children:
            if child.lower().endswith((".dist-info", ".egg-info")):
                folder = os.path.join(root, child)
                points = os.path.join(folder, "entry_points.txt")
                parts.append([child, _stat(folder), _stat(points)])
    return json.dumps(parts, separators=(",", ":"))


def _read(path: str, key: str) -> list[FoundEntryPoint] | None:
    """The kept scan when it is this fingerprint's and well formed, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            with os.fdopen(fd, "rb", closefd=False) as handle:
                data = json.loads(handle.read())
        finally:
            os.close(fd)
        if data.get("format") != FORMAT or data.get("key") != key:
            return None
        found = []
        for group, name, value, package, where in data["entries"]:
            fields = (group, name, value)
            if not all(isinstance(f, str) for f in fields) or group not in GROUPS:
                return None
            if not all(f is None or isinstance(f, str) for f in (package, where)):
                return None
            found.append(FoundEntryPoint(group, name, value, package, where))
        return found
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _write(path: str, key: str, found: list[FoundEntryPoint]) -> None:
    """Keep the scan, best effort, only in a home that exists (never creating it)."""
    if not os.path.isdir(os.path.dirname(path)):
        return
    entries = [[ep.group, ep.name, ep.value, ep.package, ep._path] for ep in found]
    data = json.dumps({"format": FORMAT, "key": key, "entries": entries}).encode("utf-8")
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with open(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
