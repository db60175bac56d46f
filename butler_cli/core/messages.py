"""Typed conversation messages. This JSON is what park files and ``--json`` output carry.

Plain frozen dataclasses, not pydantic models: a round builds several of them, and a run that
never parks loads no pydantic at all. What comes from outside (a park file, a saved
conversation) is read through :meth:`Message.from_dict`, which checks every field and raises
``ValueError`` naming the first thing that is wrong. What a provider sends is checked where it
arrives (:func:`model_call`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args


@dataclass(frozen=True, slots=True, kw_only=True)
class TextBlock:
    type: Literal["text"] = field(default="text", init=False)
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseBlock:
    """One tool call the model asked for."""

    type: Literal["tool_use"] = field(default="tool_use", init=False)
    id: str
    name: str
    input: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": dict(self.input)}


#: What became of a call: it ran; it ran and failed; the policy refused it; it was not run
#: (declined, needs its own approval, malformed, no approval on record); or the process stopped
#: while it was running and it was not run again.
ToolOutcome = Literal["ran", "failed", "refused", "not_run", "unknown"]
_OUTCOMES: frozenset[str] = frozenset(get_args(ToolOutcome))


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultBlock:
    """The one answer to one tool call (spec L7). ``outcome`` says what became of the call, so
    nothing has to parse it back from the text the model reads."""

    type: Literal["tool_result"] = field(default="tool_result", init=False)
    tool_use_id: str
    content: str
    is_error: bool = False
    outcome: ToolOutcome = "ran"

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "tool_result",
            "tool_use_id": self.tool_use_id,
            "content": self.content,
            "is_error": self.is_error,
            "outcome": self.outcome,
        }


Block = TextBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """A user or assistant turn; tool results travel in a user turn."""

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

    def to_dict(self) -> dict[str, Any]:
        """The message as JSON: the shape park files, saved conversations and ``--json``
        carry (each block with its ``type``)."""
        return {"role": self.role, "content": [b.to_dict() for b in self.content]}

    @classmethod
    def from_dict(cls, raw: object) -> Message:
        """A message from untrusted JSON; ``ValueError`` naming the first field that is wrong.
        Keys it does not know are ignored, as they always were."""
        if isinstance(raw, Message):
            return raw
        data = _object(raw, "message")
        role = data.get("role")
        if role not in ("user", "assistant"):
            raise ValueError(f"message: 'role' must be 'user' or 'assistant', not {role!r}")
        content = data.get("content")
        if not isinstance(content, list):
            raise ValueError("message: 'content' must be a list of blocks")
        blocks = [block_from_dict(b, f"message content[{i}]") for i, b in enumerate(content)]
        return cls(role=role, content=blocks)


def block_from_dict(raw: object, where: str = "block") -> Block:
    """One block from untrusted JSON, by its ``type``; ``ValueError`` if anything is wrong."""
    if isinstance(raw, TextBlock | ToolUseBlock | ToolResultBlock):
        return raw
    data = _object(raw, where)
    kind = data.get("type")
    if kind == "text":
        return TextBlock(text=_str(data, "text", where))
    if kind == "tool_use":
        return tool_use_from_dict(data, where)
    if kind == "tool_result":
        return tool_result_from_dict(data, where)
    raise ValueError(f"{where}: unknown block type {kind!r}")


def tool_use_from_dict(raw: object, where: str = "tool call") -> ToolUseBlock:
    """A saved tool call from untrusted JSON (its ``type`` may be left out)."""
    if isinstance(raw, ToolUseBlock):
        return raw
    data = _object(raw, where)
    _type_is(data, "tool_use", where)
    return model_call(_str(data, "id", where), _str(data, "name", where), data.get("input"), where)


def tool_result_from_dict(raw: object, where: str = "tool result") -> ToolResultBlock:
    """A saved tool result from untrusted JSON (its ``type`` may be left out; a missing
    ``is_error`` is False and a missing ``outcome`` is "ran", as results were first written)."""
    if isinstance(raw, ToolResultBlock):
        return raw
    data = _object(raw, where)
    _type_is(data, "tool_result", where)
    is_error = data.get("is_error", False)
    if not isinstance(is_error, bool):
        raise ValueError(f"{where}: 'is_error' must be true or false")
    outcome = data.get("outcome", "ran")
    if outcome not in _OUTCOMES:
        raise ValueError(f"{where}: 'outcome' must be one of {', '.join(sorted(_OUTCOMES))}")
    return ToolResultBlock(
        tool_use_id=_str(data, "tool_use_id", where),
        content=_str(data, "content", where),
        is_error=is_error,
        outcome=outcome,
    )


def model_call(
    call_id: object, name: object, arguments: object, where: str = "tool call"
) -> ToolUseBlock:
    """A tool call as a provider (or a file) hands it over, checked: the id and name are text,
    the arguments a JSON object with text keys. ``ValueError`` otherwise (a provider's answer
    that is not a call at all; arguments that are merely bad JSON are the provider's to mark
    malformed before this)."""
    if not isinstance(call_id, str):
        raise ValueError(f"{where}: 'id' must be text")
    if not isinstance(name, str):
        raise ValueError(f"{where}: 'name' must be text")
    if not isinstance(arguments, dict) or not all(isinstance(k, str) for k in arguments):
        raise ValueError(f"{where}: 'input' must be a JSON object")
    return ToolUseBlock(id=call_id, name=name, input=arguments)


def error_result(call_id: str, message: str, outcome: ToolOutcome = "failed") -> ToolResultBlock:
    """An error result: the call failed (the default) or, with ``outcome``, did not run."""
    return ToolResultBlock(tool_use_id=call_id, content=message, is_error=True, outcome=outcome)


def _object(raw: object, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a JSON object, not {type(raw).__name__}")
    return raw


def _str(data: dict[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        state = "missing" if key not in data else "not text"
        raise ValueError(f"{where}: '{key}' is {state}")
    return value


def _type_is(data: dict[str, Any], kind: str, where: str) -> None:
    if data.get("type", kind) != kind:
        raise ValueError(f"{where}: 'type' must be {kind!r}, not {data.get('type')!r}")
