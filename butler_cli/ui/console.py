"""The consoles both the one-shot commands and the chat print on, and the list of parks both
show (``butler pending`` and ``/pending``).

rich honours ``NO_COLOR`` and plain (non-terminal) output by itself. No emoji codes: the
model's words are shown as written (``:smile:`` stays ``:smile:``), and ours use none. On a
terminal rich wraps every line between words at the terminal's width (a word longer than the
line is folded, never cropped): left to the terminal, a line folded mid-word ("Ctrl-D to l" /
"eave"). Piped, a line is written whole (soft wrap): a script reads it as it was said.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

from butler_cli.ui.stamps import origin_words, readable_time
from butler_cli.ui.text import visible, wrapped

if TYPE_CHECKING:  # kept out of imports: `pending` must start fast, the chat's prompt sooner
    from rich.console import Console

    from butler_cli.app.parks.parks import ParkSummary


def out() -> Console:
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=True, emoji=False)
    console.soft_wrap = not console.is_terminal
    return console


def err() -> Console:
    from rich.console import Console

    console = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)
    console.soft_wrap = not console.is_terminal
    return console


def lines_wrapped(console: Console, text: str, indent: int | None = None) -> None:
    """Plain lines (neutralised already), each wrapped between words at the screen's width,
    its later lines indented (by ``indent``, else under its own text): a column stays one.
    Piped, each is written whole."""
    width = console.width if console.is_terminal else 0
    for line in text.split("\n"):
        console.out(wrapped(line, width, indent) if width else line, highlight=False)


def plain_writer(file: TextIO) -> Callable[[str], object]:
    """``file.write``, wrapping each line between words at the terminal's width when ``file``
    is a terminal (piped, lines are written whole)."""
    if not file.isatty():
        return file.write
    width = shutil.get_terminal_size().columns
    return lambda text: file.write("\n".join(wrapped(line, width) for line in text.split("\n")))


def pending_table(write: Callable[[str], object], rows: Sequence[ParkSummary]) -> None:
    """One block per park, written as plain text in one go: fast for thousands of parks.
    Title, task and reason are model-chosen or quote it: shown neutralised."""
    if not rows:
        write("No parks awaiting a decision.\n")
        return
    lines = []
    for row in rows:
        count = len(row.actions)
        when = readable_time(row.created_at)
        came = origin_words(row.origin)
        task = f"          task: {visible(row.task)}" + (f" ({visible(came)})" if came else "")
        if count <= 1:
            lines.append(f"{row.id}  {when}  {visible(row.title)}")
            lines.append(task)
            lines.append(f"          why:  {visible(row.reason)}")
            continue
        lines.append(f"{row.id}  {when}  {count} actions, decided together")
        lines.append(task)
        for number, (_, title, reason) in enumerate(row.actions, 1):
            lines.append(f"          action {number} of {count}: {visible(title)}")
            lines.append(f"            why:  {visible(reason)}")
    lines.append(f"{len(rows)} awaiting a decision — butler resume ID --approve | --deny")
    write("\n".join(lines) + "\n")
