"""``butler show``: one park in full, read-only — its waiting calls rendered from the park's one
view (``app.parks.PendingApproval``): every call of the round that needs a person, each with
its arguments (masked) and the change it makes, as plain ``-``/``+`` lines, never cropped.
Apart from ``pending`` because it reads the park's models and draws with rich, which listing
the parks never needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from butler_cli.app.parks.decisions import load_park
from butler_cli.app.parks.parks import PendingApproval, pending_approval
from butler_cli.cli import render
from butler_cli.cli.completion import any_park_ids
from butler_cli.cli.options import Json
from butler_cli.core.errors import ParkNotFound
from butler_cli.core.park import ParkState
from butler_cli.ui.approval import diff_style
from butler_cli.ui.markup import safe as escape
from butler_cli.ui.parks import call_rows
from butler_cli.ui.text import pretty_json

if TYPE_CHECKING:  # `show --json` draws nothing, so it loads no rich
    from rich.console import Console


def show(
    park_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="Park id or a unique prefix.", autocompletion=any_park_ids
        ),
    ],
    json_out: Json = False,
) -> None:
    """Show one park in full: status, approval, calls, verdicts, decision, results, messages."""
    try:
        state = load_park(park_id)
    except ParkNotFound as exc:  # `butler show me`: the words were perhaps a task
        raise ParkNotFound(
            f'{exc}; to ask the butler, quote the words: butler "show {park_id}"'
        ) from None
    if json_out:  # the exact arguments, as the park keeps them
        render.print_json(state.model_dump(mode="json"))
    else:
        park_details(render.out(), state, pending_approval(state))


def waiting_calls(console: Console, view: PendingApproval) -> None:
    """Every call the park asks a person about, in the model's order. Every model-chosen
    value is neutralised; lines are long, never cut (the terminal wraps)."""
    console.print(f"[bold]Park {view.id}[/bold] — task: {escape(view.task)}")
    count = len(view.calls)
    for number, call in enumerate(view.calls, 1):
        if count > 1:
            console.print(f"  [bold]action {number} of {count}[/bold]")
        console.print(f"  tool:   {escape(call.tool)}")
        console.print(f"  action: {escape(call.title)}")
        console.print(f"  why:    {escape(call.reason)}")
        console.print("  arguments:")
        for line in pretty_json(call.arguments).splitlines():
            console.print(f"    {escape(line, lines=True)}")
        if call.preview:
            console.print("  change:")
            for line in call.preview:
                console.print(f"    {escape(line)}", style=diff_style(line), highlight=False)


def park_details(console: Console, state: ParkState, view: PendingApproval) -> None:
    """``butler show``: the whole park in text."""
    waiting_calls(console, view)
    console.print(f"  status: {view.status}   created: {view.created_at}")
    console.print(f"  model:  {escape(view.model)}   policy: {escape(view.policy)}")
    if view.parent:
        console.print(f"  continues park {view.parent}")
    if state.decision is not None:
        decided = state.decided_calls()
        for call in view.calls:
            decision = decided.get(call.call_id)
            if decision is None:
                continue
            word = "approved" if decision.approved else "denied"
            note = f" — {escape(decision.note)}" if decision.note else ""
            which = f" {escape(call.title)}" if len(view.calls) > 1 else ""
            console.print(f"  decision:{which} {word} at {state.decided_at}{note}")
    console.print("  calls in the parked round:")
    for row in call_rows(state, 200):
        console.print(f"    {escape(f'[{row.verdict}]')} {escape(row.title)}{escape(row.outcome)}")
    console.print(f"  conversation: {len(state.messages)} messages (--json shows them all)")
