"""The consoles both the one-shot commands and the chat print on, and the list of parks both
show (``butler pending`` and ``/pending``).

rich honours ``NO_COLOR`` and plain (non-terminal) output by itself. No emoji codes: the
model's words are shown as written (``:smile:`` stays ``:smile:``), and ours use none. Soft
wrap: a long line goes to the terminal whole and the terminal wraps it (rich never crops it);
panels that must fold inside their border are printed with ``soft_wrap=False`` (see
``ui.pager``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from butler_cli.ui.stamps import origin_words, readable_time
from butler_cli.ui.text import visible

if TYPE_CHECKING:  # kept out of imports: `pending` must start fast, the chat's prompt sooner
    from rich.console import Console

    from butler_cli.app.parks.parks import ParkSummary


def out() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True, emoji=False)


def err() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


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
