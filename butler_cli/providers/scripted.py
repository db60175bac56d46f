"""The scripted model: a JSON file of turns, for offline runs, demos and tests.

``{"turns": [{"text": "...", "tool_calls": [{"id": "c1", "name": "...", "arguments": {}}]}]}``.
A request is answered with ``turns[k]``, k being the number of assistant turns already in the
conversation, so a resumed process goes on exactly where the parked one stopped.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

from butler_cli.core.errors import ModelError, UsageError
from butler_cli.core.messages import Message, ToolUseBlock
from butler_cli.core.provider import ModelRequest, ModelResponse, StopReason, Usage
from butler_cli.store.files import read_text_regular

_STOP_REASONS: tuple[str, ...] = get_args(StopReason)


class ScriptCall:
    """One call of a turn (plain classes, not dataclasses: the script loads on every scripted
    run, and making a dataclass costs more than reading a short script)."""

    __slots__ = ("arguments", "id", "name")

    def __init__(self, name: str, call_id: str | None, arguments: dict[str, Any]) -> None:
        self.name = name
        self.id = call_id
        self.arguments = arguments


class ScriptTurn:
    """One assistant turn: its text, its calls, and optionally its stop reason (e.g. to test a
    response with calls that did not stop for tool use)."""

    __slots__ = ("stop_reason", "text", "tool_calls")

    def __init__(
        self, text: str | None, tool_calls: list[ScriptCall] | None, stop_reason: StopReason | None
    ) -> None:
        self.text = text
        self.tool_calls = tool_calls
        self.stop_reason = stop_reason


class Script:
    """A script file, checked whole by :meth:`from_dict` (by hand: a scripted run loads no
    pydantic). Unknown keys are refused, so a typo is not silently a turn without calls."""

    __slots__ = ("turns",)

    def __init__(self, turns: list[ScriptTurn]) -> None:
        self.turns = turns

    @classmethod
    def from_dict(cls, data: object) -> Script:
        """The script, or ``ValueError("<where>: <what is wrong>")`` for the first problem,
        ``where`` a dotted path such as ``turns.2.tool_calls.0.name``."""
        top = _fields(data, "", {"turns"})
        turns = top.get("turns")
        if not isinstance(turns, list):
            raise ValueError("turns: " + ("is missing" if "turns" not in top else "must be a list"))
        return cls([_turn(raw, f"turns.{k}") for k, raw in enumerate(turns)])


def _turn(raw: object, where: str) -> ScriptTurn:
    data = _fields(raw, where, {"text", "tool_calls", "stop_reason"})
    text = data.get("text")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"{where}.text: must be text")
    calls = data.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise ValueError(f"{where}.tool_calls: must be a list")
    stop = data.get("stop_reason")
    if stop is not None and stop not in _STOP_REASONS:
        raise ValueError(f"{where}.stop_reason: must be one of {', '.join(_STOP_REASONS)}")
    parsed = (
        None
        if calls is None
        else [_call(c, f"{where}.tool_calls.{i}") for i, c in enumerate(calls)]
    )
    return ScriptTurn(text, parsed, stop)


def _call(raw: object, where: str) -> ScriptCall:
    data = _fields(raw, where, {"id", "name", "arguments"})
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(
            f"{where}.name: " + ("is missing" if "name" not in data else "must be non-empty text")
        )
    call_id = data.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise ValueError(f"{where}.id: must be text")
    arguments = data.get("arguments", {})
    if not isinstance(arguments, dict):
        raise ValueError(f"{where}.arguments: must be a JSON object")
    return ScriptCall(name, call_id, arguments)


def _fields(raw: object, where: str, known: set[str]) -> dict[str, Any]:
    """``raw`` as an object with no key outside ``known``."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: must be a JSON object" if where else "not a JSON object")
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(
            f"{where + '.' if where else ''}{unknown[0]}: is not a field of the script"
        )
    return raw


class ScriptedProvider:
    """Answers from a script file; loading it validates the whole file up front."""

    def __init__(self, path: Path, script: Script) -> None:
        self.path = path
        self.spec = f"scripted:{path}"
        self._responses = [_response(k, turn) for k, turn in enumerate(script.turns)]
        self._counted: tuple[int, int, Message | None] = (0, 0, None)  # (seen, assistants, last)

    @classmethod
    def from_target(cls, target: str) -> ScriptedProvider:
        if not target:
            raise UsageError("the scripted model needs a file: --model scripted:PATH")
        path = Path(target).expanduser().resolve()
        try:
            data = json.loads(read_text_regular(path))
        except FileNotFoundError as exc:
            raise UsageError(f"scripted model file not found: {path}") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read scripted model file {path}: {exc}") from exc
        except ValueError as exc:
            raise UsageError(f"scripted model file {path} is not valid JSON: {exc}") from exc
        except RecursionError as exc:
            raise UsageError(f"scripted model file {path} is nested too deeply to read") from exc
        try:
            script = Script.from_dict(data)
        except ValueError as exc:
            raise UsageError(f"scripted model file {path}: {exc}") from exc
        return cls(path, script)

    def complete(self, request: ModelRequest) -> ModelResponse:
        if request.messages and request.messages[-1].images:
            raise ModelError(
                "the scripted model does not take images; nothing was sent", code="no_images"
            )
        k = self._assistant_turns(request.messages)
        if k >= len(self._responses):
            raise ModelError(
                f"the scripted model has no turn {k} (the script {self.path} has "
                f"{len(self._responses)} turns)",
                code="script_exhausted",
            )
        return self._responses[k]

    def _assistant_turns(self, messages: Sequence[Message]) -> int:
        """Count assistant turns; only the new tail when the conversation merely grew.

        Keeps a round O(1) in the conversation's length. The remembered last message is
        compared by identity, so a different conversation is always counted afresh.
        """
        seen, count, last = self._counted
        if not (0 < seen <= len(messages) and messages[seen - 1] is last):
            seen, count = 0, 0
        for i in range(seen, len(messages)):
            if messages[i].role == "assistant":
                count += 1
        self._counted = (len(messages), count, messages[-1] if messages else None)
        return count


def _response(k: int, turn: ScriptTurn) -> ModelResponse:
    calls = [
        ToolUseBlock(id=c.id or f"call_{k}_{i}", name=c.name, input=dict(c.arguments))
        for i, c in enumerate(turn.tool_calls or [])
    ]
    # Repeated or empty ids are kept: a script stands in for a model, and the loop gives every
    # call its own identity whatever the model sent (core/vet.py).
    stop: StopReason = turn.stop_reason or ("tool_use" if calls else "end_turn")
    # A script spends no tokens: its usage stays zero, so nothing pretends to have been billed.
    return ModelResponse(text=turn.text or "", tool_calls=calls, stop_reason=stop, usage=Usage())
