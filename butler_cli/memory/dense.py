"""The dense half of hybrid recall: each memory's embedding, kept beside the FTS index.

Embeddings are never made when a memory is stored (a transformer costs tens of milliseconds
a memory on a small CPU): a recall with a query embeds the memories that have none yet,
newest first, for at most ``FILL_SECONDS`` (at least one batch), and ranks the ones that have
one. ``butler memory embed`` makes them all at once. They are kept in the ``embeddings``
table (float16, 768 bytes each), one per entry (its rowid and its id, which never repeats),
deleted with it; each row gets a new ``seq`` (never reused), so a process's cached matrix
takes in only what is new, and a cached vector whose entry is gone is never matched (its id
no longer answers). This module loads NumPy and the model: it is imported only at a recall
that needs it.

A recall's query is embedded and searched while its words are ranked on a second thread
(``during``: NumPy's products and SQLite let go of the GIL), each product on one BLAS thread:
the query's are small, and OpenBLAS's own threads, on a machine whose other core is busy,
made one query's forward pass 25 times slower here (BENCHMARKS.md).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import suppress
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from threadpoolctl import ThreadpoolController

from butler_cli.memory.encoder import DIMENSIONS, MODEL, Encoder
from butler_cli.memory.hybrid import DEPTH
from butler_cli.memory.vectors import Positions, Vectors

#: How long one recall may spend embedding memories that have no embedding yet.
FILL_SECONDS = 1.0
FILL_BATCH = 16
#: The least cosine a memory needs to be a dense match: below it, MiniLM finds no shared
#: meaning, and a query that matches nothing should still find nothing.
FLOOR = 0.25
#: Dense candidates looked at before the filter (profile, kinds, importance) keeps DEPTH.
_WIDE = DEPTH * 4

#: A stored vector this cache can read: float16 bytes of the model's size. Any other (a bad
#: write, another tool, a hand edit) is damaged: skipped, and made again from its memory.
_WHOLE = f"typeof(v.vector) = 'blob' AND length(v.vector) = {DIMENSIONS * 2}"
#: Newest first by rowid, above what this process already knows to be embedded (the rowid
#: range, not the profile index: `+` keeps SQLite walking rowids down, stopping at LIMIT);
#: a memory whose vector is damaged has none.
_MISSING = (
    "SELECT e.rowid, e.id, e.text FROM entries e "
    "LEFT JOIN embeddings v ON v.entry = e.rowid AND v.id = e.id "
    f"WHERE (v.entry IS NULL OR NOT ({_WHOLE})) AND e.rowid > ? AND +e.profile = ? "
    "ORDER BY e.rowid DESC LIMIT ?"
)
#: How far from unit length a stored vector may be (float16 keeps it within 0.001).
_UNIT = 0.01
#: Kept only if the entry still holds the id and text that were embedded (a forget between).
_KEEP = (
    "INSERT OR REPLACE INTO embeddings (entry, id, model, vector) SELECT ?, ?, ?, ? "
    "WHERE EXISTS (SELECT 1 FROM entries WHERE rowid = ? AND id = ? AND text = ?)"
)

#: The (rowid, id) pairs still in the store and within the recall's filter, in order.
Admit = Callable[[list[tuple[int, str]]], list[int]]
_Work = TypeVar("_Work")
#: The one thread a recall's words are ranked on while its query is embedded, made at the
#: first (starting a thread for each recall took up to 4 ms on a busy machine; handing work
#: to a waiting one, 6 µs).
_worker: ThreadPoolExecutor | None = None


@dataclass
class Search:
    """One query's search: what it found, or why it could not."""

    found: Positions | None = None
    failed: Exception | None = None

    def result(self) -> Positions:
        if self.failed is not None:
            raise self.failed
        assert self.found is not None
        return self.found


class DenseIndex:
    """One profile's embeddings, cached in memory between recalls of one process."""

    def __init__(self) -> None:
        self._encoder: Encoder | None = None
        self._blas: ThreadpoolController | None = None
        self._vectors = Vectors()
        self._seq = 0  # the newest embeddings row the cache holds
        self._damaged: list[tuple[int]] = []  # seqs of vectors of no length, to make again
        self._complete = 0  # every entry up to this rowid is known to have an embedding

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = Encoder()
        return self._encoder

    def forgotten(self) -> None:
        """This process forgot a memory: its rowid may be taken again by the next one."""
        self._complete = 0

    def fill(self, db: sqlite3.Connection, profile: str, seconds: float = FILL_SECONDS) -> int:
        """Embed this profile's memories that have none, newest first, for about ``seconds``
        (at least one batch; all of them with ``seconds=inf``), and those whose stored vector
        is damaged (of another size or type, or of no length). A busy or read-only database
        ends the filling quietly: the recall goes on with the embeddings there are."""
        self._load(db)
        if self._damaged:  # read whole but of no length (zeros, NaN): made again below
            self._complete = 0
            with suppress(sqlite3.OperationalError):
                db.executemany("DELETE FROM embeddings WHERE seq = ?", self._damaged)
            self._damaged = []
        high = db.execute("SELECT coalesce(max(rowid), 0) FROM entries").fetchone()[0]
        if high <= self._complete:
            return 0
        deadline = time.monotonic() + seconds
        made = 0
        while True:
            rows = db.execute(_MISSING, (self._complete, profile, FILL_BATCH)).fetchall()
            if not rows:
                self._complete = high
                return made
            vectors = self.encoder.encode([text for _, _, text in rows]).astype(np.float16)
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    db.executemany(
                        _KEEP,
                        [
                            (rowid, entry_id, MODEL, v.tobytes(), rowid, entry_id, text)
                            for (rowid, entry_id, text), v in zip(rows, vectors, strict=True)
                        ],
                    )
                    db.execute("COMMIT")
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError:
                return made
            made += len(rows)
            if time.monotonic() >= deadline:
                return made

    def during(
        self, db: sqlite3.Connection, query: str, work: Callable[[], _Work]
    ) -> tuple[_Work, Search]:
        """``work()`` on a second thread while the query is embedded and searched on this
        one (the longer of the two, started at once): what ``work`` returned, and the search
        for ``rank``. ``work`` has ended when this returns, whatever the search did; what
        ``work`` raised is raised here, what the search raised by ``rank``."""
        global _worker
        self._load(db)
        if _worker is None:
            _worker = ThreadPoolExecutor(1, thread_name_prefix="butler-recall")
        done = _worker.submit(work)
        try:
            search = self._search(query)
        finally:
            wait([done])
        return done.result(), search

    def rank(self, search: Search, admit: Admit) -> list[int]:
        """The rowids of the DEPTH memories nearest the searched query (cosine at least
        FLOOR), of those ``admit`` lets through."""
        top = search.result()
        if not len(top):
            return []
        return admit(self._vectors.pairs(top))[:DEPTH]

    def _search(self, query: str) -> Search:
        """Embed the query and find its nearest, on one BLAS thread; an error is kept for
        ``rank`` to raise (a broken install: the recall goes on by words)."""
        search = Search()
        try:
            if self._blas is None:
                self._blas = ThreadpoolController()
            with self._blas.limit(limits=1, user_api="blas"):
                vector = self.encoder.encode([query])[0]
                search.found = self._vectors.nearest(vector, _WIDE, FLOOR)
        except Exception as error:  # noqa: BLE001 - raised by rank, once the words are ranked
            search.failed = error
        return search

    def _load(self, db: sqlite3.Connection) -> None:
        """Append the rows added since the cache was last brought up to date."""
        rows = db.execute(
            f"SELECT seq, entry, id, CASE WHEN {_WHOLE} THEN vector END FROM embeddings v "
            "WHERE seq > ? AND model = ? ORDER BY seq",
            (self._seq, MODEL),
        ).fetchall()
        if not rows:
            return
        self._seq = rows[-1][0]
        fresh = [row for row in rows if row[3] is not None]  # a damaged one: made again
        if not fresh:
            return
        stored = np.frombuffer(b"".join(row[3] for row in fresh), dtype=np.float16)
        vectors = stored.reshape(-1, DIMENSIONS).astype(np.float32)  # once: the cache's type
        with np.errstate(all="ignore"):
            lengths = np.einsum("ij,ij->i", vectors, vectors)
        unit = np.abs(lengths - 1.0) <= _UNIT  # NaN fails too
        self._damaged += [(row[0],) for row, ok in zip(fresh, unit, strict=True) if not ok]
        self._vectors.add(
            [row[1] for row, ok in zip(fresh, unit, strict=True) if ok],
            [row[2] for row, ok in zip(fresh, unit, strict=True) if ok],
            vectors[unit],
        )
