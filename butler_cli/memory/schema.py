"""The memory database file: created private, opened in WAL mode, migrated in order.

Named, append-only migrations; a reader on a home with no database gets an empty in-memory
one of the same schema, so reading never creates the file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from butler_cli.memory.entries import now_ts
from butler_cli.memory.search import INDEX_TOKENIZER, date_terms, index_terms
from butler_cli.store.sqlite import LazyDatabase, Migrations


def _stemmed_index(db: sqlite3.Connection) -> None:
    """0003: the index rebuilt stemmed, with each entry's date as a second column, from every
    row of ``entries`` (a store made before it is re-indexed on first open; no row is lost)."""
    db.execute("DROP TABLE IF EXISTS entries_vocab")
    db.execute("DROP TABLE entries_fts")
    db.execute(
        f"CREATE VIRTUAL TABLE entries_fts USING fts5 (terms, date, tokenize = '{INDEX_TOKENIZER}')"
    )
    db.execute("CREATE VIRTUAL TABLE entries_vocab USING fts5vocab (entries_fts, 'row')")
    db.executemany(
        "INSERT INTO entries_fts (rowid, terms, date) VALUES (?, ?, ?)",
        (
            (rowid, index_terms(text), date_terms(ts))
            for rowid, text, ts in db.execute("SELECT rowid, text, ts FROM entries").fetchall()
        ),
    )


def _asked_turns(db: sqlite3.Connection) -> None:
    """0004: turns captured as ``User: …`` / ``Butler: …`` pairs keep what the person asked
    (``Asked: …``); the model's reply was its words, not a fact about the person, and it is
    not kept (issue 36). Only captured turns (source ``turn``) of that exact shape change."""
    rows = db.execute(
        "SELECT rowid, text FROM entries WHERE kind = 'episodic' "
        "AND json_extract(meta, '$.source') = 'turn' AND text LIKE 'User: %'"
    ).fetchall()
    for rowid, text in rows:
        asked, sep, _reply = text[len("User: ") :].partition("\nButler: ")
        if not sep or not asked.strip():
            continue
        db.execute("UPDATE entries SET text = ? WHERE rowid = ?", ("Asked: " + asked, rowid))
        db.execute(
            "UPDATE entries_fts SET terms = ? WHERE rowid = ?",
            (index_terms("Asked: " + asked), rowid),
        )


#: Named, append-only: a migration is never edited once shipped; new ones go at the end.
MIGRATIONS: Migrations = [
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
    ("0003_stemmed_dated_index", _stemmed_index),
    ("0004_asked_turns", _asked_turns),
    (
        # Hybrid recall (issue 36): each memory's embedding, made at a recall, never on insert.
        # ``seq`` is never reused, so a cached matrix takes in only rows newer than it has;
        # ``id`` (never reused either) tells a vector from one of a forgotten entry's rowid.
        "0005_embeddings",
        """
        CREATE TABLE embeddings (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            entry INTEGER NOT NULL UNIQUE,
            id TEXT NOT NULL,
            model TEXT NOT NULL,
            vector BLOB NOT NULL
        );
        """,
    ),
]


def memory_database(path: Path) -> LazyDatabase:
    """The memory database file at ``path`` (see :class:`LazyDatabase`)."""
    return LazyDatabase(path, MIGRATIONS, now_ts, "memory database")
