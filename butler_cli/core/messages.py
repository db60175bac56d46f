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


#: The image types a model is sent (known by their first bytes, never by a file's name).
ImageType = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
_IMAGE_TYPES: frozenset[str] = frozenset(get_args(ImageType))
#: An image past this many bytes is refused, not sent (Anthropic's cap for one image).
MAX_IMAGE_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageBlock:
    """An image the person attached, sent as an image (never its bytes as text): ``data`` is
    its base64. The JSON is Anthropic's own ``image`` block; other providers map it."""

    type: Literal["image"] = field(default="image", init=False)
    media_type: ImageType
    data: str

    def to_dict(self) -> dict[str, Any]:
        source = {"type": "base64", "media_type": self.media_type, "data": self.data}
        return {"type": "image", "source": source}

    @property
    def data_url(self) -> str:
        """The image as a ``data:`` URL (what Chat Completions' ``image_url`` takes)."""
        return f"data:{self.media_type};base64,{self.data}"


def image_type(head: bytes) -> ImageType | None:
    """The image type ``head`` (a file's first bytes) is, by its magic bytes; else None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


Block = TextBlock | ToolUseBlock | ToolResultBlock | ImageBlock


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

    @property
    def images(self) -> list[ImageBlock]:
        return [b for b in self.content if isinstance(b, ImageBlock)]

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
        if not isinstance(raw, dict):
            raise ValueError(f"message: expected a JSON object, not {type(raw).__name__}")
        role = raw.get("role")
        if role != "user" and role != "assistant":
            raise ValueError(f"message: 'role' must be 'user' or 'assistant', not {role!r}")
        content = raw.get("content")
        if not isinstance(content, list):
            raise ValueError("message: 'content' must be a list of blocks")
        blocks: list[Block] = []
        for block in content:  # checked inline: a park of a thousand messages is read often
            try:
                blocks.append(_block(block))
            except ValueError as exc:
                raise ValueError(f"message content[{len(blocks)}]: {exc}") from None
        return cls(role=role, content=blocks)


def block_from_dict(raw: object) -> Block:
    """One block from untrusted JSON, by its ``type``; ``ValueError`` if anything is wrong."""
    try:
        return _block(raw)
    except ValueError as exc:
        raise ValueError(f"block: {exc}") from None


def tool_use_from_dict(raw: object) -> ToolUseBlock:
    """A saved tool call from untrusted JSON (its ``type`` may be left out)."""
    if isinstance(raw, ToolUseBlock):
        return raw
    try:
        return _tool_use(_object(raw, "tool_use"))
    except ValueError as exc:
        raise ValueError(f"tool call: {exc}") from None


def tool_result_from_dict(raw: object) -> ToolResultBlock:
    """A saved tool result from untrusted JSON (its ``type`` may be left out; a missing
    ``is_error`` is False and a missing ``outcome`` is "ran", as results were first written)."""
    if isinstance(raw, ToolResultBlock):
        return raw
    try:
        return _tool_result(_object(raw, "tool_result"))
    except ValueError as exc:
        raise ValueError(f"tool result: {exc}") from None


def model_call(call_id: object, name: object, arguments: object) -> ToolUseBlock:
    """A tool call as a provider hands it over, checked: the id and name are text, the
    arguments a JSON object with text keys. ``ValueError`` otherwise (an answer that is not a
    call at all: the provider failed). Arguments that are merely bad JSON are the adapter's to
    mark malformed before this, so the loop answers them with an error result."""
    try:
        return _call(call_id, name, arguments)
    except ValueError as exc:
        raise ValueError(f"the model's tool call: {exc}") from None


def _block(raw: object) -> Block:
    if not isinstance(raw, dict):
        if isinstance(raw, TextBlock | ToolUseBlock | ToolResultBlock | ImageBlock):
            return raw
        raise ValueError(f"expected a JSON object, not {type(raw).__name__}")
    kind = raw.get("type")
    if kind == "text":
        text = raw.get("text")
        if isinstance(text, str):
            return TextBlock(text=text)
        raise _not_text(raw, "text")
    if kind == "tool_use":
        return _tool_use(raw)
    if kind == "tool_result":
        return _tool_result(raw)
    if kind == "image":
        return _image(raw)
    raise ValueError(f"unknown block type {kind!r}")


def _tool_use(data: dict[str, Any]) -> ToolUseBlock:
    return _call(data.get("id", _MISSING), data.get("name", _MISSING), data.get("input", _MISSING))


def _call(call_id: object, name: object, arguments: object) -> ToolUseBlock:
    if not isinstance(call_id, str):
        raise ValueError("'id' is missing" if call_id is _MISSING else "'id' must be text")
    if not isinstance(name, str):
        raise ValueError("'name' is missing" if name is _MISSING else "'name' must be text")
    if not isinstance(arguments, dict) or not all(isinstance(k, str) for k in arguments):
        raise ValueError(
            "'input' is missing" if arguments is _MISSING else "'input' must be a JSON object"
        )
    return ToolUseBlock(id=call_id, name=name, input=arguments)


def _tool_result(data: dict[str, Any]) -> ToolResultBlock:
    call_id, content = data.get("tool_use_id"), data.get("content")
    is_error, outcome = data.get("is_error", False), data.get("outcome", "ran")
    if not isinstance(call_id, str):
        raise _not_text(data, "tool_use_id")
    if not isinstance(content, str):
        raise _not_text(data, "content")
    if is_error is not True and is_error is not False:
        raise ValueError("'is_error' must be true or false")
    if outcome not in _OUTCOMES:
        raise ValueError(f"'outcome' must be one of {', '.join(sorted(_OUTCOMES))}")
    return ToolResultBlock(tool_use_id=call_id, content=content, is_error=is_error, outcome=outcome)


def _image(data: dict[str, Any]) -> ImageBlock:
    source = data.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        raise ValueError("'source' must be an object of type 'base64'")
    media_type, encoded = source.get("media_type"), source.get("data")
    if media_type not in _IMAGE_TYPES:
        raise ValueError(f"'media_type' must be one of {', '.join(sorted(_IMAGE_TYPES))}")
    if not isinstance(encoded, str):
        raise _not_text(source, "data")
    return ImageBlock(media_type=media_type, data=encoded)


def error_result(call_id: str, message: str, outcome: ToolOutcome = "failed") -> ToolResultBlock:
    """An error result: the call failed (the default) or, with ``outcome``, did not run."""
    return ToolResultBlock(tool_use_id=call_id, content=message, is_error=True, outcome=outcome)


_MISSING: Any = object()


def _object(raw: object, kind: str) -> dict[str, Any]:
    """``raw`` as an object whose ``type``, if it says one, is ``kind``."""
    if not isinstance(raw, dict):
        raise ValueError(f"expected a JSON object, not {type(raw).__name__}")
    if raw.get("type", kind) != kind:
        raise ValueError(f"'type' must be {kind!r}, not {raw.get('type')!r}")
    return raw


def _not_text(data: dict[str, Any], key: str) -> ValueError:
    return ValueError(f"'{key}' is {'missing' if key not in data else 'not text'}")
