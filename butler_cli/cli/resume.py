"""``butler resume ID``: decide a parked task and continue it in this process."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Annotated

import click
import typer

from butler_cli.app.chat.conversations import of_park
from butler_cli.app.config.options import RunOptions
from butler_cli.app.parks.decisions import load_park
from butler_cli.app.parks.door import Answer, decide
from butler_cli.app.parks.parks import pending_approval
from butler_cli.app.run.report import exit_code_for
from butler_cli.cli.completion import park_ids
from butler_cli.cli.options import Json, Output, output_format, run_options
from butler_cli.cli.render import out
from butler_cli.cli.stream import Printer
from butler_cli.core.errors import ExitCode, UsageError
from butler_cli.core.park import Decision, ParkState
from butler_cli.ui import choices
from butler_cli.ui.approval import panel
from butler_cli.ui.console import lines_wrapped
from butler_cli.ui.pager import page
from butler_cli.ui.text import visible

if TYPE_CHECKING:
    from butler_cli.core.loop import LoopObserver


@run_options()
def resume(
    park_id: Annotated[
        str,
        typer.Argument(metavar="ID", help="Park id or a unique prefix.", autocompletion=park_ids),
    ],
    approve: Annotated[
        bool,
        typer.Option("--approve", help="Run the parked actions (every one the round asks)."),
    ] = False,
    deny: Annotated[
        bool, typer.Option("--deny", help="Run none of them; the model is told.")
    ] = False,
    note: Annotated[
        str | None, typer.Option("--note", help="A note the model sees with your decision.")
    ] = None,
    json_out: Json = False,
    output: Output = None,
    *,
    opts: RunOptions,
) -> None:
    """Record your decision on a parked task, then continue it (same output as `run`).

    A round may hold several actions that wait for you: --approve and --deny answer every
    one. Without them, on a terminal, it shows each action and asks (all of them, or each in
    turn); with no terminal that is a usage error and nothing changes. Model and policy
    default to the ones the park was made with; the policy is asked again before the action
    runs."""
    started = time.perf_counter()
    fmt = output_format(output, json_out)
    if approve and deny:
        raise UsageError("choose one of --approve and --deny")
    decision: bool | None = True if approve else False if deny else None
    answer = Answer(decision, note)
    if decision is None:
        # Read once to be shown; the one door reads it again under its lock and refuses the
        # decision if someone else decided it in between (nothing is then kept or run).
        state = load_park(park_id)
        # A decided park needs no new decision: resuming it recovers a crashed run.
        if state.status == "pending":
            if fmt != "text" or not (sys.stdin.isatty() and sys.stdout.isatty()):
                raise UsageError(
                    f"no decision given: butler resume {park_id} --approve (or --deny); "
                    "nothing was changed"
                )
            answer = _ask(state, note)
    printers: list[Printer] = []

    def observer_for(state: ParkState) -> LoopObserver | None:
        """The progress display, for the park as the door holds it (read once)."""
        printers.append(Printer(fmt, started, 1, resumed=state.id))
        conversation = of_park(state.id)  # creates nothing
        return printers[0].observer_for(0, state.context.task, conversation)

    rep = decide(park_id, answer, opts=opts, observer_for=observer_for).report
    printer = printers[0]
    printer.report(rep)
    raise typer.Exit(int(exit_code_for([rep])))


def _ask(state: ParkState, note: str | None) -> Answer:
    """Show every parked action of the round — each argument whole, a screenful at a time
    when it is taller than the screen — and ask: one action, yes or no; several, all of them
    (every one was shown) or each in turn. Enter alone repeats the question; Ctrl-C or end of
    input means "later": the park stays as it is (exit 3)."""
    console = out()

    def read_line(question: str) -> str:
        return str(click.prompt(question, default="", show_default=False, prompt_suffix=""))

    def note_for_model() -> str | None:
        if note is not None:
            return note
        text = typer.prompt("Note for the model (optional)", default="", show_default=False)
        return text.strip() or None

    view = pending_approval(state)
    asked = [c.call_id for c in view.calls]

    def pick(menu: choices.Menu) -> str:
        """Ask until one of ``menu``'s keys: ``?`` explains each, anything else is said."""
        lines_wrapped(console, menu.legend)
        while True:
            answer = read_line(menu.prompt)
            choice = menu.pick(answer)
            if choice is not None:
                return choice
            said = menu.help() if answer.strip() == "?" else menu.unknown(visible(answer))
            lines_wrapped(console, said, 5 if answer.strip() == "?" else 4)

    try:
        for cid in asked:
            page(console, read_line, panel(view, whole=True, call_id=cid))
        if len(asked) > 1:
            choice = pick(choices.several(len(asked), later=False))
            if choice == "y":
                return Answer(True, note)
            if choice == "n":
                return Answer(False, note_for_model())
        each: dict[str, Decision] = {}
        for number, cid in enumerate(asked, 1):
            if len(asked) > 1:
                page(console, read_line, panel(view, whole=True, call_id=cid))
            which = f" (action {number} of {len(asked)})" if len(asked) > 1 else ""
            if pick(choices.yes_or_no(which)) == "y":
                each[cid] = Decision(approved=True)
            else:
                each[cid] = Decision(approved=False, note=note_for_model())
        return Answer(each=each)
    except (click.exceptions.Abort, EOFError):
        console.print(f"\nLeft parked; decide later with: butler resume {state.id}")
        raise typer.Exit(ExitCode.PARKED) from None
