"""Views of one park: what a person sees before deciding, and `butler show`."""

from __future__ import annotations

from rich.console import Console

from butler_cli.app.preview import change_preview
from butler_cli.core.park import ParkState
from butler_cli.tools.redact import redact
from butler_cli.ui.approval import diff_style
from butler_cli.ui.markup import safe as escape
from butler_cli.ui.parks import call_rows
from butler_cli.ui.text import pretty_json


def approval_panel(console: Console, state: ParkState) -> None:
    """The parked action as a person should see it before deciding: tool, title, reason, args.
    Every model-chosen value is neutralised; lines are long, never cut (the terminal wraps)."""
    args = pretty_json(redact(state.approved_arguments()))
    console.print(f"[bold]Park {state.id}[/bold] — task: {escape(state.context.task)}")
    console.print(f"  tool:   {escape(state.approval.tool)}")
    console.print(f"  action: {escape(state.approval.title)}")
    console.print(f"  why:    {escape(state.approval.reason)}")
    console.print("  arguments:")
    for line in args.splitlines():
        console.print(f"    {escape(line, lines=True)}")
    change = change_preview(state.approval.tool, state.approved_arguments(), state.context.cwd)
    if change:
        console.print("  change:")
        for line in change:
            console.print(f"    {escape(line)}", style=diff_style(line), highlight=False)


def park_details(console: Console, state: ParkState) -> None:
    """``butler show``: the whole park in text."""
    approval_panel(console, state)
    console.print(f"  status: {state.status}   created: {state.created_at}")
    console.print(
        f"  model:  {escape(state.context.model)}   policy: {escape(state.context.policy)}"
    )
    if state.parent:
        console.print(f"  continues park {state.parent}")
    if state.decision is not None:
        word = "approved" if state.decision.approved else "denied"
        note = f" — {escape(state.decision.note)}" if state.decision.note else ""
        console.print(f"  decision: {word} at {state.decided_at}{note}")
    console.print("  calls in the parked round:")
    for row in call_rows(state, 200):
        console.print(f"    {escape(f'[{row.verdict}]')} {escape(row.title)}{escape(row.outcome)}")
    console.print(f"  conversation: {len(state.messages)} messages (--json shows them all)")
