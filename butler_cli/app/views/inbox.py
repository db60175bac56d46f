"""What the inbox shows, read from the home: parks waiting (each as its one view,
``app.parks.PendingApproval``: every call, every argument masked, every preview), what became
of the decisions made in it (``store.outcomes``), and one park's audit trail and ledger
events. Reading only, but for :func:`record_outcome`, which keeps a decision's end.

A waiting park's view is masked here; the page neutralises every value with the terminal's
neutraliser (``ui.text.visible``) and HTML-escapes it on top (``serve.pages``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from butler_cli.app.parks.parks import PendingApproval, pending_approval
from butler_cli.app.parks.preview import preview_paths
from butler_cli.app.run.masking import masked
from butler_cli.core.errors import ButlerError, ParkError, ParkNotFound
from butler_cli.core.park import ParkState
from butler_cli.store.audit import AUDIT_FILE
from butler_cli.store.ledger import DecisionLedger
from butler_cli.store.outcomes import OUTCOMES_FILE as OUTCOMES_FILE
from butler_cli.store.outcomes import KeptOutcome, OutcomeLog
from butler_cli.store.parks import ID_ALPHABET, ID_LENGTH, ParkStore

_ALPHABET = set(ID_ALPHABET)


@dataclass(frozen=True)
class Problem:
    path: str
    problem: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """One line of "Recent outcomes": a decision made in the inbox, or a scheduled run (the
    surface that keeps schedules makes these from its runs)."""

    key: str
    source: str
    task: str
    started_at: str
    finished_at: str | None
    status: str
    park_id: str | None
    text: str
    error: str | None
    hook: str | None = None

    @property
    def moment(self) -> datetime:
        """When it ended (or began, while it runs), for ordering; unreadable: long ago."""
        try:
            return datetime.fromisoformat(self.finished_at or self.started_at)
        except ValueError:
            return datetime.min.replace(tzinfo=UTC)


def _active_ids(store: ParkStore) -> list[str]:
    folder = store.dir
    if not folder.is_dir():
        return []
    with os.scandir(folder) as it:
        names = [e.name[:-5] for e in it if e.name.endswith(".json")]
    return sorted(n for n in names if len(n) == ID_LENGTH and set(n) <= _ALPHABET)


@dataclass(frozen=True, slots=True)
class _Park:
    """A pending park as read once: the verified park and the files its previews read."""

    state: ParkState
    files: tuple[str, ...]


#: A park file read once is not read again while its inode, size and time stay the same (a
#: park file is replaced whole, by a rename, on every change): the page refreshes cheaply.
_seen: dict[tuple[str, int, int, int, int], _Park | None] = {}

#: The last render's views, by park file and the stamps of the files its previews read: a view
#: is built again only when its park or one of those files changed.
_views: dict[tuple[tuple[str, int, int, int, int], tuple[str, ...]], PendingApproval] = {}

#: The files the last render's previews read, per home, each with its stamp taken just before
#: it was read: part of the page's version, so a rendered page is rendered again once a file a
#: preview shows changes (:func:`signature`, :func:`as_read`).
_watched: dict[str, dict[str, str]] = {}


def waiting(home: Path) -> tuple[list[PendingApproval], list[Problem]]:
    """Pending parks as their one view (``app.parks``), newest first, each preview as of the
    files now; and the park files that could not be read (named)."""
    global _views
    store = ParkStore(home)
    rows: list[PendingApproval] = []
    problems: list[Problem] = []
    read: dict[str, str] = {}
    views = {}
    for pid in _active_ids(store):
        path = store.active_path(pid)
        try:
            st = path.lstat()
        except OSError:
            continue  # decided and moved away meanwhile
        # the change time too: a file rewritten in place with its time put back has a new one
        key = (str(path), st.st_ino, st.st_mtime_ns, st.st_size, st.st_ctime_ns)
        if key in _seen:
            park = _seen[key]
        else:
            try:
                park = _read(store, pid)
            except (ParkError, ParkNotFound) as exc:
                problems.append(Problem(str(path), exc.message))
                continue
            if len(_seen) > 20_000:
                _seen.clear()
            _seen[key] = park
        if park is not None:
            stamps = tuple(_stamp(f) for f in park.files)  # before the preview reads them
            read.update(zip(park.files, stamps, strict=True))
            view = _views.get((key, stamps)) or pending_approval(park.state)
            views[(key, stamps)] = view
            rows.append(view)
    _views = views
    rows.sort(key=lambda w: (w.created_at, w.id), reverse=True)
    _watched[str(home)] = read
    return rows, problems


def _read(store: ParkStore, pid: str) -> _Park | None:
    """The park, read and verified, and the files its previews read; None unless pending.
    The page shows no conversation: the park is checked whole by its MAC and validated
    without its messages (the inbox never validated them; the cost was a third of a read)."""
    raw = store.read_raw(pid)
    if raw.get("status") != "pending":
        return None
    state = store.state_of(pid, {**raw, "messages": []})
    files = [
        f
        for asked in state.approvals
        for f in preview_paths(asked.tool, state.arguments_of(asked.call_id), state.context.cwd)
    ]
    return _Park(state, tuple(dict.fromkeys(files)))


def _stamp(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path}:-"
    return f"{path}:{st.st_ino}:{st.st_mtime_ns}:{st.st_size}"


def _files_part(stamps: Iterable[str]) -> str:
    return str(hash("|".join(sorted(stamps))) & 0xFFFFFFFFFFFF)


def as_read(home: Path, version: str) -> str:
    """The version a page rendered at ``version`` is exact for: its files part as the last
    :func:`waiting` read them. Until a render has named the files its previews read, the
    version cannot cover them; keyed under this too, the page is not rendered twice."""
    head, dot, running = version.partition(".")
    read = _watched.get(str(home), {})
    return f"{head.split('-')[0]}-{_files_part(read.values())}{dot}{running}"


def signature(home: Path, also: Sequence[str] = ()) -> str:
    """Changes whenever anything the page shows may have changed: cheap (names and times).
    Two parts, ``PARKS-FILES``: the parks, the outcomes and the files named in ``also`` (under
    the home), then the files the previews read."""
    parts: list[str] = [f"outcomes:{OutcomeLog(home).stamp()}"]
    folder = home / "parks"
    if folder.is_dir():
        with os.scandir(folder) as it:
            parts.extend(_park_stamp(e) for e in it if e.name.endswith(".json"))
    for name in also:
        try:
            st = (home / name).stat()
            parts.append(f"{name}:{st.st_mtime_ns}:{st.st_size}")
        except OSError:
            pass
    return f"{hash('|'.join(sorted(parts))) & 0xFFFFFFFFFFFF}-{previews_part(home)}"


def previews_part(home: Path) -> str:
    """The second part of the version: the files the last render's previews read, stamped
    now (one stat per distinct file, however many parks name it)."""
    return _files_part(_stamp(f) for f in _watched.get(str(home), {}))


def _park_stamp(entry: os.DirEntry[str]) -> str:
    """A park file's name and times (its change time too: a file rewritten in place with its
    time put back has a new one); one decided and removed since the folder was listed is
    stamped as gone (it was a 500 for the page that asked at that moment)."""
    try:
        st = entry.stat()
        return f"{entry.name}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    except FileNotFoundError:
        return f"{entry.name}:gone"


def inbox_outcomes(home: Path, limit: int = 20) -> tuple[list[Outcome], str | None]:
    """What became of the last ``limit`` decisions made in the inbox, newest first, and the
    one line that says what is wrong with their store, if anything (the store is left as it
    is; the page shows what it can)."""
    log = OutcomeLog(home)
    try:
        kept, bad = log.recent(limit)
    except ButlerError as exc:
        return [], exc.message
    rows = [
        Outcome(
            key=f"inbox-{k.park}-{k.finished_at}",
            source="inbox",
            task=k.task,
            started_at=k.started_at,
            finished_at=k.finished_at,
            status=k.status,
            park_id=k.next_park or k.park,
            text=k.text,
            error=k.error,
        )
        for k in kept
    ]
    return rows, log.problem(bad)


def now_stamp() -> str:
    """The time an outcome is kept with: UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def record_outcome(
    home: Path,
    park_id: str,
    status: str,
    *,
    task: str | None = None,
    started_at: str | None = None,
    next_park: str | None = None,
    text: str = "",
    error: str | None = None,
) -> None:
    """Keep what became of a decision made in the inbox (its words masked first). A store
    that cannot be written raises StorageError: the decision itself stands."""
    now = now_stamp()
    OutcomeLog(home).add(
        KeptOutcome(
            park=park_id,
            task=masked(task if task is not None else f"park {park_id}"),
            status=status,
            started_at=started_at or now,
            finished_at=now,
            next_park=next_park,
            text=masked(text),
            error=masked(error) if error is not None else None,
        )
    )


def latest_first(*groups: Iterable[Outcome], limit: int = 20) -> list[Outcome]:
    """Outcomes from several places as one list, newest first (ties keep their order)."""
    merged = [o for group in groups for o in group]
    merged.sort(key=lambda o: o.moment, reverse=True)
    return merged[:limit]


def audit_trail(home: Path, park_id: str) -> list[dict[str, Any]]:
    """Every audit line about this park, oldest first."""
    lines: list[dict[str, Any]] = []
    try:
        data = (home / AUDIT_FILE).read_bytes()
    except OSError:
        data = b""
    needle = f'"park":"{park_id}"'.encode()
    for line in data.splitlines():
        if needle in line:
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
    return lines


def ledger_events(home: Path, park_id: str) -> list[str]:
    """The decided-park ledger's events for this park (or why it cannot be read)."""
    try:
        return sorted(DecisionLedger(home).events_for(park_id))
    except ParkError as exc:
        return [exc.message]
