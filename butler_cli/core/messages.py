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


class ToolResultBlock(BaseModel):
    """The one answer to one tool call (spec L7)."""

    model_config = ConfigDict(frozen=True)
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str
    is_error: bool = False


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


def error_result(call_id: str, message: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=call_id, content=message, is_error=True)
