"""Chat progress: the run's progress lines, plus the model's words rendered as Markdown while
they stream in (a live region that settles into the final text)."""

from __future__ import annotations

from typing import Any

from rich.live import Live

from butler_cli.core.messages import ToolResultBlock, ToolUseBlock
from butler_cli.core.provider import ModelResponse
from butler_cli.repl.scrolling import settle
from butler_cli.repl.ticker import Ticker
from butler_cli.ui.markup import markdown
from butler_cli.ui.progress import Progress


class Wrapped:
    """A renderable wrapped at the screen's width, between words (a word longer than the
    line is folded, never cropped). The chat's console soft-wraps — the terminal folds what
    it prints, mid-word ("no que/stions" at 80 columns) — so the model's words go through
    this, in the live region (which must know its height) and once settled alike."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __rich_console__(self, console: Any, options: Any) -> Any:
        yield from console.render(self.inner, options.update(no_wrap=False, overflow="fold"))


class LiveAnswer:
    """The streaming answer in the live region, made into Markdown only when rich draws it
    (12 times a second), from the text as it stands then: building the Markdown for every
    streamed piece (a parse of the whole region each time) made a 2,000-token answer take
    several times longer on the screen than the stream itself."""

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self._made: tuple[str, Any] | None = None

    def __rich_console__(self, console: Any, options: Any) -> Any:
        text = "".join(self.pieces)
        if self._made is None or self._made[0] != text:
            self._made = (text, markdown(text))
        yield from Wrapped(self._made[1]).__rich_console__(console, options)


class ChatProgress(Progress):
    def __init__(self, console: Any) -> None:
        super().__init__(console)
        self._live: Live | None = None
        self._buffer: list[str] = []
        self._line_len = 0  # the length of the answer's last line so far
        #: True when the last answer was already shown while it streamed.
        self.streamed = False
        #: The titles of the tools running now (or cut short by Ctrl-C), for the stop line:
        #: the benign calls of a round run side by side.
        self._running: dict[int, str] = {}
        self._ticker = Ticker(self._write)
        self._terminal = console.is_terminal

    def model_started(self) -> None:
        self.streamed = False
        self._buffer = []
        self._line_len = 0
        super().model_started()

    def model_text(self, delta: str) -> None:
        if self._live is None:
            self.hide_spinner()  # the spinner gives way to the words
            self._live = Live(
                LiveAnswer(self._buffer),
                console=self.console,
                refresh_per_second=12,
                transient=False,
            )
            self._live.start()
        self._buffer.append(delta)
        width, height = self.console.size
        if "\n" not in delta:  # only the last line grew: settle only when it wraps anew
            rows_before = self._line_len // max(width, 1)
            self._line_len += len(delta)
            if self._line_len // max(width, 1) == rows_before and len(self._buffer) > 1:
                return
        else:
            self._line_len = len(delta) - delta.rfind("\n") - 1
        text = "".join(self._buffer)
        cut = settle(text, width, height)
        if cut is not None:  # too tall to show whole: print the settled part for good
            settled, text = cut
            # Printed while the live region is empty (a print redraws the region below it):
            # it shows the rest again at its next refresh, a twelfth of a second later.
            self._buffer.clear()
            self.console.print(Wrapped(markdown(settled)), "")
            self._buffer.append(text)  # the live answer reads this very list

    def model_finished(self, response: ModelResponse) -> None:
        streaming = self._live is not None
        self._end_live()
        self.hide_spinner()
        self.streamed = streaming
        if not streaming and response.is_tool_round and response.text:
            self.console.print(Wrapped(markdown(response.text)))

    def model_failed(self, message: str) -> None:
        self._end_live()  # what streamed before the failure stays on the screen
        self.hide_spinner()

    @property
    def running(self) -> list[str]:
        """The titles of the tools running now, in the order they started."""
        return list(self._running.values())

    def forget_running(self) -> None:
        self._running.clear()

    def tool_started(self, call: ToolUseBlock) -> None:
        title = self.title(call)
        self._running[id(call)] = title
        if not self._terminal:
            return
        if len(self._running) == 1:
            self._ticker.start(title)
        else:
            self._ticker.retitle(self._label())

    def tool_finished(self, call: ToolUseBlock, result: ToolResultBlock, seconds: float) -> None:
        self._running.pop(id(call), None)
        if not self._running:
            self._ticker.stop()
            super().tool_finished(call, result, seconds)
            return
        self._ticker.retitle(self._label())
        self._ticker.above(lambda: super(ChatProgress, self).tool_finished(call, result, seconds))

    def _label(self) -> str:
        first, *more = self._running.values()
        return f"{first} and {len(more)} more" if more else first

    def stop(self) -> None:
        """End the spinner, the running tool's line and any live region (also when a stream
        broke off or Ctrl-C cut a tool short; ``running`` then still names that tool)."""
        self._ticker.close()
        super().stop()
        self._end_live()

    def _end_live(self) -> None:
        if self._live is not None:
            self._live.update(Wrapped(markdown("".join(self._buffer))))
            self._live.stop()
            self._live = None
        self._buffer = []
