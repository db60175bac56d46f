"""Rendering for the one-shot commands: results on stdout, troubles on stderr, JSON for
scripts. The consoles and the parks list are shared with the chat (``butler_cli.ui.console``).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from butler_cli.ui.console import err, out, pending_table
from butler_cli.ui.markup import safe as escape

__all__ = ["err", "out", "pending_table", "print_json", "print_json_line", "report", "warn"]

if TYPE_CHECKING:  # kept out of imports: `pending` must start fast, JSON needs no rich
    from rich.console import Console

    from butler_cli.app.run.report import TaskReport


def warn(message: str) -> None:
    """One line on stderr, prefixed like every butler message; never read as markup."""
    err().print(f"butler: {escape(message)}")


def print_json_line(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def task_header(console: Console, index: int, total: int, task: str) -> None:
    if total > 1:
        console.print(f"[bold]▶ task {index + 1}/{total}:[/bold] {escape(task)}")


def report(rep: TaskReport, as_json: bool, *, answered: bool = False) -> None:
    """Print one task's result: a JSON line, or text (answer on stdout, troubles on stderr).
    ``answered``: the model's words are on the screen already (a terminal shows them as they
    come, rendered)."""
    if as_json:
        print_json_line(rep.to_json())
        return
    stdout = out()
    if rep.text and not answered:
        stdout.print(escape(rep.text, lines=True))
    for line in rep.warnings:
        warn(line)
    if rep.status == "parked" and rep.approvals:
        park_id = rep.park_id
        for n, asked in enumerate(rep.approvals, 1):
            which = f" ({n} of {len(rep.approvals)})" if len(rep.approvals) > 1 else ""
            stdout.print(f"⏸ parked {park_id}{which}: {escape(asked['title'])}")
            stdout.print(f"  why: {escape(asked['reason'])}")
        every = " (every action above)" if len(rep.approvals) > 1 else ""
        stdout.print(f'  decide: butler resume {park_id} --approve{every}   (or --deny --note "…")')
    elif rep.status == "failed":
        err().print(f"[red]✗ failed:[/red] {escape(rep.error or 'unknown error')}")
    elif rep.status == "limit":
        err().print("[yellow]stopped at the round limit[/yellow] (raise it with --max-rounds)")
