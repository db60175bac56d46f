"""Typed conversation messages. This JSON is what park files and ``--json`` output carry."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class TextBlock(BaseModel):
    model_config = ConfigDict(frozen=True)
    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(BaseModel):
    """One tool call the model asked for."""

    model_config = ConfigDict(frozen=True)
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


#: What became of a call: it ran; it ran and failed; the policy refused it; it was not run
#: (declined, needs its own approval, malformed, no approval on record); or the process stopped
#: while it was running and it was not run again.
ToolOutcome = Literal["ran", "failed", "refused", "not_run", "unknown"]


class ToolResultBlock(BaseModel):
    """The one answer to one tool call (spec L7). ``outcome`` says what became of the call, so
    nothing has to parse it back from the text the model reads."""

    model_config = ConfigDict(frozen=True)
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str
    is_error: bool = False
    outcome: ToolOutcome = "ran"


Block = Annotated[TextBlock | ToolUseBlock | ToolResultBlock, Field(discriminator="type")]


class Message(BaseModel):
    """A user or assistant turn; tool results travel in a user turn."""

    model_config = ConfigDict(frozen=True)
    role: Literal["user", "assistant"]
    content: list[Block]

    @classmethod
    def user_text(cls, text: str) -> Message:
        return cls(role="user", content=[TextBlock(text=text)])

    @property
    def text(self) -> str:
        """The text blocks joined; empty when there are none."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]


def error_result(call_id: str, message: str, outcome: ToolOutcome = "failed") -> ToolResultBlock:
    """An error result: the call failed (the default) or, with ``outcome``, did not run."""
    return ToolResultBlock(tool_use_id=call_id, content=message, is_error=True, outcome=outcome)
