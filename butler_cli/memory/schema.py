"""The memory database file: created private, opened in WAL mode, migrated in order.

Named, append-only migrations; a reader on a home with no database gets an empty in-memory
one of the same schema, so reading never creates the file.
"""

from __future__ import annotations

from pathlib import Path

from butler_cli.memory.entries import now_ts
from butler_cli.store.sqlite import LazyDatabase

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


def memory_database(path: Path) -> LazyDatabase:
    """The memory database file at ``path`` (see :class:`LazyDatabase`)."""
    return LazyDatabase(path, MIGRATIONS, now_ts, "memory database")
