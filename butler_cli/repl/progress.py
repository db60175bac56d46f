"""Chat progress: the run's progress lines, plus the model's words rendered as Markdown while
they stream in (a live region that settles into the final text)."""

from __future__ import annotations

from typing import Any

from rich.live import Live

from butler_cli.core.provider import ModelResponse
from butler_cli.ui.markup import markdown
from butler_cli.ui.progress import Progress


class ChatProgress(Progress):
    def __init__(self, console: Any) -> None:
        super().__init__(console)
        self._live: Live | None = None
        self._buffer: list[str] = []
        #: True when the last answer was already shown while it streamed.
        self.streamed = False

    def model_started(self) -> None:
        self.streamed = False
        self._buffer = []
        super().model_started()

    def model_text(self, delta: str) -> None:
        if self._live is None:
            self.hide_spinner()  # the spinner gives way to the words
            self._live = Live(console=self.console, refresh_per_second=12, transient=False)
            self._live.start()
        self._buffer.append(delta)
        self._live.update(markdown("".join(self._buffer)))

    def model_finished(self, response: ModelResponse) -> None:
        streaming = self._live is not None
        self._end_live()
        self.hide_spinner()
        self.streamed = streaming
        if not streaming and response.is_tool_round and response.text:
            self.console.print(markdown(response.text))

    def model_failed(self, message: str) -> None:
        self._end_live()  # what streamed before the failure stays on the screen
        self.hide_spinner()

    def stop(self) -> None:
        """End the spinner and any live region (also when a stream broke off)."""
        super().stop()
        self._end_live()

    def _end_live(self) -> None:
        if self._live is not None:
            self._live.update(markdown("".join(self._buffer)))
            self._live.stop()
            self._live = None
