"""What the inbox shows, kept current by a watch on its folders instead of a look at every park.

The page's version (``serve/app.py``) changes whenever anything it shows may have. Looking for
that meant listing and stating every park file per request (3.4 of 3.96 ms of a live update's
CPU with 1,000 parks), and it missed a park file rewritten in place with its time put back.
On Linux, :class:`Watch` asks the kernel instead (inotify, through ``inotify_simple``): every
change to a park file (written, renamed, removed, its mode or time touched), to the inbox's
outcomes and to the scheduler's database adds one to :attr:`Watch.changes`. The watch's
descriptor is read on the server's event loop (``loop.add_reader``, set up in the app's
lifespan: no thread beside it), and once more, without waiting, each time the version is
asked for — so a change made before a request is in the version that request gets. A live
update then costs one empty read, whatever the number of parks.

Where inotify cannot be had (another system, the watch limit reached) :func:`open_watch` says
None and the page falls back to the look at every file (``app/views/inbox.signature``).
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

from butler_cli.core.notices import notice

try:  # Linux only: elsewhere the inbox looks at its files instead
    from inotify_simple import INotify
    from inotify_simple import flags as fl
except (ImportError, OSError):  # pragma: no cover - not Linux
    INotify = None

#: Every change to an entry of a watched folder that can change what the page shows: a write
#: (not a close after opening to write: SQLite's readers open its files read-write), a mode or
#: time touched, a name moved, made or removed, the folder itself gone.
_CHANGES = (
    fl.MODIFY
    | fl.ATTRIB
    | fl.MOVED_FROM
    | fl.MOVED_TO
    | fl.CREATE
    | fl.DELETE
    | fl.DELETE_SELF
    | fl.MOVE_SELF
    | fl.DONT_FOLLOW
    | fl.ONLYDIR
    if INotify is not None
    else 0
)
_MADE_OR_GONE = (fl.CREATE | fl.DELETE) if INotify is not None else 0
#: The kernel lost events, or a watched folder went away: count it as a change.
_LOST = (fl.Q_OVERFLOW | fl.IGNORED | fl.DELETE_SELF | fl.MOVE_SELF) if INotify is not None else 0


class Watch:
    """Counts the changes in the parks folder and the home's files the page shows."""

    def __init__(self, notify: INotify, home: Path, home_names: frozenset[str]) -> None:
        self._notify = notify
        self._home = home
        self._parks = home / "parks"
        #: The names in the home itself whose change the page shows (outcomes, schedules).
        self._home_names = home_names | {"parks"}
        self._home_wd = notify.add_watch(home, _CHANGES)
        self._parks_wd: int | None = None
        self._watch_parks()
        #: Goes up by one for each batch of changes read: the page's version holds it.
        self.changes = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading = threading.Lock()

    def _watch_parks(self) -> None:
        """Watch ``parks/`` if it is there (it is made with the first park)."""
        try:
            self._parks_wd = self._notify.add_watch(self._parks, _CHANGES)
        except OSError:
            self._parks_wd = None

    def drain(self) -> int:
        """Read what the kernel has (never waiting) and return :attr:`changes`. One reader
        at a time (the page's render asks from a worker thread): a change one caller has read
        is counted before another caller's answer, never after it."""
        with self._reading:
            return self._drain()

    def _drain(self) -> int:
        try:
            events = self._notify.read(timeout=0)
        except OSError:  # the descriptor is gone: count it as a change, every time
            self.changes += 1
            return self.changes
        changed = False
        for event in events:
            if event.mask & _LOST:
                changed = True
                if event.wd == self._parks_wd:
                    self._parks_wd = None
                continue
            if event.wd == self._parks_wd:
                # a park file by its name: a temp file or a lock changes nothing shown
                changed |= event.name.endswith(".json") and not event.name.startswith(".")
            elif event.wd == self._home_wd and event.name in self._home_names:
                # a reader of the schedules makes and removes the database's WAL: not a change
                changed |= not (event.name.endswith("-wal") and event.mask & _MADE_OR_GONE)
                if event.name == "parks" and self._parks_wd is None:
                    self._watch_parks()
        if self._parks_wd is None and os.path.isdir(self._parks):
            self._watch_parks()
            changed = True
        if changed:
            self.changes += 1
        return self.changes

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Read the changes on ``loop`` as they come (the app's lifespan calls this)."""
        self._loop = loop
        loop.add_reader(self._notify.fileno(), self.drain)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self._notify.fileno())
            self._loop = None
        self._notify.close()


def open_watch(home: Path, home_names: frozenset[str]) -> Watch | None:
    """A watch on ``home`` (its parks and the files named), or None where inotify cannot be
    had — the page then looks at its files on each request, as before."""
    if INotify is None:
        return None
    try:
        return Watch(INotify(nonblocking=True), home, home_names)
    except OSError as exc:  # no inotify, or its limit of watches or instances reached
        notice(f"the inbox looks at every park on each update (no file watch: {exc})")
        return None
