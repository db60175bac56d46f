"""The "thinking…" spinner and the lines written above it, for a real terminal.

rich's status starts and stops a refresh thread each time the model is asked, and lays out
every line printed while it runs: about 1–2 ms a tool round. This spinner keeps one thread for
the turn (it ends itself after a second with nothing to show), draws with one short write, and
lines are written whole, already rendered: a tool round costs one write of prepared text.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

#: rich's "dots" spinner, so the terminal looks as it did.
FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
INTERVAL_S = 0.08
#: Hidden this long, the thread ends; the next model call starts another.
IDLE_EXIT_S = 1.0
HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"
ERASE_LINE = "\r\x1b[2K"


class Spinner:
    """A one-line spinner at the cursor. ``frames`` are the rendered frames (colour and text
    included); ``write`` writes and flushes. Every method may be called from any thread.

    The thread draws: a model that answers within one frame's time is never shown a spinner,
    and showing or hiding one that was never drawn writes nothing."""

    def __init__(self, write: Callable[[str], None], frames: Sequence[str]) -> None:
        self._write = write
        self._frames = [f"\r{frame}" for frame in frames]
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = False  # wanted on screen
        self._drawn = False  # on screen now
        self._next = 0
        self._at_exit = False

    @property
    def shown(self) -> bool:
        return self._shown

    def show(self) -> None:
        with self._lock:
            self._shown = True
            if not self._at_exit:  # an interrupted run still gives the terminal its cursor back
                self._at_exit = True
                atexit.register(self.stop)
            if self._thread is None:
                self._wake.clear()
                self._thread = threading.Thread(target=self._spin, name="butler-spinner")
                self._thread.daemon = True
                self._thread.start()

    def hide(self) -> None:
        """Erase the spinner's line (the cursor stays at its start); the thread idles."""
        with self._lock:
            self._hide_locked()

    def line(self, text: str) -> None:
        """Write ``text`` (ending in a newline) above the spinner, if it is drawn."""
        with self._lock:
            if self._drawn:
                self._write(ERASE_LINE + text + self._frames[self._next])
            else:
                self._write(text)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Hidden while the body prints something else, then shown again if it was."""
        with self._lock:
            was = self._shown
            self._hide_locked()
            try:
                yield
            finally:
                self._shown = was

    def stop(self) -> None:
        """Hide, and end the thread (waiting for it)."""
        with self._lock:
            self._hide_locked()
            thread, self._thread = self._thread, None
            self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _hide_locked(self) -> None:
        self._shown = False
        if self._drawn:
            self._drawn = False
            self._write(ERASE_LINE + SHOW_CURSOR)

    def _spin(self) -> None:
        idle = 0.0
        me = threading.current_thread()
        while not self._wake.wait(INTERVAL_S):
            with self._lock:
                if self._thread is not me:
                    return
                if self._shown:
                    idle = 0.0
                    if self._drawn:
                        self._next = (self._next + 1) % len(self._frames)
                        self._write(self._frames[self._next])
                    else:
                        self._drawn = True
                        self._write(HIDE_CURSOR + self._frames[self._next])
                else:
                    idle += INTERVAL_S
                    if idle >= IDLE_EXIT_S:
                        self._thread = None
                        return
