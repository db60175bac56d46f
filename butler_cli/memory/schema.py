"""The memory database file: created private, opened in WAL mode, migrated in order.

Named, append-only migrations; a reader on a home with no database gets an empty in-memory
one of the same schema, so reading never creates the file.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from butler_cli.core.errors import UsageError
from butler_cli.memory.entries import now_ts
from butler_cli.store.files import ensure_private_dir
from butler_cli.store.migrations import apply_migrations

#: Named, append-only: a migration is never edited once shipped; new ones go at the end.
MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_entries",
        """
        CREATE TABLE entries (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            profile TEXT NOT NULL,
            kind TEXT NOT NULL,
            text TEXT NOT NULL,
            ts TEXT NOT NULL,
            importance INTEGER NOT NULL,
            meta TEXT NOT NULL
        );
        CREATE INDEX entries_order ON entries (profile, kind, importance DESC, ts DESC, id);
        CREATE VIRTUAL TABLE entries_fts
            USING fts5 (terms, tokenize = 'unicode61 remove_diacritics 2');
        """,
    ),
    (
        "0002_vocab",
        "CREATE VIRTUAL TABLE entries_vocab USING fts5vocab (entries_fts, 'row')",
    ),
]


def open_db(path: Path) -> sqlite3.Connection:
    """The database at ``path``, created 0600 (with its directory) when missing, migrated.

    A file SQLite cannot read is a usage error and is left as it is.
    """
    ensure_private_dir(path.parent)
    if not path.exists():  # created 0600 before SQLite opens it (its WAL follows)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        db = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        migrate(db)
    except sqlite3.DatabaseError as exc:
        raise UsageError(
            f"memory database {path} cannot be read ({exc}); it was left as it is"
        ) from exc
    return db


def empty_db() -> sqlite3.Connection:
    """An empty in-memory database of the same schema: what a fresh home reads as."""
    db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    migrate(db)
    return db


def migrate(db: sqlite3.Connection) -> None:
    """Apply the migrations not yet applied, each in its own transaction."""
    apply_migrations(db, MIGRATIONS, now_ts)
