"""The chat's live line for a running tool: its title and the seconds it has run, redrawn in
place on a thread of its own (the main thread is waiting on the tool).

One thread serves every tool of a turn, as the spinner does: starting a thread for each call
cost more than the rest of a quick tool round on a terminal (about 0.2 ms of 0.26). A tool done
within ``FIRST_DRAW_S`` never draws; the thread ends itself after ``IDLE_EXIT_S`` with no tool
running, and the next tool starts another."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from butler_cli.ui.spinner import ERASE_LINE, FRAMES

#: A tool done sooner than this never draws the line.
FIRST_DRAW_S = 0.3
INTERVAL_S = 0.25
#: With no tool running this long, the thread ends.
IDLE_EXIT_S = 1.0


class Ticker:
    """``write`` writes and flushes. Every method may be called from any thread."""

    def __init__(self, write: Callable[[str], None], width: Callable[[], int] = lambda: 0) -> None:
        self._write = write
        #: The terminal's width now: the live line must fit one row to be erased in place
        #: (its title is cut there; the line that says how the call ended shows it whole).
        self._width = width
        self._cond = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        self._title: str | None = None  # the tool running now, already neutralised
        self._began = 0.0
        self._due = 0.0  # when the line is drawn next
        self._frame = 0
        self._drawn = False
        self._idle = False  # the thread waits for a tool: wake it

    def start(self, title: str) -> None:
        """A tool began: its line appears if it is still running after ``FIRST_DRAW_S``."""
        now = time.monotonic()
        with self._cond:
            self._title, self._began, self._due, self._frame = title, now, now + FIRST_DRAW_S, 0
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="butler-tool-ticker", daemon=True
                )
                self._thread.start()
            elif self._idle:
                self._cond.notify()

    def retitle(self, title: str) -> None:
        """What is running changed (calls of one round run side by side): the line names
        ``title`` from its next drawing, its seconds still counted from the first start."""
        with self._cond:
            if self._title is not None:
                self._title = title

    def above(self, write: Callable[[], None]) -> None:
        """``write`` a line above the live line: erased first, drawn again at the next tick."""
        with self._cond:
            if self._drawn:
                self._write(ERASE_LINE)
                self._drawn = False
            write()

    def stop(self) -> None:
        """The tool ended: erase its line (if drawn); nothing is written for it after this."""
        with self._cond:
            self._title = None
            if self._drawn:
                self._write(ERASE_LINE)
                self._drawn = False

    def close(self) -> None:
        """Stop, and let the thread end."""
        with self._cond:
            self._thread = None
            self._cond.notify()
        self.stop()

    def _run(self) -> None:
        me = threading.current_thread()
        with self._cond:
            while self._thread is me:
                if self._title is None:
                    self._idle = True
                    woke = self._cond.wait(IDLE_EXIT_S)
                    self._idle = False
                    if not woke and self._title is None and self._thread is me:
                        self._thread = None
                    continue
                left = self._due - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                seconds = time.monotonic() - self._began
                mark = FRAMES[self._frame % len(FRAMES)]
                self._write(ERASE_LINE + self._fitted(mark, self._title, seconds))
                self._drawn = True
                self._frame += 1
                self._due += INTERVAL_S

    def _fitted(self, mark: str, title: str, seconds: float) -> str:
        tail = f" — running {seconds:.0f} s"
        room = self._width() - len(tail) - 4 - 1  # "  ⠋ " before, a column spare after
        if 0 < room < len(title):
            title = title[: max(room - 1, 1)] + "…"
        return f"  {mark} {title}{tail}"
