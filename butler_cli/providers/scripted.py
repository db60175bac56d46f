"""The scripted model: a JSON file of turns, for offline runs, demos and tests.

``{"turns": [{"text": "...", "tool_calls": [{"id": "c1", "name": "...", "arguments": {}}]}]}``.
A request is answered with ``turns[k]``, k being the number of assistant turns already in the
conversation, so a resumed process goes on exactly where the parked one stopped.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from butler_cli.core.errors import ModelError, UsageError
from butler_cli.core.messages import Message, ToolUseBlock
from butler_cli.core.provider import ModelRequest, ModelResponse, StopReason, Usage
from butler_cli.store.files import read_text_regular


class ScriptCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | None = None
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str | None = None
    tool_calls: list[ScriptCall] | None = None
    #: Optional override, e.g. to test a response with calls that did not stop for tool use.
    stop_reason: StopReason | None = None


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")
    turns: list[ScriptTurn]


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
            script = Script.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise UsageError(f"scripted model file {path}: {where}: {first['msg']}") from exc
        return cls(path, script)

    def complete(self, request: ModelRequest) -> ModelResponse:
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
        ToolUseBlock(id=c.id or f"call_{k}_{i}", name=c.name, input=c.arguments)
        for i, c in enumerate(turn.tool_calls or [])
    ]
    # Repeated or empty ids are kept: a script stands in for a model, and the loop gives every
    # call its own identity whatever the model sent (core/vet.py).
    stop: StopReason = turn.stop_reason or ("tool_use" if calls else "end_turn")
    # A script spends no tokens: its usage stays zero, so nothing pretends to have been billed.
    return ModelResponse(text=turn.text or "", tool_calls=calls, stop_reason=stop, usage=Usage())
