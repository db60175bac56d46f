"""Live progress while the loop works: a spinner, one line per tool call (stderr for `run` and
`resume`; the chat's console for the chat, which adds its streamed Markdown on top).

A tool line is rendered once into the console's own colours and written as one string: no
layout per line, no refresh thread per model call (see ``ui.spinner``)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from butler_cli.app.run.masking import secrets_by_name_hidden as redact
from butler_cli.core.gate import default_title
from butler_cli.core.loop import LoopObserver
from butler_cli.core.messages import ToolResultBlock, ToolUseBlock
from butler_cli.core.provider import ModelResponse
from butler_cli.core.verdicts import Verdict
from butler_cli.ui.spinner import FRAMES, Spinner
from butler_cli.ui.text import visible


class Progress(LoopObserver):
    """One compact stderr line per tool call (ran / refused / failed) and a waiting spinner."""

    def __init__(self, console: Console, *, parked_lines: bool = True) -> None:
        self.console = console
        #: A line per parked call (off where what follows names each one anyway: `run`'s
        #: report on a terminal).
        self.parked_lines = parked_lines
        self._marks: dict[str, str] = {}  # markup → the same, rendered for this console
        self._spinner: Spinner | None = None
        #: The last call's title: the chat shows it while the tool runs, then on its line.
        self._titled: tuple[ToolUseBlock, str] | None = None
        if console.is_terminal:
            frames = [
                self._rendered(f"[status.spinner]{f}[/status.spinner] thinking…") for f in FRAMES
            ]
            self._spinner = Spinner(self._write, frames)

    def model_started(self) -> None:
        if self._spinner is not None:
            self._spinner.show()

    def model_finished(self, response: ModelResponse) -> None:
        self.hide_spinner()

    def model_failed(self, message: str) -> None:
        self.hide_spinner()  # the failure is printed next, on a line of its own

    def hide_spinner(self) -> None:
        """Erase the spinner's line; its thread waits for the next model call of the turn."""
        if self._spinner is not None:
            self._spinner.hide()

    def stop(self) -> None:
        """Stop the spinner, if one is showing (also after a cancelled model call)."""
        if self._spinner is not None:
            self._spinner.stop()

    def round_classified(
        self, calls: Sequence[ToolUseBlock], verdicts: dict[str, Verdict], park_id: str | None
    ) -> None:
        if park_id is None:
            for call in calls:  # one line for each call a kept approval let run unasked
                verdict = verdicts.get(call.id)
                if verdict is not None and verdict.kept is not None:
                    self._line(
                        f"  {self.title(call)} — runs without asking: kept approval "
                        f"{verdict.kept} (/grants shows it)\n"
                    )
            return
        if not self.parked_lines:
            return
        mark = self._rendered("[cyan]⏸[/cyan]")
        for call in calls:  # nothing in a parked round has run
            title = self.title(call)
            self._line(f"  {mark} {title} — parked ({park_id})\n")

    def tool_finished(self, call: ToolUseBlock, result: ToolResultBlock, seconds: float) -> None:
        mark, word = outcome_label(result)
        title = self.title(call)
        took = self._rendered("[dim]\x00[/dim]").replace("\x00", f"{seconds * 1000:.0f} ms")
        self._line(f"  {self._rendered(mark)} {title} — {word} {took}\n")

    def title(self, call: ToolUseBlock) -> str:
        """The call's title for the screen: what it acts on, the rest cut short (the approval
        box and ``d`` show it whole); secrets masked, neutralised, made once a call."""
        if self._titled is not None and self._titled[0] is call:
            return self._titled[1]
        title = visible(default_title(call.name, redact(dict(call.input)), brief=True))
        self._titled = (call, title)
        return title

    def _rendered(self, markup: str) -> str:
        """``markup`` as this console would write it (its colours, or none), made once."""
        done = self._marks.get(markup)
        if done is None:
            with self.console.capture() as captured:
                self.console.print(markup, end="", highlight=False, emoji=False)
            done = self._marks[markup] = captured.get()
        return done

    def _line(self, text: str) -> None:
        text = self._fitted(text)
        if self._spinner is not None:
            self._spinner.line(text)
        else:
            self._write(text)

    def _fitted(self, text: str) -> str:
        """A line wider than the terminal wrapped between words, its later lines under the
        title (``  ✓ ``): the terminal would fold it mid-word. Piped, it stays whole; a line
        that fits (the usual one) is written as it was made."""
        width = self.console.width
        if not self.console.is_terminal or len(text) <= width:
            return text
        from rich.text import Text

        line = Text.from_ansi(text.rstrip("\n"))
        if line.cell_len <= width:
            return text
        indent = min(len(line.plain) - len(line.plain.lstrip()) + 2, width // 2)
        rows = line.wrap(self.console, width - indent, overflow="fold")
        with self.console.capture() as captured:
            for number, row in enumerate(rows):
                row.rstrip()
                self.console.print(
                    Text(" " * indent if number else "") + row, soft_wrap=True, crop=False
                )
        return captured.get()

    def _write(self, text: str) -> None:
        file = self.console.file
        file.write(text)
        file.flush()


_LABELS = {
    "ran": ("[green]✓[/green]", "ran"),
    "refused": ("[red]✗[/red]", "refused"),
    "not_run": ("[yellow]–[/yellow]", "not run"),
    "unknown": ("[yellow]?[/yellow]", "outcome unknown"),
    "failed": ("[yellow]![/yellow]", "error"),
}


def outcome_label(result: ToolResultBlock) -> tuple[str, str]:
    """A mark and a word for what became of a call: ran, refused, not run, unknown, error."""
    return _LABELS[result.outcome]
