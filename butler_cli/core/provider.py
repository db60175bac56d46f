"""The provider protocol: what the loop sends a model and what it gets back.

Real providers (OpenAI-compatible, Anthropic) and the scripted test model implement
:class:`Provider`. Request and response are plain dataclasses so a round never copies the
conversation: the request holds a reference to the loop's own message list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from butler_cli.core.messages import Message, ToolUseBlock

StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal"]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as the model sees it: name, description, JSON-Schema input."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolDefinition]
    #: Streaming providers call this with each piece of text as it arrives (display only).
    on_text: Callable[[str], None] | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one model call used. A server that does not report them leaves them ``None``:
    unknown, never shown or counted as 0."""

    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @classmethod
    def unknown(cls) -> Usage:
        """The usage of a call whose server did not report it."""
        return cls(None, None)

    @property
    def known(self) -> bool:
        return self.input_tokens is not None or self.output_tokens is not None

    def to_dict(self) -> dict[str, int | None]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens if self.known else None,
            "cache_write_tokens": self.cache_write_tokens if self.known else None,
        }


@dataclass(frozen=True, slots=True)
class ModelResponse:
    text: str = ""
    tool_calls: Sequence[ToolUseBlock] = ()
    stop_reason: StopReason = "end_turn"
    usage: Usage = field(default_factory=Usage)
    #: Calls the provider could not read (bad JSON in the arguments, say): the call's position
    #: in ``tool_calls`` → what is wrong. By position, not id: ids come from the model and may
    #: repeat. They are answered with an error result and never run.
    malformed: Mapping[int, str] = field(default_factory=dict)
    #: What the person is told about how this answer came (one line each): a stream that
    #: held nothing and was asked again whole, say.
    warnings: tuple[str, ...] = ()

    @property
    def is_tool_round(self) -> bool:
        """Spec L2: a round only if it asks for a call *and* stopped for tool use."""
        return bool(self.tool_calls) and self.stop_reason == "tool_use"


class Provider(Protocol):
    """A model behind a wire format. Raises :class:`~butler_cli.core.errors.ModelError`."""

    def complete(self, request: ModelRequest) -> ModelResponse: ...
