"""The dense half of hybrid recall: each memory's embedding, kept beside the FTS index.

Embeddings are never made when a memory is stored (a transformer costs tens of milliseconds
a memory on a small CPU): a recall with a query embeds the memories that have none yet,
newest first, for at most ``FILL_SECONDS`` (at least one batch), and ranks the ones that have
one. ``butler memory embed`` makes them all at once. They are kept in the ``embeddings``
table (float16, 768 bytes each), one per entry, deleted with it; each row gets a new ``seq``
(never reused), so a process's cached matrix takes in only what is new.
This module loads NumPy and the model: it is imported only at a recall that needs it.
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

_MISSING = (
    "SELECT e.rowid, e.text FROM entries e LEFT JOIN embeddings v ON v.entry = e.rowid "
    "WHERE v.entry IS NULL AND e.profile = ? ORDER BY e.rowid DESC LIMIT ?"
)
#: Kept only if the entry still holds the text that was embedded (a forget in between).
_KEEP = (
    "INSERT OR REPLACE INTO embeddings (entry, model, vector) "
    "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM entries WHERE rowid = ? AND text = ?)"
)


class DenseIndex:
    """One profile's embeddings, cached in memory between recalls of one process."""

    def __init__(self) -> None:
        self._encoder: Encoder | None = None
        self._rowids: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._matrix: npt.NDArray[np.float32] = np.zeros((0, DIMENSIONS), dtype=np.float32)
        self._seen: tuple[int, int] = (0, 0)  # (count, max rowid) of the table when loaded

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = Encoder()
        return self._encoder

    def fill(self, db: sqlite3.Connection, profile: str, seconds: float = FILL_SECONDS) -> int:
        """Embed this profile's memories that have none, newest first, for about ``seconds``
        (at least one batch; all of them with ``seconds=inf``). A busy or read-only database
        ends the filling quietly: the recall goes on with the embeddings there are."""
        deadline = time.monotonic() + seconds
        made = 0
        while True:
            rows = db.execute(_MISSING, (profile, FILL_BATCH)).fetchall()
            if not rows:
                return made
            vectors = self.encoder.encode([text for _, text in rows]).astype(np.float16)
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    db.executemany(
                        _KEEP,
                        [
                            (rowid, MODEL, v.tobytes(), rowid, text)
                            for (rowid, text), v in zip(rows, vectors, strict=True)
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

    def rank(
        self, db: sqlite3.Connection, query: str, keep: Callable[[list[int]], list[int]]
    ) -> list[int]:
        """The rowids of the DEPTH memories nearest the query (cosine at least FLOOR), of
        those ``keep`` keeps."""
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
        return keep([int(self._rowids[i]) for i in top])[:DEPTH]

    def _load(self, db: sqlite3.Connection) -> None:
        """Bring the cache up to the table: rows added since appended; after a forget or a
        replaced row (the count does not add up), everything reloaded."""
        count, high = db.execute(
            "SELECT count(*), coalesce(max(seq), 0) FROM embeddings"
        ).fetchone()
        if (count, high) == self._seen:
            return
        old_count, old_high = self._seen
        pick = "SELECT entry, vector FROM embeddings WHERE seq > ? AND model = ? ORDER BY seq"
        fresh = db.execute(pick, (old_high, MODEL)).fetchall()
        if old_count + len(fresh) != count:
            fresh = db.execute(pick, (0, MODEL)).fetchall()
            self._rowids = np.zeros(0, dtype=np.int64)
            self._matrix = np.zeros((0, DIMENSIONS), dtype=np.float32)
        if fresh:
            vectors = np.frombuffer(b"".join(v for _, v in fresh), dtype=np.float16)
            rowids = np.array([r for r, _ in fresh], dtype=np.int64)
            self._rowids = np.concatenate([self._rowids, rowids])
            self._matrix = np.concatenate(
                [self._matrix, vectors.reshape(-1, DIMENSIONS).astype(np.float32)]
            )
        self._seen = (count, high)
