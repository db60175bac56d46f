"""Rendering for the terminal: progress on stderr, results on stdout, JSON for scripts.

rich honours ``NO_COLOR`` and plain (non-terminal) output by itself.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape

from butler_cli.app.report import TaskReport
from butler_cli.core.gate import default_title
from butler_cli.core.loop import LoopObserver
from butler_cli.core.messages import ToolResultBlock, ToolUseBlock
from butler_cli.core.park import ParkState
from butler_cli.core.provider import ModelResponse
from butler_cli.core.verdicts import Verdict
from butler_cli.store.parks import ParkSummary


def out() -> Console:
    return Console(highlight=False, soft_wrap=True)


def err() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def warn(message: str) -> None:
    """One line on stderr, prefixed like every butler message; never read as markup."""
    err().print(f"butler: {escape(message)}")


def print_json_line(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


class Progress(LoopObserver):
    """One compact stderr line per tool call (ran / refused / failed) and a waiting spinner."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._status: Any = None
        self._verdicts: dict[str, Verdict] = {}

    def model_started(self) -> None:
        if self.console.is_terminal:
            self._status = self.console.status("thinking…")
            self._status.start()

    def model_finished(self, response: ModelResponse) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def round_classified(
        self, calls: Sequence[ToolUseBlock], verdicts: dict[str, Verdict], park_id: str | None
    ) -> None:
        self._verdicts = dict(verdicts)

    def tool_finished(self, call: ToolUseBlock, result: ToolResultBlock, seconds: float) -> None:
        verdict = self._verdicts.get(call.id)
        if verdict is not None and verdict.decision == "refuse" and result.is_error:
            mark, word = "[red]✗[/red]", "refused"
        elif result.is_error:
            mark, word = "[yellow]![/yellow]", "error"
        else:
            mark, word = "[green]✓[/green]", "ran"
        title = escape(default_title(call.name, dict(call.input)))
        self.console.print(f"  {mark} {title} — {word} [dim]{seconds * 1000:.0f} ms[/dim]")


def task_header(console: Console, index: int, total: int, task: str) -> None:
    if total > 1:
        console.print(f"[bold]▶ task {index + 1}/{total}:[/bold] {escape(task)}")


def report(rep: TaskReport, as_json: bool) -> None:
    """Print one task's result: a JSON line, or text (answer on stdout, troubles on stderr)."""
    if as_json:
        print_json_line(rep.to_json())
        return
    stdout = out()
    if rep.text:
        stdout.print(escape(rep.text))
    if rep.status == "parked" and rep.approval is not None:
        park_id = rep.park_id
        stdout.print(f"⏸ parked {park_id}: {escape(rep.approval['title'])}")
        stdout.print(f"  why: {escape(rep.approval['reason'])}")
        stdout.print(f'  decide: butler resume {park_id} --approve   (or --deny --note "…")')
    elif rep.status == "failed":
        err().print(f"[red]✗ failed:[/red] {escape(rep.error or 'unknown error')}")
    elif rep.status == "limit":
        err().print("[yellow]stopped at the round limit[/yellow] (raise it with --max-rounds)")


def approval_panel(console: Console, state: ParkState) -> None:
    """The parked action as a person should see it before deciding: tool, title, reason, args."""
    call = next((c for c in state.calls if c.id == state.approval.call_id), None)
    args = json.dumps(call.input if call else {}, indent=2, ensure_ascii=False)
    console.print(f"[bold]Park {state.id}[/bold] — task: {escape(state.context.task)}")
    console.print(f"  tool:   {escape(state.approval.tool)}")
    console.print(f"  action: {escape(state.approval.title)}")
    console.print(f"  why:    {escape(state.approval.reason)}")
    console.print("  arguments:")
    for line in args.splitlines():
        console.print(f"    {escape(line)}")


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
    for call in state.calls:
        raw = state.verdicts.get(call.id)
        verdict = f"{raw['decision']}" if raw else "benign"
        result = state.results.get(call.id)
        outcome = ""
        if result is not None:
            outcome = " → " + ("error: " if result.is_error else "") + result.content[:200]
        console.print(
            f"    {escape(f'[{verdict}]')} {escape(default_title(call.name, dict(call.input)))}"
            f"{escape(outcome)}"
        )
    console.print(f"  conversation: {len(state.messages)} messages (--json shows them all)")


def pending_table(console: Console, rows: Sequence[ParkSummary]) -> None:
    if not rows:
        console.print("No parks awaiting a decision.")
        return
    for row in rows:
        console.print(f"[bold]{row.id}[/bold]  {row.created_at}  {escape(row.title)}")
        console.print(f"          task: {escape(row.task)}")
        console.print(f"          why:  {escape(row.reason)}")
    console.print(f"{len(rows)} awaiting a decision — butler resume ID --approve | --deny")
