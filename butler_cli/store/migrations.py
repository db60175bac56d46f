"""Append-only, named SQLite migrations, shared by every database the butler keeps.

Each migration runs once, in its own ``BEGIN IMMEDIATE`` transaction, and is recorded by name
in a ``migrations`` table; a second process racing on the same file finds it applied and
skips it. A migration is never edited once shipped: a change is a new one appended.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence


def apply_migrations(
    db: sqlite3.Connection, migrations: Sequence[tuple[str, str]], now: Callable[[], str]
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
                for statement in filter(str.strip, sql.split(";")):
                    db.execute(statement)
                db.execute("INSERT INTO migrations VALUES (?, ?)", (name, now()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
