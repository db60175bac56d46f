"""Output taller than the screen, a screenful at a time: nothing scrolls past unseen before a
question is asked about it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MORE = "-- more: lines {first}–{last} of {total} · Enter for the next page, q to skip -- "


def page(console: Any, read_line: Callable[[str], str], renderable: Any) -> None:
    """Print ``renderable`` wrapped to the terminal's width (never cropped); when it is taller
    than the screen, one screenful per Enter. ``q`` skips the rest and says how much.
    Ctrl-C / end of input at the "more" prompt propagate (the caller's "later")."""
    with console.capture() as captured:
        console.print(renderable, soft_wrap=False)
    lines = captured.get().splitlines()
    height = max(console.size.height - 1, 4)  # one line is left for the "more" prompt
    start = 0
    while True:
        chunk = lines[start : start + height]
        console.file.write("".join(line + "\n" for line in chunk))
        console.file.flush()
        start += height
        if start >= len(lines):
            return
        shown = MORE.format(first=start - height + 1, last=start, total=len(lines))
        if read_line(shown).strip().lower() in ("q", "quit"):
            console.print(f"({len(lines) - start} more lines not shown; d shows them again)")
            return
