"""Several calls at once: the benign calls of a round run side by side on threads of their own,
a bounded number at a time, and an interrupt (Ctrl-C) stops every one of them.

The caller's thread keeps everything that is not the work itself: it decides when each job
starts (``before``), hears each end (``after``, in the order they end), and is the only thread
that touches the journal, the observers and the screen. A job's thread only runs ``work``.

Stopping a job that is running: the thread cannot be killed, so it is stopped the two ways
Python allows. What registered a stop with :func:`on_interrupt` (an MCP call cancels its
request, say) is stopped at once; and the thread is made to raise :class:`SystemExit` at its
next Python instruction, as Ctrl-C made the one running tool raise ``KeyboardInterrupt``
before (a call blocked in C — a sleep, a read — stops when that returns). The threads are
daemons: a process that ends (``butler run`` after SIGINT) never waits for them.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:  # loaded when a round runs calls side by side (LAZY: queue)
    import queue

#: At most this many calls of a round run at once.
LIMIT = 8

J = TypeVar("J")
R = TypeVar("R")

_here = threading.local()


@contextlib.contextmanager
def on_interrupt(stop: Callable[[], object]) -> Iterator[None]:
    """While the block runs, an interrupt of the round (Ctrl-C) calls ``stop`` first: a tool
    waiting on something another thread can cancel (a request, a child process) registers
    the cancelling here, so it ends at once rather than when the wait does. On the loop's own
    thread, ``stop`` runs when KeyboardInterrupt passes through the block."""
    job = getattr(_here, "job", None)
    if job is None:
        try:
            yield
        except KeyboardInterrupt:
            with contextlib.suppress(Exception):
                stop()
            raise
        return
    job.stops.append(stop)
    try:
        yield
    finally:
        job.stops.remove(stop)


class _Job(Generic[J, R]):
    """One job on its own daemon thread; what it gives back goes to ``done``."""

    def __init__(
        self,
        index: int,
        item: J,
        work: Callable[[J], R],
        done: queue.Queue[tuple[int, R | BaseException, float]],
    ) -> None:
        self.index = index
        self.stops: list[Callable[[], object]] = []
        self._lock = threading.Lock()
        self._working = True
        self._thread = threading.Thread(
            target=self._run, args=(item, work, done), name="butler-call", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def _run(
        self,
        item: J,
        work: Callable[[J], R],
        done: queue.Queue[tuple[int, R | BaseException, float]],
    ) -> None:
        _here.job = self
        began = time.perf_counter()
        outcome: R | BaseException
        try:
            try:
                outcome = work(item)
            except BaseException as exc:  # noqa: BLE001 — a job's end, whatever it is, is told
                outcome = exc
            with self._lock:
                self._working = False
            done.put((self.index, outcome, time.perf_counter() - began))
        except BaseException:  # noqa: BLE001, S110 — an interrupt that landed late: nobody waits
            pass

    def interrupt(self) -> None:
        """Stop the job: its registered stops now, its thread at its next instruction."""
        with self._lock:
            if not self._working:
                return
            for stop in list(self.stops):
                with contextlib.suppress(Exception):
                    stop()
            ident = self._thread.ident
            if ident is not None:
                import ctypes

                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(ident), ctypes.py_object(SystemExit)
                )


def run_together(
    items: Sequence[J],
    work: Callable[[J], R],
    before: Callable[[int], None],
    after: Callable[[int, R | BaseException, float], None],
    limit: int = LIMIT,
) -> None:
    """Run ``work`` on every item, at most ``limit`` at once. ``before(i)`` is called on this
    thread just before item ``i`` starts (in order), ``after(i, result or exception, seconds)``
    as each ends. An exception here (KeyboardInterrupt while waiting, or from ``before`` or
    ``after``) stops every job still running, none not yet started ever starts, and it is
    raised again."""
    import queue

    done: queue.Queue[tuple[int, R | BaseException, float]] = queue.Queue()
    running: dict[int, _Job[J, R]] = {}
    upcoming = 0
    try:
        while upcoming < len(items) or running:
            while upcoming < len(items) and len(running) < limit:
                before(upcoming)
                job = _Job(upcoming, items[upcoming], work, done)
                running[upcoming] = job
                upcoming += 1
                job.start()
            index, outcome, seconds = done.get()
            del running[index]
            after(index, outcome, seconds)
    except BaseException:
        for job in running.values():
            job.interrupt()
        raise
