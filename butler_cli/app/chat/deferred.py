"""Work started in the background and collected when first needed.

The chat draws its first prompt before the heavy imports and the butler's build, then does
them on a thread while the person types; ``get`` waits for the result or re-raises its error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Deferred(Generic[T]):
    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._thread: threading.Thread | None = None
        self._result: T | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Begin the work on a daemon thread (once; later calls do nothing)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="butler-warmup", daemon=True)
                self._thread.start()

    @property
    def started(self) -> bool:
        return self._thread is not None

    @property
    def finished(self) -> bool:
        """The work ran to its end (with a result or an error): get() would not wait."""
        return self._thread is not None and not self._thread.is_alive()

    def _run(self) -> None:
        try:
            self._result = self._work()
        except BaseException as exc:  # handed to whoever calls get()
            self._error = exc

    def get(self) -> T:
        """The result, starting the work here if it was never started; its error re-raised."""
        self.start()
        assert self._thread is not None
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]
