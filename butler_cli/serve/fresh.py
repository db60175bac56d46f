"""One computation shared by every caller that asks while it runs, never an older one.

The inbox's version (a stat of every park file) was computed once per request: 32 clients at
once made 32 scans of 1,000 files, queued on the interpreter lock. A caller here gets the
result of a computation that *began after it asked* — so a park written just before a request
is still seen by it — but callers asking together share that one computation instead of
running their own: at most one runs at a time, and a burst costs about two.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Fresh(Generic[T]):
    """``get()`` returns ``compute()`` as run wholly after the call began; shared by callers."""

    def __init__(self, compute: Callable[[], T]) -> None:
        self._compute = compute
        self._cond = threading.Condition()
        self._started = 0  # computations begun
        self._done = 0  # the number of the last one finished
        self._running = False
        self._value: T | None = None

    def get(self) -> T:
        with self._cond:
            needed = self._started + 1  # the next to begin is the first that began after now
            while self._done < needed:
                if self._running:
                    self._cond.wait()
                    continue
                self._running = True
                self._started += 1
                mine = self._started
                self._cond.release()
                try:
                    value = self._compute()
                except BaseException:
                    self._cond.acquire()
                    self._running = False
                    self._cond.notify_all()
                    raise
                self._cond.acquire()
                self._value, self._done, self._running = value, mine, False
                self._cond.notify_all()
            return self._value  # type: ignore[return-value]
