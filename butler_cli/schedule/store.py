"""Schedules and what became of every run, in one SQLite file under the butler's home.

``$BUTLER_HOME/schedule.db`` (0600, WAL). ``jobs`` holds each schedule with the model, policy
and folder it was made with and the next time it is due (UTC). ``runs`` holds every run a
schedule, ``schedule run`` or the inbox started, with its outcome — its words (task, answer,
error, the hook's outcome) through the one masking step first (``app.masking``).

Exactly once: a due run is *claimed* in one write transaction (``BEGIN IMMEDIATE``) that moves
the job's next due time past now; a second scheduler on the same home waits for that
transaction and then finds the job no longer due. The claim sets the next due time from
*now*, so however many runs were missed, one catch-up run happens, never a burst.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from butler_cli.app.config.home import private_dir
from butler_cli.app.run.masking import masked
from butler_cli.core.errors import StorageError, UsageError
from butler_cli.schedule.cron import next_after

DB_FILE = "schedule.db"
ID_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
ID_LENGTH = 6

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    cron TEXT NOT NULL,
    task TEXT NOT NULL,
    model TEXT NOT NULL,
    policy TEXT,
    policy_file TEXT,
    folder TEXT NOT NULL,
    hook TEXT,
    paused INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    next_due TEXT NOT NULL,
    yes_safe INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    job_id TEXT,
    source TEXT NOT NULL,
    task TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL,
    park_id TEXT,
    text TEXT NOT NULL DEFAULT '',
    error TEXT,
    hook TEXT,
    pid INTEGER
);
CREATE INDEX IF NOT EXISTS runs_job ON runs (job_id, id);
"""


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Job:
    id: str
    cron: str
    task: str
    model: str
    policy: str | None
    policy_file: str | None
    folder: str
    hook: str | None
    paused: bool
    created_at: str
    next_due: str
    #: Runs act on what the policy or a kept approval allows (`schedule add --yes-safe`).
    yes_safe: bool = False


@dataclass(frozen=True)
class Run:
    id: int
    job_id: str | None
    source: str
    task: str
    started_at: str
    finished_at: str | None
    status: str
    park_id: str | None
    text: str
    error: str | None
    hook: str | None


_JOB_COLS = (
    "id, cron, task, model, policy, policy_file, folder, hook, paused, created_at, next_due, "
    "yes_safe"
)
_RUN_COLS = "id, job_id, source, task, started_at, finished_at, status, park_id, text, error, hook"


def _job(row: tuple[object, ...]) -> Job:
    values = list(row)
    values[8] = bool(values[8])
    values[11] = bool(values[11])
    return Job(*values)  # type: ignore[arg-type]


class ScheduleStore:
    """The schedules of one home. Each method opens its own short connection: safe from any
    thread and from several processes at once."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / DB_FILE

    @contextmanager
    def _db(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection; for a read before the file exists, an empty in-memory database, so a
        reading command (`schedule list`, the inbox) on a fresh home creates nothing."""
        if not write and not self.path.exists():
            empty = sqlite3.connect(":memory:")
            try:
                empty.executescript(_SCHEMA)
                yield empty
            finally:
                empty.close()
            return
        private_dir(self.home)
        if not self.path.exists():  # created 0600 before SQLite opens it
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
        try:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        except sqlite3.Error as exc:
            raise self._unusable(exc) from exc
        try:
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA busy_timeout=30000")
                db.executescript(_SCHEMA)
                columns = {row[1] for row in db.execute("PRAGMA table_info(jobs)")}
                if "yes_safe" not in columns:  # a schedule.db made before --yes-safe
                    db.execute("ALTER TABLE jobs ADD COLUMN yes_safe INTEGER NOT NULL DEFAULT 0")
            except sqlite3.Error as exc:  # not a database, unreadable: said, and left as it is
                raise self._unusable(exc) from exc
            if write:
                db.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes
                try:
                    yield db
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            else:
                yield db
        finally:
            db.close()

    def _unusable(self, exc: sqlite3.Error) -> StorageError:
        return StorageError(f"cannot use the schedules in {self.path}: {exc}; left as it is")

    # -- jobs ------------------------------------------------------------------------------
    def add(
        self,
        cron: str,
        task: str,
        model: str,
        policy: str | None,
        policy_file: str | None,
        folder: str,
        hook: str | None,
        now: datetime,
        yes_safe: bool = False,
    ) -> Job:
        due = iso(next_after(cron, now))
        with self._db(write=True) as db:
            while True:
                jid = "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))
                if db.execute("SELECT 1 FROM jobs WHERE id = ?", (jid,)).fetchone() is None:
                    break
            db.execute(
                f"INSERT INTO jobs ({_JOB_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)",
                (
                    jid,
                    cron,
                    task,
                    model,
                    policy,
                    policy_file,
                    folder,
                    hook,
                    iso(now),
                    due,
                    int(yes_safe),
                ),  # fmt: skip
            )
        return self.get(jid)

    def jobs(self) -> list[Job]:
        with self._db() as db:
            rows = db.execute(f"SELECT {_JOB_COLS} FROM jobs ORDER BY next_due, id").fetchall()
        return [_job(r) for r in rows]

    def get(self, given: str) -> Job:
        """A schedule by id or unique prefix; unknown or ambiguous → usage error."""
        given = given.strip().lower()
        with self._db() as db:
            rows = db.execute(
                f"SELECT {_JOB_COLS} FROM jobs WHERE substr(id, 1, ?) = ?", (len(given), given)
            ).fetchall()
        if not given or not rows:
            raise UsageError(f"no schedule with id '{given}' (see `butler schedule list`)")
        if len(rows) > 1:
            raise UsageError(
                f"'{given}' matches several schedules: {', '.join(r[0] for r in rows)}"
            )
        return _job(rows[0])

    def remove(self, job_id: str) -> None:
        with self._db(write=True) as db:
            db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))

    def set_paused(self, job_id: str, paused: bool, now: datetime) -> None:
        """Pausing keeps the job; resuming counts its next run from now (no catch-up for the
        time it was paused)."""
        job = self.get(job_id)
        with self._db(write=True) as db:
            db.execute(
                "UPDATE jobs SET paused = ?, next_due = ? WHERE id = ?",
                (int(paused), job.next_due if paused else iso(next_after(job.cron, now)), job_id),
            )

    def set_next_due(self, job_id: str, due: datetime) -> None:
        with self._db(write=True) as db:
            db.execute("UPDATE jobs SET next_due = ? WHERE id = ?", (iso(due), job_id))

    def claim_due(self, now: datetime) -> list[tuple[Job, int]]:
        """Every unpaused job due at ``now``, each with a new ``running`` run; the claim moves
        the job's next due time past ``now`` in the same transaction (exactly once). With no
        ``schedule.db`` nothing is due, and none is made."""
        if not self.path.exists():
            return []
        claimed: list[tuple[Job, int]] = []
        with self._db(write=True) as db:
            rows = db.execute(
                f"SELECT {_JOB_COLS} FROM jobs WHERE paused = 0 AND next_due <= ? ORDER BY id",
                (iso(now),),
            ).fetchall()
            for row in rows:
                job = _job(row)
                db.execute(
                    "UPDATE jobs SET next_due = ? WHERE id = ?",
                    (iso(next_after(job.cron, now)), job.id),
                )
                claimed.append((job, self._start(db, job.id, "schedule", job.task, now)))
        return claimed

    # -- runs ------------------------------------------------------------------------------
    def _start(
        self, db: sqlite3.Connection, job_id: str | None, source: str, task: str, now: datetime
    ) -> int:
        cur = db.execute(
            "INSERT INTO runs (job_id, source, task, started_at, status, pid) "
            "VALUES (?, ?, ?, ?, 'running', ?)",
            (job_id, source, masked(task), iso(now), os.getpid()),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def start_run(self, job_id: str | None, source: str, task: str, now: datetime) -> int:
        with self._db(write=True) as db:
            return self._start(db, job_id, source, task, now)

    def finish_run(
        self,
        run_id: int,
        status: str,
        now: datetime,
        *,
        park_id: str | None = None,
        text: str = "",
        error: str | None = None,
    ) -> None:
        with self._db(write=True) as db:
            db.execute(
                "UPDATE runs SET status = ?, finished_at = ?, park_id = ?, text = ?, error = ? "
                "WHERE id = ?",
                (status, iso(now), park_id, masked(text), _masked(error), run_id),
            )

    def note_hook(self, run_id: int, outcome: str) -> None:
        with self._db(write=True) as db:
            db.execute("UPDATE runs SET hook = ? WHERE id = ?", (masked(outcome), run_id))

    def interrupted(self, now: datetime) -> int:
        """Runs left ``running`` by a process that is gone: marked ``interrupted`` (their parks,
        if any, are on disk). Called when a scheduler starts; a live process's runs stay.
        With no ``schedule.db`` there are none, and none is made."""
        if not self.path.exists():
            return 0
        with self._db(write=True) as db:
            rows = db.execute("SELECT id, pid FROM runs WHERE status = 'running'").fetchall()
            gone = [rid for rid, pid in rows if not _alive(pid)]
            for rid in gone:
                db.execute(
                    "UPDATE runs SET status = 'interrupted', finished_at = ? WHERE id = ?",
                    (iso(now), rid),
                )
            return len(gone)

    def runs(self, limit: int = 50, job_id: str | None = None) -> list[Run]:
        where, args = ("WHERE job_id = ?", (job_id,)) if job_id else ("", ())
        with self._db() as db:
            rows = db.execute(
                f"SELECT {_RUN_COLS} FROM runs {where} ORDER BY id DESC LIMIT ?", (*args, limit)
            ).fetchall()
        return [Run(*r) for r in rows]

    def waiting_park(self, job_id: str, before: int) -> str | None:
        """The park the job's last run (before run ``before``, skipped ones aside) left, if
        that run parked; None otherwise."""
        with self._db() as db:
            row = db.execute(
                "SELECT status, park_id FROM runs WHERE job_id = ? AND id < ? "
                "AND status != 'skipped' ORDER BY id DESC LIMIT 1",
                (job_id, before),
            ).fetchone()
        return str(row[1]) if row is not None and row[0] == "parked" and row[1] else None

    def last_runs(self) -> dict[str, Run]:
        """The latest run of each job."""
        with self._db() as db:
            rows = db.execute(
                f"SELECT {_RUN_COLS} FROM runs WHERE id IN "
                "(SELECT max(id) FROM runs WHERE job_id IS NOT NULL GROUP BY job_id)"
            ).fetchall()
        return {r[1]: Run(*r) for r in rows}


def _masked(text: str | None) -> str | None:
    return masked(text) if text is not None else None


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
