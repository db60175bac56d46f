"""What became of each decision made in the inbox: ``<home>/inbox-outcomes.jsonl``.

One JSON line (0600, appended in one write) per decision that ended: the park decided, the
task, its status, when, the park it left if it parked again, its answer or error — already
masked by the caller (``app.views.inbox``). The scheduler's ``schedule.db`` is for schedules;
a decision in the browser is not a scheduled run.

Reading never changes the file: a line that is not an outcome is counted and skipped, an
unreadable file is a :class:`~butler_cli.core.errors.StorageError` naming it; either way the
file is left as it is. A torn last line (a crash mid-write) is closed off before the next one
is appended, so one bad line never swallows a good one.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from butler_cli.core.errors import StorageError
from butler_cli.store.files import NotRegularFile, append_line

OUTCOMES_FILE = "inbox-outcomes.jsonl"
#: Only the end of the file is read for the page: at most this many bytes (about a thousand
#: outcomes).
TAIL_BYTES = 256 << 10


@dataclass(frozen=True, slots=True)
class KeptOutcome:
    """One decision's end, as kept."""

    park: str
    task: str
    status: str
    started_at: str
    finished_at: str
    next_park: str | None = None
    text: str = ""
    error: str | None = None


_FIELDS = {f.name for f in fields(KeptOutcome)}


def _outcome(line: bytes) -> KeptOutcome | None:
    try:
        raw = json.loads(line)
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    try:
        kept = KeptOutcome(**{k: raw[k] for k in raw if k in _FIELDS})
    except TypeError:
        return None
    strings = (kept.park, kept.task, kept.status, kept.started_at, kept.finished_at, kept.text)
    optional = (kept.next_park, kept.error)
    if not all(isinstance(s, str) for s in strings) or not all(
        o is None or isinstance(o, str) for o in optional
    ):
        return None
    return kept


def _tail(path: Path) -> tuple[bytes, bool]:
    """The last :data:`TAIL_BYTES` of a regular file (never a symlink, never blocking on a
    FIFO), and whether anything before them was left unread."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(0, "not a regular file", str(path))
        start = max(st.st_size - TAIL_BYTES, 0)
        chunks: list[bytes] = []
        at = start
        while chunk := os.pread(fd, 1 << 20, at):
            chunks.append(chunk)
            at += len(chunk)
        return b"".join(chunks), start > 0
    finally:
        os.close(fd)


class OutcomeLog:
    """The inbox's outcomes of one home."""

    def __init__(self, home: Path) -> None:
        self.path = home / OUTCOMES_FILE

    def stamp(self) -> str:
        """Changes whenever the file does (for the page's version); cheap."""
        try:
            st = os.stat(self.path)
        except OSError:
            return "-"
        return f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}"

    def recent(self, limit: int) -> tuple[list[KeptOutcome], int]:
        """The last ``limit`` outcomes, newest first, and how many lines among those read
        for them were not outcomes. No file: none. Unreadable (a directory, a FIFO, no
        permission): StorageError."""
        try:
            data, cut = _tail(self.path)
        except FileNotFoundError:
            return [], 0
        except OSError as exc:
            raise StorageError(
                f"cannot read the inbox's outcomes {self.path}: {exc.strerror or exc}; "
                "left as it is"
            ) from exc
        lines = data.splitlines()
        if cut:
            lines = lines[1:]  # the first is most likely a part of a line
        found: list[KeptOutcome] = []
        bad = 0
        for line in reversed(lines):
            if not line.strip():
                continue
            kept = _outcome(line)
            if kept is None:
                bad += 1
                continue
            found.append(kept)
            if len(found) == limit:
                break  # what lies further back is not shown, so not read either
        return found, bad

    def add(self, outcome: KeptOutcome) -> None:
        """Append one outcome (``append_line`` closes off a torn last line first)."""
        append_line(
            self.path, json.dumps(asdict(outcome), ensure_ascii=False, separators=(",", ":"))
        )

    def problem(self, bad: int) -> str | None:
        """The one line that names the lines that are not outcomes, if any."""
        if not bad:
            return None
        lines = "line is" if bad == 1 else "lines are"
        return f"{bad} {lines} not an outcome in {self.path}; skipped and left as it is"
