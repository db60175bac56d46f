"""The SQLite files the butler keeps (memory, conversations): created private, opened in WAL
mode, migrated in order, and never created by a read.

Migrations are append-only and named: each runs once, in its own ``BEGIN IMMEDIATE``
transaction (a re-index too: it keeps every row or none), and is recorded in a ``migrations``
table, so a second process racing on the same file finds it applied and skips it. A migration
is never edited once shipped; a change is a new one appended.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from butler_cli.core.errors import UsageError
from butler_cli.store.files import ensure_private_dir

#: A migration is SQL (statements split on ``;``) or, when rows must be rewritten through
#: Python (a full-text index rebuilt with new terms), a function given the connection.
Migration = str | Callable[[sqlite3.Connection], None]
Migrations = Sequence[tuple[str, Migration]]


def apply_migrations(
    db: sqlite3.Connection, migrations: Migrations, now: Callable[[], str]
) -> None:
    """Apply the migrations not yet applied, in order (``db`` in autocommit mode)."""
    db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    done = {r[0] for r in db.execute("SELECT name FROM migrations")}
    for name, sql in migrations:
        if name in done:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            if db.execute("SELECT 1 FROM migrations WHERE name=?", (name,)).fetchone() is None:
                if callable(sql):
                    sql(db)
                else:
                    for statement in filter(str.strip, sql.split(";")):
                        db.execute(statement)
                db.execute("INSERT INTO migrations VALUES (?, ?)", (name, now()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


class LazyDatabase:
    """One database file: opened on first use, created (0600, with its folder) on the first
    write; before it exists, a read gets an empty in-memory database of the same schema, so
    listing or searching a fresh home creates nothing. A file SQLite cannot read is a usage
    error naming ``what`` and is left as it is."""

    def __init__(
        self, path: Path, migrations: Migrations, now: Callable[[], str], what: str
    ) -> None:
        self.path = path
        self._migrations = migrations
        self._now = now
        self._what = what
        self._db: sqlite3.Connection | None = None
        self._empty: sqlite3.Connection | None = None

    @property
    def exists(self) -> bool:
        """Whether the file is open or on disk (a write would not create it)."""
        return self._db is not None or self.path.exists()

    @property
    def db(self) -> sqlite3.Connection:
        """The file, for writes."""
        if self._db is None:
            self._db = self._open()
        return self._db

    @property
    def reader(self) -> sqlite3.Connection:
        """The file for a read, or the empty in-memory stand-in while there is none."""
        if not self.exists:
            if self._empty is None:
                self._empty = sqlite3.connect(
                    ":memory:", isolation_level=None, check_same_thread=False
                )
                apply_migrations(self._empty, self._migrations, self._now)
            return self._empty
        return self.db

    def close(self) -> None:
        for db in (self._db, self._empty):
            if db is not None:
                db.close()
        self._db = self._empty = None

    def _open(self) -> sqlite3.Connection:
        ensure_private_dir(self.path.parent)
        if not self.path.exists():  # created 0600 before SQLite opens it (its WAL follows)
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        try:
            db = sqlite3.connect(
                self.path, timeout=10, isolation_level=None, check_same_thread=False
            )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            apply_migrations(db, self._migrations, self._now)
        except sqlite3.DatabaseError as exc:
            raise UsageError(
                f"{self._what} {self.path} cannot be read ({exc}); it was left as it is"
            ) from exc
        return db
