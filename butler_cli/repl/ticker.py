"""The chat's live line for a running tool: its title and the seconds it has run, redrawn in
place on a thread of its own (the main thread is waiting on the tool)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from butler_cli.ui.spinner import ERASE_LINE, FRAMES

#: A tool done sooner than this never draws the line.
FIRST_DRAW_S = 0.3
INTERVAL_S = 0.25


class Ticker:
    """``write`` writes and flushes; ``title`` is already neutralised for the screen."""

    def __init__(self, write: Callable[[str], None], title: str) -> None:
        self._write = write
        self._title = title
        self._began = time.monotonic()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._drawn = False
        self._thread = threading.Thread(target=self._run, name="butler-tool-ticker", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        frame = 0
        if self._done.wait(FIRST_DRAW_S):
            return
        while True:
            with self._lock:
                if self._done.is_set():
                    return
                seconds = time.monotonic() - self._began
                mark = FRAMES[frame % len(FRAMES)]
                self._write(f"{ERASE_LINE}  {mark} {self._title} — running {seconds:.0f} s")
                self._drawn = True
            frame += 1
            if self._done.wait(INTERVAL_S):
                return

    def stop(self) -> None:
        """Erase the line (if drawn); nothing is written after this returns."""
        with self._lock:
            self._done.set()
            if self._drawn:
                self._write(ERASE_LINE)
                self._drawn = False
