"""The SQLite memory store: one database under the butler's home, one row set per profile.

Stdlib ``sqlite3`` (the file and its migrations: ``schema``), FTS5 for recall.
Every read and write is scoped to the store's profile: one profile never sees another's.
"""

from __future__ import annotations

import heapq
import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from butler_cli.core.errors import UsageError
from butler_cli.memory.block import CLOSE, DEFAULT_BUDGET, OPEN, block_ids, render_block
from butler_cli.memory.entries import (
    KINDS,
    Entry,
    Kind,
    coerce_importance,
    new_id,
    now_ts,
    sort_m3,
)
from butler_cli.memory.schema import memory_database
from butler_cli.memory.search import every_term, index_terms, phrase_of, query_terms, quote_term

DB_FILE = "memory.db"
DEFAULT_PROFILE = "default"
RECALL_DEFAULT_K = 12
RECALL_MAX_K = 50
CANDIDATES = 200
#: A search scores (bm25) at most this many of its matches, the most recently stored: scoring
#: costs microseconds an entry, and a query of words most entries hold would otherwise score
#: tens of thousands of them. A query with a rarer word has fewer matches and scores them all.
SCORED_WINDOW = 500
#: In the any-term search, terms in more entries than this are left out: they would make it
#: score tens of thousands of rows, and an entry sharing only a common word is a poor match.
COMMON_TERM_DOCS = 3000
#: The shortest bullet a block can hold is 8 characters with its newline (``- [i] t``), so
#: no more facts than this can fit the budget: the block never needs to read more.
BLOCK_WINDOW = DEFAULT_BUDGET // 8 + 1

_COLUMNS = "e.id, e.kind, e.text, e.ts, e.importance, e.meta"


class UnknownMemory(UsageError):
    """No memory with that id in this profile."""

    code = "memory_not_found"


def _entry(row: Sequence[Any]) -> Entry:
    meta = json.loads(row[5])
    meta["importance"] = row[4]
    return Entry(id=row[0], kind=row[1], text=row[2], ts=row[3], meta=meta)


class MemoryStore:
    """The memory interface the loop, the tools and the CLI share."""

    def __init__(self, path: Path, profile: str = DEFAULT_PROFILE) -> None:
        if not profile or not profile.replace("-", "").replace("_", "").isalnum():
            raise UsageError(f"profile '{profile}' must be letters, digits, - or _")
        self.path = path
        self.profile = profile
        self._file = memory_database(path)

    # -- connection ------------------------------------------------------------------------
    @property
    def db(self) -> sqlite3.Connection:
        """The database file, created (with the home) on first use: for writes."""
        return self._file.db

    @property
    def reader(self) -> sqlite3.Connection:
        """The database for a read. Before the file exists, an empty in-memory one of the same
        schema: listing, searching or showing the block on a fresh home creates nothing."""
        return self._file.reader

    def close(self) -> None:
        self._file.close()

    # -- writes ----------------------------------------------------------------------------
    def remember(
        self, text: str, kind: Kind = "semantic", meta: dict[str, Any] | None = None
    ) -> Entry:
        if not text.strip():
            raise ValueError("text is blank: nothing to remember")
        if kind not in KINDS:
            raise ValueError(f"kind '{kind}' is not one of {', '.join(KINDS)}")
        meta = dict(meta or {})
        importance = coerce_importance(meta.pop("importance", None))
        for attempt in range(3):
            entry = Entry(new_id(), kind, text, now_ts(), {**meta, "importance": importance})
            try:
                self.add_entries([entry])
                return entry
            except sqlite3.IntegrityError:  # another process took the same id: take another
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def add_entries(self, entries: Iterable[Entry]) -> int:
        """Insert entries as they are (import, consolidation) in one transaction."""
        rows = 0
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            for e in entries:
                meta = {k: v for k, v in e.meta.items() if k != "importance"}
                cur = db.execute(
                    "INSERT INTO entries (id, profile, kind, text, ts, importance, meta) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (e.id, self.profile, e.kind, e.text, e.ts, e.importance, json.dumps(meta)),
                )
                db.execute(
                    "INSERT INTO entries_fts (rowid, terms) VALUES (?, ?)",
                    (cur.lastrowid, index_terms(e.text)),
                )
                rows += 1
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return rows

    def forget(self, ids: str | Iterable[str]) -> int:
        """Forget entries of this profile by id; returns how many existed."""
        wanted = [ids] if isinstance(ids, str) else list(ids)
        if not wanted or not self._file.exists:
            return 0  # nothing to forget: the file is not created for it
        db = self.db
        gone = 0
        db.execute("BEGIN IMMEDIATE")
        try:
            for entry_id in wanted:
                row = db.execute(
                    "SELECT rowid FROM entries WHERE id=? AND profile=?", (entry_id, self.profile)
                ).fetchone()
                if row is None:
                    continue
                db.execute("DELETE FROM entries_fts WHERE rowid=?", row)
                db.execute("DELETE FROM entries WHERE rowid=?", row)
                gone += 1
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return gone

    def clear(self) -> int:
        """Forget everything in this profile."""
        ids = [
            r[0]
            for r in self.reader.execute("SELECT id FROM entries WHERE profile=?", (self.profile,))
        ]
        return self.forget(ids)

    def patch_meta(self, entry_id: str, patch: dict[str, Any]) -> Entry | None:
        entry = self.get(entry_id)
        if entry is None:
            return None
        meta = {**entry.meta, **patch}
        importance = coerce_importance(meta.pop("importance", None))
        self.db.execute(
            "UPDATE entries SET meta=?, importance=? WHERE id=? AND profile=?",
            (json.dumps(meta), importance, entry_id, self.profile),
        )
        return self.get(entry_id)

    # -- reads -----------------------------------------------------------------------------
    def get(self, entry_id: str) -> Entry | None:
        row = self.reader.execute(
            f"SELECT {_COLUMNS} FROM entries e WHERE e.id=? AND e.profile=?",
            (entry_id, self.profile),
        ).fetchone()
        return None if row is None else _entry(row)

    def id_taken(self, entry_id: str) -> bool:
        """True when any profile has an entry with this id (ids are unique in the file)."""
        return (
            self.reader.execute("SELECT 1 FROM entries WHERE id=?", (entry_id,)).fetchone()
            is not None
        )

    def has_copy(self, entry: Entry) -> bool:
        """True when this profile holds an entry of the same kind, text and time."""
        row = self.reader.execute(
            "SELECT 1 FROM entries WHERE profile=? AND kind=? AND text=? AND ts=?",
            (self.profile, entry.kind, entry.text, entry.ts),
        ).fetchone()
        return row is not None

    def entries(
        self,
        kinds: Sequence[str] | None = None,
        limit: int | None = None,
        min_importance: int | None = None,
    ) -> list[Entry]:
        """Entries in M3 order (importance, newest, id)."""
        sql, args = self._filtered(f"SELECT {_COLUMNS} FROM entries e", kinds, min_importance)
        sql += " ORDER BY e.importance DESC, e.ts DESC, e.id ASC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [_entry(r) for r in self.reader.execute(sql, args)]

    def count(self, kinds: Sequence[str] | None = None) -> int:
        sql, args = self._filtered("SELECT count(*) FROM entries e", kinds, None)
        return int(self.reader.execute(sql, args).fetchone()[0])

    def total_chars(self, kind: str) -> int:
        row = self.reader.execute(
            "SELECT coalesce(sum(length(text)), 0) FROM entries WHERE profile=? AND kind=?",
            (self.profile, kind),
        ).fetchone()
        return int(row[0])

    def recall(
        self,
        query: str | None = None,
        kinds: Sequence[str] | None = None,
        k: int = RECALL_DEFAULT_K,
        min_importance: int | None = None,
    ) -> list[Entry]:
        """T2: top entries by M3, or with a query by relevance then M3 (zero relevance dropped).

        Relevance: the whole phrase first (Q3), then entries with every term, then any term,
        each by bm25. Entries with every term are fetched first; the any-term search runs only
        when they are too few, which keeps recall fast on a large store. Each search ranks at
        most SCORED_WINDOW of its matches, the most recently stored.
        """
        k = max(1, min(RECALL_MAX_K, k))
        if query is None or not query.strip():
            return self.entries(kinds, k, min_importance)
        every = every_term(query)
        if every is None:
            return []
        rows = {r[0]: (r, True) for r in self._matches(every, kinds, min_importance)}
        if len(rows) < k:
            telling = self._uncommon(query_terms(query))
            if telling:
                any_term = " OR ".join(quote_term(t) for t in telling)
                for r in self._matches(any_term, kinds, min_importance):
                    rows.setdefault(r[0], (r, False))
        phrase = phrase_of(query)
        keyed = [
            ((phrase not in " ".join(row[2].lower().split()), not all_terms, round(row[6], 9)), row)
            for row, all_terms in rows.values()
        ]
        if len(keyed) > k:  # only rows as relevant as the k-th can reach the top k
            cut = heapq.nsmallest(k, (key for key, _ in keyed))[-1]
            keyed = [item for item in keyed if item[0] <= cut]
        ranked = sort_m3(keyed, lambda it: (it[1][4], it[1][3], it[1][0]), lambda it: it[0])
        return [_entry(row) for _, row in ranked[:k]]

    def _uncommon(self, terms: list[str]) -> list[str]:
        """The terms found in at most COMMON_TERM_DOCS entries (across the file), rarest first.

        Counted through the index and only up to the limit, so a word in most entries costs
        no more than a rare one (the vocabulary table walks a word's every entry to count it).
        """
        counts: dict[str, int] = {}
        for term in terms:
            counts[term] = self.reader.execute(
                "SELECT count(*) FROM (SELECT 1 FROM entries_fts WHERE entries_fts MATCH ? "
                "LIMIT ?)",
                (quote_term(term), COMMON_TERM_DOCS + 1),
            ).fetchone()[0]
        found = [t for t in terms if 0 < counts[t] <= COMMON_TERM_DOCS]
        return sorted(found, key=lambda t: counts[t])

    def _matches(
        self, match: str, kinds: Sequence[str] | None, min_importance: int | None
    ) -> list[Sequence[Any]]:
        """The CANDIDATES best by bm25 of the newest SCORED_WINDOW matches in this profile.

        The index walks its matches newest first and stops at the window. When this profile is
        all the file holds and nothing else filters, the index alone is scored and only the
        best entries are read; otherwise each match is joined to its entry and filtered first.
        """
        if kinds is None and min_importance is None and self._sole_profile():
            scored = self.reader.execute(
                "SELECT rowid, bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ? "
                "ORDER BY rowid DESC LIMIT ?",
                (match, SCORED_WINDOW),
            ).fetchall()
            best = dict(sorted(scored, key=lambda r: r[1])[:CANDIDATES])
            marks = ", ".join("?" for _ in best)
            found = self.reader.execute(
                f"SELECT e.rowid, {_COLUMNS} FROM entries e WHERE e.rowid IN ({marks})",
                list(best),
            ).fetchall()
            rows: list[Sequence[Any]] = [(*r[1:], best[r[0]]) for r in found]
            rows.sort(key=lambda r: r[6])
            return rows
        sql, args = self._filtered(
            f"SELECT {_COLUMNS}, bm25(entries_fts) FROM entries_fts "
            "JOIN entries e ON e.rowid = entries_fts.rowid",
            kinds,
            min_importance,
            extra="entries_fts MATCH ?",
        )
        args.insert(0, match)
        sql += " ORDER BY entries_fts.rowid DESC LIMIT ?"
        args.append(SCORED_WINDOW)
        joined: list[Sequence[Any]] = self.reader.execute(sql, args).fetchall()
        joined.sort(key=lambda r: r[6])
        return joined[:CANDIDATES]

    def _sole_profile(self) -> bool:
        """True when every entry in the file is this profile's (or there are none)."""
        low = self.reader.execute("SELECT min(profile) FROM entries").fetchone()[0]
        high = self.reader.execute("SELECT max(profile) FROM entries").fetchone()[0]
        return low is None or low == high == self.profile

    def block_candidates(self, window: int = BLOCK_WINDOW) -> tuple[list[Entry], int]:
        """Semantic entries for the frozen block: a wide M3 window, and how many there are."""
        return self.entries(["semantic"], window), self.count(["semantic"])

    def block(self, recorded: str | None = None) -> str:
        """The frozen block a session sends (F1–F4), composed from this profile's facts.

        ``recorded`` is the block a parked conversation was sent: it is kept byte for byte, so
        the provider sees the same prompt after an approval as before it, unless a fact it
        shows has been forgotten since. Then the block is composed afresh: a forgotten fact is
        never sent again.
        """
        if (
            recorded is not None
            and recorded.startswith(OPEN)
            and recorded.endswith(CLOSE)
            and all(self.get(entry_id) is not None for entry_id in block_ids(recorded))
        ):
            return recorded
        entries, total = self.block_candidates()
        return render_block(entries, total=total)

    def _filtered(
        self,
        head: str,
        kinds: Sequence[str] | None,
        min_importance: int | None,
        extra: str | None = None,
    ) -> tuple[str, list[Any]]:
        where = ["e.profile = ?"]
        args: list[Any] = [self.profile]
        if extra:
            where.insert(0, extra)
        if kinds:
            where.append(f"e.kind IN ({', '.join('?' for _ in kinds)})")
            args.extend(kinds)
        if min_importance is not None:
            where.append("e.importance >= ?")
            args.append(min_importance)
        return f"{head} WHERE {' AND '.join(where)}", args


def open_memory(home: Path, profile: str = DEFAULT_PROFILE) -> MemoryStore:
    return MemoryStore(home / DB_FILE, profile)
