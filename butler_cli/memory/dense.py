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
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from butler_cli.memory.encoder import DIMENSIONS, MODEL, Encoder
from butler_cli.memory.hybrid import DEPTH

#: How long one recall may spend embedding memories that have no embedding yet.
FILL_SECONDS = 1.0
FILL_BATCH = 16
#: The least cosine a memory needs to be a dense match: below it, MiniLM finds no shared
#: meaning, and a query that matches nothing should still find nothing.
FLOOR = 0.25
#: Dense candidates looked at before the filter (profile, kinds, importance) keeps DEPTH.
_WIDE = DEPTH * 4

#: Newest first by rowid, above what this process already knows to be embedded (the rowid
#: range, not the profile index: `+` keeps SQLite walking rowids down, stopping at LIMIT).
_MISSING = (
    "SELECT e.rowid, e.id, e.text FROM entries e "
    "LEFT JOIN embeddings v ON v.entry = e.rowid AND v.id = e.id "
    "WHERE v.entry IS NULL AND e.rowid > ? AND +e.profile = ? ORDER BY e.rowid DESC LIMIT ?"
)
#: Kept only if the entry still holds the id and text that were embedded (a forget between).
_KEEP = (
    "INSERT OR REPLACE INTO embeddings (entry, id, model, vector) SELECT ?, ?, ?, ? "
    "WHERE EXISTS (SELECT 1 FROM entries WHERE rowid = ? AND id = ? AND text = ?)"
)

#: The (rowid, id) pairs still in the store and within the recall's filter, in order.
Admit = Callable[[list[tuple[int, str]]], list[int]]


class DenseIndex:
    """One profile's embeddings, cached in memory between recalls of one process."""

    def __init__(self) -> None:
        self._encoder: Encoder | None = None
        self._rowids: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._ids: list[str] = []
        self._matrix: npt.NDArray[np.float32] = np.zeros((0, DIMENSIONS), dtype=np.float32)
        self._seq = 0  # the newest embeddings row the cache holds
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
        (at least one batch; all of them with ``seconds=inf``). A busy or read-only database
        ends the filling quietly: the recall goes on with the embeddings there are."""
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

    def rank(self, db: sqlite3.Connection, query: str, admit: Admit) -> list[int]:
        """The rowids of the DEPTH memories nearest the query (cosine at least FLOOR), of
        those ``admit`` lets through."""
        self._load(db)
        if not len(self._rowids):
            return []
        scores = self._matrix @ self.encoder.encode([query])[0]
        wide = min(_WIDE, len(scores))
        top = np.argpartition(-scores, wide - 1)[:wide]
        top = top[np.argsort(-scores[top], kind="stable")]
        top = top[scores[top] >= FLOOR]
        if not len(top):
            return []
        return admit([(int(self._rowids[i]), self._ids[i]) for i in top])[:DEPTH]

    def _load(self, db: sqlite3.Connection) -> None:
        """Append the rows added since the cache was last brought up to date."""
        fresh = db.execute(
            "SELECT seq, entry, id, vector FROM embeddings WHERE seq > ? AND model = ? "
            "ORDER BY seq",
            (self._seq, MODEL),
        ).fetchall()
        if not fresh:
            return
        vectors = np.frombuffer(b"".join(row[3] for row in fresh), dtype=np.float16)
        rowids = np.array([row[1] for row in fresh], dtype=np.int64)
        self._rowids = np.concatenate([self._rowids, rowids])
        self._ids += [row[2] for row in fresh]
        self._matrix = np.concatenate(
            [self._matrix, vectors.reshape(-1, DIMENSIONS).astype(np.float32)]
        )
        self._seq = fresh[-1][0]
