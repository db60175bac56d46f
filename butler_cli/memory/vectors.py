"""The embeddings one process holds, and the search for the ones nearest a query.

Up to ``EXACT_UP_TO`` memories, every one is scored against the query: one float32
matrix-vector product, a few milliseconds. Above it, scoring them all reads 1.5 KB a memory
(150 MB at 100,000: 8–16 ms here, most of a recall), so each memory's sign bits are kept
beside its vector (48 bytes: which side of the store's mean each dimension falls), and a
search scores only the memories whose bits differ least from the query's: ``RESCORED`` of
them, and every one tied with the last. How often that misses one of the exact best is
measured on real embeddings (BENCHMARKS.md, *Recall at 100,000 memories*). The vectors stay
float32: NumPy turns float16 into float32 at about 2.4 ns a number here, which for the rows
rescored would cost more than the rest of the search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from butler_cli.memory.encoder import DIMENSIONS

Floats = npt.NDArray[np.float32]
Positions = npt.NDArray[np.intp]

#: Memories scored all in float32; above this many, a sign-bit prefilter comes first.
EXACT_UP_TO = 20_000
#: Memories the prefilter hands on to be scored exactly (at least).
RESCORED = 4_000
_WORDS = DIMENSIONS // 64  # the sign bits of one memory, in 64-bit words
_CHUNK = 8_192  # rows turned into bits at once: bounds the temporary copy

_Array = TypeVar("_Array", bound=np.ndarray)


class Vectors:
    """Memories' unit vectors in the order they came, each with its rowid and id."""

    def __init__(self) -> None:
        self.count = 0
        self._rowids = np.zeros(0, dtype=np.int64)
        self._ids: list[str] = []
        self._matrix: Floats = np.zeros((0, DIMENSIONS), dtype=np.float32)
        self._codes: npt.NDArray[np.uint64] | None = None  # above EXACT_UP_TO only
        self._centre = np.zeros(DIMENSIONS, dtype=np.float32)

    def add(self, rowids: Sequence[int], ids: Sequence[str], vectors: Floats) -> None:
        """Append memories (their unit vectors, float32)."""
        start, end = self.count, self.count + len(ids)
        self._rowids = _room(self._rowids, end, 0)
        self._rowids[start:end] = rowids
        self._ids += ids
        self._matrix = _room(self._matrix, end, 0)
        self._matrix[start:end] = vectors
        self.count = end
        if self._codes is not None:
            self._codes = _room(self._codes, end, 1)
            self._codes[:, start:end] = self._signs(self._matrix[start:end])
        elif end > EXACT_UP_TO:
            # the centre: the mean of the memories there now, fixed from then on (a
            # memory's bits never change)
            self._centre = self._matrix[:end].mean(axis=0, dtype=np.float64).astype(np.float32)
            self._codes = self._signs(self._matrix[:end])

    def pairs(self, positions: Positions) -> list[tuple[int, str]]:
        """(rowid, id) of each position."""
        return [(int(self._rowids[i]), self._ids[i]) for i in positions]

    def nearest(self, query: Floats, wide: int, floor: float) -> Positions:
        """The positions of the ``wide`` memories nearest the query with a cosine of at
        least ``floor``, best first (of equal ones, the older first)."""
        if self._codes is None:
            rows = None
            scores = self._matrix[: self.count] @ query
        else:
            rows = self._prefiltered(query)
            scores = self._matrix[rows] @ query
        if not len(scores):
            return np.zeros(0, dtype=np.intp)
        wide = min(wide, len(scores))
        top = np.argpartition(-scores, wide - 1)[:wide]
        top = top[np.lexsort((top, -scores[top]))]
        top = top[scores[top] >= floor]
        return top if rows is None else rows[top]

    def _prefiltered(self, query: Floats) -> Positions:
        """The positions (in order) of the memories whose sign bits differ least from the
        query's: the RESCORED nearest by that count, and every one tied with the last."""
        assert self._codes is not None
        mine = self._signs(query[None, :])[:, 0]
        codes = self._codes[:, : self.count]
        differ = np.bitwise_count(codes[0] ^ mine[0]).astype(np.uint16)
        for word in range(1, _WORDS):
            differ += np.bitwise_count(codes[word] ^ mine[word])
        reached = np.bincount(differ, minlength=DIMENSIONS + 1).cumsum()
        cut = int(np.searchsorted(reached, min(RESCORED, self.count)))
        return np.flatnonzero(differ <= cut)

    def _signs(self, rows: Floats) -> npt.NDArray[np.uint64]:
        """(words, rows): a bit set where a dimension is above the centre."""
        out = np.empty((_WORDS, len(rows)), dtype=np.uint64)
        for at in range(0, len(rows), _CHUNK):
            above = rows[at : at + _CHUNK] > self._centre
            out[:, at : at + _CHUNK] = np.packbits(above, axis=1).view(np.uint64).T
        return out


def _room(array: _Array, need: int, axis: int) -> _Array:
    """``array`` itself if it has room for ``need`` along ``axis``, else a copy of twice
    the room: appending one memory at a time costs a copy only now and then."""
    have = array.shape[axis]
    if need <= have:
        return array
    shape = list(array.shape)
    shape[axis] = max(need, 2 * have, 1_024)
    grown = np.zeros(shape, dtype=array.dtype)
    if axis == 0:
        grown[:have] = array
    else:
        grown[:, :have] = array
    return grown  # type: ignore[return-value]
