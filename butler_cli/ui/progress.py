"""Live progress while the loop works: a spinner, one line per tool call (stderr for `run` and
`resume`; the chat's console for the chat, which adds its streamed Markdown on top)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console

from butler_cli.core.gate import default_title
from butler_cli.core.loop import LoopObserver
from butler_cli.core.messages import ToolResultBlock, ToolUseBlock
from butler_cli.core.park import NOT_RUN_PREFIX, OUTCOME_UNKNOWN, REFUSED_PREFIX
from butler_cli.core.provider import ModelResponse
from butler_cli.core.verdicts import Verdict
from butler_cli.tools.redact import redact
from butler_cli.ui.markup import safe as escape


class Progress(LoopObserver):
    """One compact stderr line per tool call (ran / refused / failed) and a waiting spinner."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._status: Any = None

    def model_started(self) -> None:
        if self.console.is_terminal:
            self._status = self.console.status("thinking…")
            self._status.start()

    def model_finished(self, response: ModelResponse) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the spinner, if one is showing (also after a cancelled model call)."""
        if self._status is not None:
            self._status.stop()
            self._status = None

    def round_classified(
        self, calls: Sequence[ToolUseBlock], verdicts: dict[str, Verdict], park_id: str | None
    ) -> None:
        if park_id is None:
            return
        for call in calls:  # nothing in a parked round has run
            title = escape(default_title(call.name, redact(dict(call.input))))
            self.console.print(f"  [cyan]⏸[/cyan] {title} — parked ({park_id})")

    def tool_finished(self, call: ToolUseBlock, result: ToolResultBlock, seconds: float) -> None:
        mark, word = outcome_label(result)
        title = escape(default_title(call.name, redact(dict(call.input))))
        self.console.print(f"  {mark} {title} — {word} [dim]{seconds * 1000:.0f} ms[/dim]")


def outcome_label(result: ToolResultBlock) -> tuple[str, str]:
    """A mark and a word for what became of a call: ran, refused, not run, unknown, error."""
    if not result.is_error:
        return "[green]✓[/green]", "ran"
    if result.content.startswith(REFUSED_PREFIX):
        return "[red]✗[/red]", "refused"
    if result.content.startswith(NOT_RUN_PREFIX):
        return "[yellow]–[/yellow]", "not run"
    if result.content == OUTCOME_UNKNOWN:
        return "[yellow]?[/yellow]", "outcome unknown"
    return "[yellow]![/yellow]", "error"
