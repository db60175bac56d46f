"""A model's answer rendered as Markdown while it streams in, at a bounded frame rate, drawing
only what changed (issue 34).

Finished blocks (a blank line outside a code fence, the next line starting a new block at the
margin) are rendered once and printed for good; only the last, unfinished block stays in a
small live region at the bottom, redrawn at most :data:`FPS` times a second (a timer draws the
last change when the stream pauses) and once more, whole, at the end. A block taller than the
screen is cut where the terminal would otherwise lose it (:func:`~butler_cli.ui.scrolling.settle`).

Before, rich's ``Live`` parsed and laid out the whole live region as Markdown on every refresh
and every settled print: a 2,000-token answer took 11 times a raw read of its stream.

:class:`MarkdownStream` is the one renderer: the chat's progress feeds it, and so may any
surface that shows a streamed answer on a terminal. ``feed`` each piece, ``close`` at the end
(also after Ctrl-C: what was shown stays, and the last block is drawn whole).
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from rich.console import Console

from butler_cli.ui.markup import markdown
from butler_cli.ui.scrolling import FENCE, settle

#: Redraws of the live region a second, at most.
FPS = 20
HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"
#: A line that goes on the block before it even after a blank line: indented, or a list item.
#: The render's final line end, and the style resets written after it.
_LAST_END = re.compile(r"\n((?:\x1b\[[0-9;]*m)*)\Z")
#: A render's first line end when the render begins with an empty line: rich starts a quote or
#: a list rendered alone with one, which the same block after another does not have.
_FIRST_EMPTY = re.compile(r"\A((?:\x1b\[[0-9;]*m)*)\n")
_GOES_ON = re.compile(r"(\s|[-*+](\s|$)|\d{1,9}[.)](\s|$))")


class Wrapped:
    """A renderable wrapped at the screen's width, between words (a word longer than the
    line is folded, never cropped). The chat's console soft-wraps — the terminal folds what
    it prints, mid-word ("no que/stions" at 80 columns) — so the model's words go through
    this, in the live region (which must know its height) and once printed alike."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __rich_console__(self, console: Any, options: Any) -> Any:
        yield from console.render(self.inner, options.update(no_wrap=False, overflow="fold"))


def block_end(text: str, start: int, fence: str | None) -> tuple[int | None, int, str | None]:
    """Scan the whole lines of ``text`` from offset ``start`` (a line's start, inside the code
    fence opened by the line ``fence``, or none): ``(cut, resume, fence)``, where ``cut`` is
    the offset of the last line that starts a new block — after a blank line outside a
    fence, at the margin, not a list item — or None, and the next scan resumes at ``resume``."""
    cut: int | None = None
    previous = text[text.rfind("\n", 0, max(start - 1, 0)) + 1 : max(start - 1, 0)]
    blank_before = start > 0 and fence is None and not previous.strip()
    while (end := text.find("\n", start)) >= 0:
        line = text[start:end]
        found = FENCE.match(line)
        if fence is None:
            if line.strip() and blank_before and _starts_block(text, start):
                cut = start
            if found is not None:
                fence = line
        elif found is not None and found.group(1)[0] == fence.lstrip()[0]:
            fence = None
        blank_before = fence is None and not line.strip()
        start = end + 1
    return cut, start, fence


def _starts_block(text: str, at: int) -> bool:
    """Whether the line at ``at`` starts a block of its own: something comes before it and
    it is not the continuation of a list or an indented block."""
    return bool(text[:at].strip()) and _GOES_ON.match(text, at) is None


class MarkdownStream:
    """One streamed answer on ``console``. Every method may be called from any thread."""

    def __init__(self, console: Console, fps: float = FPS) -> None:
        self.console = console
        self._live = console.is_terminal
        self._interval = 1.0 / fps
        self._lock = threading.Lock()
        self._tail = ""  # the unfinished part, not yet printed for good
        self._scan = 0  # where the next whole line of the tail starts
        self._fence: str | None = None  # the fence the scan is inside
        self._done: list[str] = []  # finished blocks not yet printed
        self._rows = 0  # rows of the live region on the screen now
        self._drawn_tail: str | None = None  # the tail as last drawn
        self._last = 0.0  # when the last frame was drawn
        self._timer: threading.Timer | None = None
        self._size = console.size
        self._line_len = 0  # the length of the tail's last line
        self._closed = False
        self._hidden = False  # the cursor, while the live region is drawn
        self._begun = False  # whether a block was printed for good: the next one follows it
        #: Whether anything of the answer was given to the screen.
        self.shown = False

    def feed(self, piece: str) -> None:
        """Add a streamed piece; draws at most every ``1/fps`` s (a timer draws the rest)."""
        if not piece:
            return
        with self._lock:
            if self._closed:
                return
            self.shown = True
            self._tail += piece
            width = max(self._size.width, 1)
            if "\n" in piece:
                self._line_len = len(piece) - piece.rfind("\n") - 1
                self._blocks()
            else:  # only the last line grew: settle only when it wraps onto a new row
                before = self._line_len // width
                self._line_len += len(piece)
                if self._line_len // width != before:
                    self._settle()
            if not self._live:
                if self._done:
                    self._write(self._printed())
                return
            wait = self._last + self._interval - time.monotonic()
            if wait <= 0:
                self._frame()
            elif self._timer is None:
                self._timer = threading.Timer(wait, self._tick)
                self._timer.daemon = True
                self._timer.start()

    def close(self) -> None:
        """The end (or Ctrl-C): the live region is drawn once more, whole, and left for good;
        the cursor is shown again. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if not self.shown:
                return
            self._done.append(self._tail)
            self._tail = ""
            out = self._erase() + self._printed(last=True)
            self._write(out + (SHOW_CURSOR if self._hidden else ""))
            self._rows = 0

    # -- under the lock -------------------------------------------------------------------
    def _blocks(self) -> None:
        """Move the blocks a line end finished to the printed part, then settle."""
        cut, self._scan, self._fence = block_end(self._tail, self._scan, self._fence)
        if cut is not None:
            self._done.append(self._tail[:cut].rstrip("\n"))
            self._tail = self._tail[cut:]
            self._scan -= cut
        self._settle()

    def _settle(self) -> None:
        """Print part of a tail too tall for the screen (the live region cannot scroll)."""
        cut = settle(self._tail, self._size.width, self._size.height)
        if cut is not None:
            settled, self._tail = cut
            self._done.append(settled)
            self._scan, self._fence = 0, None  # the rest may open its fence again

    def _tick(self) -> None:
        with self._lock:
            self._timer = None
            if not self._closed:
                self._frame()

    def _frame(self) -> None:
        """Draw what changed: finished blocks above, then the live region, in one write."""
        self._last = time.monotonic()
        self._size = self.console.size
        if not self._done and self._tail == self._drawn_tail:
            return
        out = self._erase() + self._printed()
        region = self._render(self._tail) if self._tail.strip() else ""
        self._drawn_tail = self._tail
        if not self._hidden:
            self._hidden = True
            out = HIDE_CURSOR + out
        # The cursor waits at the region's last row's start, not at its end: a line as wide
        # as the screen would leave it past the edge, where the terminal's own echo of ^C
        # wraps onto a new row, and the region would no longer be where it is erased from.
        self._write(out + region + ("\r" if region else ""))
        self._rows = region.count("\n") + 1 if region else 0

    def _erase(self) -> str:
        """Take the live region off the screen (the cursor ends at its first row's start)."""
        if self._rows == 0:
            return ""
        return "\r\x1b[2K" + "\x1b[1A\x1b[2K" * (self._rows - 1)

    def _printed(self, last: bool = False) -> str:
        """The finished blocks, rendered once, each followed by a blank line (as rich sets
        blocks apart in one document); the answer's last block ends its line."""
        done = [block for block in self._done if block.strip()]
        self._done = []
        if not done:
            return ""
        text = "\n\n".join(done)
        rendered = self._render(text)
        self._begun = True
        if last:
            return rendered + "\n"
        return rendered + "\n\n"

    def _render(self, text: str) -> str:
        """``text`` as Markdown in the console's own colours, without the final line end."""
        with self.console.capture() as captured:
            self.console.print(Wrapped(markdown(text)), end="")
        rendered = _LAST_END.sub(r"\1", captured.get())
        # after a printed block (and the blank line that ends it), as in the answer rendered
        # whole: a quote or a list does not open with an empty line of its own
        return _FIRST_EMPTY.sub(r"\1", rendered) if self._begun else rendered

    def _write(self, text: str) -> None:
        if text:
            file = self.console.file
            file.write(text)
            file.flush()
