"""Chat progress: the run's progress lines, plus the model's words rendered as Markdown while
they stream in (``ui.stream.MarkdownStream``)."""

from __future__ import annotations

from typing import Any

from butler_cli.core.messages import ToolResultBlock, ToolUseBlock
from butler_cli.core.provider import ModelResponse
from butler_cli.repl.ticker import Ticker
from butler_cli.ui.markup import markdown
from butler_cli.ui.progress import Progress
from butler_cli.ui.stream import MarkdownStream, Wrapped


class ChatProgress(Progress):
    def __init__(self, console: Any, *, parked_lines: bool = True) -> None:
        super().__init__(console, parked_lines=parked_lines)
        self._stream: MarkdownStream | None = None
        #: True when the last answer was already shown while it streamed.
        self.streamed = False
        #: The titles of the tools running now (or cut short by Ctrl-C), for the stop line:
        #: the benign calls of a round run side by side.
        self._running: dict[int, str] = {}
        self._ticker = Ticker(self._write, lambda: self.console.width)
        self._terminal = console.is_terminal

    def model_started(self) -> None:
        self.streamed = False
        super().model_started()

    def model_text(self, delta: str) -> None:
        if self._stream is None:
            self.hide_spinner()  # the spinner gives way to the words
            self._stream = MarkdownStream(self.console)
        self._stream.feed(delta)

    def model_finished(self, response: ModelResponse) -> None:
        streaming = self._stream is not None
        self._end_live()
        self.hide_spinner()
        self.streamed = streaming
        if not streaming and response.is_tool_round and response.text:
            self.console.print(Wrapped(markdown(response.text)))

    def answer(self, text: str) -> None:
        """A final answer that did not stream, rendered as the streamed one is."""
        self.console.print(Wrapped(markdown(text)))

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
        if self._stream is not None:
            self._stream.close()
            self._stream = None
