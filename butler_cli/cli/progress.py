"""Live progress on stderr while the loop works: a spinner, one line per tool call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape

from butler_cli.core.gate import default_title
from butler_cli.core.loop import LoopObserver
from butler_cli.core.messages import ToolResultBlock, ToolUseBlock
from butler_cli.core.provider import ModelResponse
from butler_cli.core.verdicts import Verdict


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
