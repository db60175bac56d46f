"""``--output stream-json``: one JSON event per line, as things happen (docs/output.md).

:class:`EventStream` is a loop observer: the loop's hooks become ``text``, ``tool_call`` and
``tool_result`` events; the command adds ``start`` before a task and ``parked``, ``error`` and
``done`` after it. Every event carries ``type``, ``schema``, ``conversation`` and
``elapsed_ms``. Text the model chose travels as JSON strings, so it cannot end a line or forge
an event; lone surrogates become U+FFFD so every line is valid UTF-8.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from butler_cli.app.run.report import TaskReport
from butler_cli.core.errors import STATUS_EXIT, ExitCode
from butler_cli.core.loop import LoopObserver
from butler_cli.core.messages import ToolResultBlock, ToolUseBlock
from butler_cli.core.provider import ModelResponse
from butler_cli.core.verdicts import Verdict
from butler_cli.core.vet import clean_text

#: Bumped when an event loses a field or a field changes meaning; new fields keep it.
SCHEMA_VERSION = 1

Write = Callable[[str], object]


def new_conversation_id() -> str:
    """A stand-in id when the task has no saved conversation (a park made before they were
    saved, or a store that could not be written)."""
    return uuid.uuid4().hex


#: Characters JSON leaves as they are that some readers take for a line break (Python's
#: ``splitlines``, older JavaScript): escaped, so a line is always one whole event.
_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def json_line(event: dict[str, Any]) -> str:
    """One event as one line of valid UTF-8 JSON that no reader splits."""
    text = clean_text(json.dumps(event, ensure_ascii=False))
    for char, escaped in _LINE_BREAKS.items():
        if char in text:  # only ever inside a string, where the escape means the same
            text = text.replace(char, escaped)
    return text + "\n"


def decide_commands(park_id: str) -> dict[str, str]:
    return {
        "approve": f"butler resume {park_id} --approve",
        "deny": f"butler resume {park_id} --deny",
    }


def error_event(
    code: str, message: str, exit_code: int, conversation: str | None, elapsed_ms: float
) -> dict[str, Any]:
    return {
        "type": "error",
        "schema": SCHEMA_VERSION,
        "conversation": conversation,
        "elapsed_ms": round(elapsed_ms, 1),
        "code": code,
        "message": message,
        "exit_code": exit_code,
    }


class EventStream(LoopObserver):
    """The events of one task, written as they happen through ``write`` (flushed by it)."""

    def __init__(self, write: Write, started: float, conversation: str | None = None) -> None:
        self._write = write
        self._started = started  # time.perf_counter() when the command began
        self.conversation = conversation or new_conversation_id()
        self._task_began = time.perf_counter()
        self._streamed = False
        self._calls: dict[str, tuple[str, Verdict | None]] = {}

    def emit(self, kind: str, **fields: Any) -> None:
        event = {
            "type": kind,
            "schema": SCHEMA_VERSION,
            "conversation": self.conversation,
            "elapsed_ms": _ms(time.perf_counter() - self._started),
            **fields,
        }
        self._write(json_line(event))

    # -- the command's own events ------------------------------------------------------------

    def start(
        self,
        task: str,
        index: int,
        total: int,
        resumed: str | None = None,
        context: list[dict[str, object]] | None = None,
    ) -> None:
        """A task begins (``resumed``: the park it continues; ``context``: what was attached)."""
        self._task_began = time.perf_counter()
        self.emit(
            "start", task=task, index=index, total=total, resumed=resumed, context=context or []
        )

    def finish(self, report: TaskReport) -> None:
        """``parked`` (with the commands that decide it) or ``error``, then ``done``."""
        if report.status == "parked" and report.park_id is not None:
            approval = report.approval or {}
            self.emit(
                "parked",
                park=report.park_id,
                tool=approval.get("tool"),
                title=approval.get("title"),
                reason=approval.get("reason"),
                actions=report.approvals,
                commands=decide_commands(report.park_id),
            )
        if report.status == "failed":
            self.emit(
                "error",
                code="model",
                message=report.error or "unknown error",
                exit_code=int(ExitCode.FAILED),
            )
        self.emit(
            "done",
            status=report.status,
            text=report.text,
            park=report.park_id,
            rounds=report.rounds,
            usage=[u.to_dict() for u in report.usage],
            warnings=report.warnings,
            duration_ms=_ms(time.perf_counter() - self._task_began),
            exit_code=int(STATUS_EXIT[report.status]),
        )

    def interrupted(self, message: str) -> None:
        """Ctrl-C stopped the task: ``error`` (code ``interrupted``), then ``done`` with status
        ``interrupted`` and exit code 130, like every other ending."""
        code = int(ExitCode.INTERRUPTED)
        self.emit("error", code="interrupted", message=message, exit_code=code)
        self.emit(
            "done",
            status="interrupted",
            text="",
            park=None,
            rounds=0,
            usage=[],
            warnings=[],
            duration_ms=_ms(time.perf_counter() - self._task_began),
            exit_code=code,
        )

    # -- the loop's hooks --------------------------------------------------------------------

    def model_started(self) -> None:
        self._streamed = False

    def model_text(self, delta: str) -> None:
        if delta:
            self._streamed = True
            self.emit("text", delta=delta)

    def model_finished(self, response: ModelResponse) -> None:
        if response.text and not self._streamed:  # a provider that does not stream
            self.emit("text", delta=response.text)

    def round_classified(
        self, calls: Sequence[ToolUseBlock], verdicts: dict[str, Verdict], park_id: str | None
    ) -> None:
        for call in calls:
            self._call(call, verdicts.get(call.id), park_id, resumed=False)

    def call_judged(self, call: ToolUseBlock, verdict: Verdict | None, outcome: str) -> None:
        self._call(call, verdict, None, resumed=True, judged=outcome)

    def tool_finished(self, call: ToolUseBlock, result: ToolResultBlock, seconds: float) -> None:
        self.emit(
            "tool_result",
            id=call.id,
            tool=call.name,
            outcome=result.outcome,
            is_error=result.is_error,
            content=result.content,
            duration_ms=_ms(seconds),
        )

    def _call(
        self,
        call: ToolUseBlock,
        verdict: Verdict | None,
        park_id: str | None,
        *,
        resumed: bool,
        judged: str | None = None,
    ) -> None:
        self.emit(
            "tool_call",
            id=call.id,
            tool=call.name,
            arguments=dict(call.input),
            verdict=verdict.decision if verdict is not None else None,
            reason=verdict.reason if verdict is not None else None,
            park=park_id,
            resumed=resumed,
            judged=judged,
        )


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)
