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
from typing import TYPE_CHECKING, Any

from butler_cli.core.errors import UsageError
from butler_cli.memory import hybrid
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
from butler_cli.memory.ranking import Filter, Ranker, names_in
from butler_cli.memory.schema import memory_database
from butler_cli.memory.search import date_terms, index_terms, phrase_of, query_terms, variants

if TYPE_CHECKING:
    from butler_cli.memory.dense import DenseIndex, Search

DB_FILE = "memory.db"
DEFAULT_PROFILE = "default"
RECALL_DEFAULT_K = 12
RECALL_MAX_K = 50
#: The best-scored matches the phrase rule (and the tie-break) re-orders.
RERANKED = 60
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
        self._dense: DenseIndex | None = None

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
                    "INSERT INTO entries_fts (rowid, terms, date) VALUES (?, ?, ?)",
                    (cur.lastrowid, index_terms(e.text), date_terms(e.ts)),
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
                db.execute("DELETE FROM embeddings WHERE entry=?", row)
                db.execute("DELETE FROM entries WHERE rowid=?", row)
                gone += 1
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if gone and self._dense is not None:
            self._dense.forgotten()
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

        Relevance (Q1–Q3): the whole phrase first, then the fused score of ``ranking`` over
        the query's telling words (stop words out, stemmed), every match ranked. With the
        dense path on (``hybrid``), that ranking's best stays first and the rest is fused
        with the memories nearest the query's embedding.
        """
        k = max(1, min(RECALL_MAX_K, k))
        if query is None or not query.strip():
            return self.entries(kinds, k, min_importance)
        dense = hybrid.active()
        index = self._filled() if dense and query_terms(query) else None
        depth = hybrid.DEPTH if dense else k

        def words() -> list[tuple[int, Sequence[Any]]] | None:
            return self._lexical(query, kinds, depth, min_importance)

        # with an index, the words are ranked on a second thread while the query is embedded
        if index is None:
            lexical, search = words(), None
        else:
            lexical, search = index.during(self.reader, query, words)
        if not dense or lexical is None:
            return [_entry(row) for _, row in (lexical or [])[:k]]
        nearest = self._nearest(index, search, kinds, min_importance) if index and search else []
        rows = dict(lexical)
        order = hybrid.fuse([rowid for rowid, _ in lexical], nearest)[:k]
        rows.update(self._rows([r for r in order if r not in rows]))
        return [_entry(rows[r]) for r in order if r in rows]

    def _lexical(
        self,
        query: str,
        kinds: Sequence[str] | None,
        k: int,
        min_importance: int | None,
    ) -> list[tuple[int, Sequence[Any]]] | None:
        """The ``k`` best (rowid, row) by the lexical ranking; None when the query has no word."""
        terms = query_terms(query)
        if not terms:
            return None
        forms = [v for t in terms for v in variants(t) if v not in terms]
        where: Filter = None
        if kinds is not None or min_importance is not None or not self._sole_profile():

            def where(head: str, match: str) -> tuple[str, list[Any]]:
                return self._filtered(head, kinds, min_importance, extra=match)

        # The file's size for the rarity of expansion words: the last rowid, read at once.
        size = self.reader.execute("SELECT max(rowid) FROM entries").fetchone()[0] or 0
        ranker = Ranker(self.reader, where, size)
        scores = ranker.rank(
            terms,
            lambda ids: {r: row[2] for r, row in self._rows(ids).items()},
            names_in(query),
            list(dict.fromkeys(forms)),
        )
        if not scores:
            return []
        phrase = phrase_of(query)
        best = heapq.nsmallest(max(RERANKED, k), scores, key=scores.__getitem__)
        keyed = [
            ((phrase not in " ".join(row[2].lower().split()), round(scores[rowid], 9)), rowid, row)
            for rowid, row in self._rows(best).items()
        ]
        if len(keyed) > k:  # only rows as relevant as the k-th can reach the top k
            cut = heapq.nsmallest(k, (key for key, _, _ in keyed))[-1]
            keyed = [item for item in keyed if item[0] <= cut]
        ranked = sort_m3(keyed, lambda it: (it[2][4], it[2][3], it[2][0]), lambda it: it[0])
        return [(rowid, row) for _, rowid, row in ranked[:k]]

    def embed(self, seconds: float = float("inf")) -> tuple[int, int, int]:
        """Embed this profile's memories that have no embedding (all, unless ``seconds`` runs
        out first): (made now, memories with one, memories). Nothing without the dense path."""
        if not hybrid.active() or not self._file.exists:
            return 0, 0, self.count()
        index = self._dense_index()
        made = index.fill(self.db, self.profile, seconds)
        return (made, *self.embedded())

    def embedded(self) -> tuple[int, int]:
        """(memories with an embedding, memories) of this profile."""
        row = self.reader.execute(
            "SELECT count(v.entry), count(*) FROM entries e "
            "LEFT JOIN embeddings v ON v.entry = e.rowid WHERE e.profile = ?",
            (self.profile,),
        ).fetchone()
        return int(row[0]), int(row[1])

    def _dense_index(self) -> DenseIndex:
        from butler_cli.memory.dense import DenseIndex

        if self._dense is None:
            self._dense = DenseIndex()
        return self._dense

    def _filled(self) -> DenseIndex | None:
        """The dense index, its memories without an embedding given one first (for at most
        a second, ``dense.FILL_SECONDS``); None on a fresh home or a broken install."""
        if not self._file.exists:
            return None  # a fresh home: nothing to embed, and the file is not created for it
        try:
            index = self._dense_index()
            index.fill(self.db, self.profile)
        except Exception:  # noqa: BLE001 - the dense half is optional: whatever breaks it
            return None  # (an install cut short, an older NumPy), recall goes on by words
        return index

    def _nearest(
        self, index: DenseIndex, search: Search, kinds: Sequence[str] | None, low: int | None
    ) -> list[int]:
        """The rowids nearest the searched query's embedding, within the filter."""

        def keep(pairs: list[tuple[int, str]]) -> list[int]:
            marks = ", ".join("?" for _ in pairs)
            sql, args = self._filtered(
                "SELECT e.rowid, e.id FROM entries e",
                kinds,
                low,
                f"e.rowid IN ({marks})",
            )
            found = set(self.reader.execute(sql, [*(r for r, _ in pairs), *args]))
            return [rowid for rowid, entry_id in pairs if (rowid, entry_id) in found]

        try:
            return index.rank(search, keep)
        except Exception:  # noqa: BLE001 - as in _filled: the model failed to load or run
            return []

    def _rows(self, rowids: list[int]) -> dict[int, Sequence[Any]]:
        marks = ", ".join("?" for _ in rowids)
        found = self.reader.execute(
            f"SELECT e.rowid, {_COLUMNS} FROM entries e WHERE e.rowid IN ({marks})", rowids
        )
        return {r[0]: r[1:] for r in found}

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
