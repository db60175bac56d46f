"""Chat progress: the run's progress lines plus what the model says while it works."""

from __future__ import annotations

from rich.markdown import Markdown

from butler_cli.cli.progress import Progress
from butler_cli.core.provider import ModelResponse


class ChatProgress(Progress):
    def model_finished(self, response: ModelResponse) -> None:
        super().model_finished(response)
        if response.is_tool_round and response.text:
            self.console.print(Markdown(response.text))
