"""What one task came to, in the shape ``--json`` prints, and the exit code for a batch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from butler_cli.core.errors import ExitCode
from butler_cli.core.loop import LoopOutcome
from butler_cli.core.messages import Message
from butler_cli.core.provider import Usage

_PRIORITY = [("failed", ExitCode.FAILED), ("limit", ExitCode.LIMIT), ("parked", ExitCode.PARKED)]


@dataclass
class TaskReport:
    task: str
    status: str
    text: str = ""
    park_id: str | None = None
    #: The first action a parked round waits on (tool, title, reason); ``approvals`` all.
    approval: dict[str, str] | None = None
    approvals: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None
    rounds: int = 0
    messages: list[Message] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    #: Why the last reply ended; "max_tokens" means it was cut at the length limit.
    stop_reason: str | None = None
    #: A failure's code ("context_too_long": the request did not fit the model's window).
    error_code: str | None = None
    #: One line each on how the answer came: a stream asked again whole, an empty answer.
    warnings: list[str] = field(default_factory=list)
    #: The last answer held no text and no tool call.
    empty: bool = False

    @classmethod
    def from_outcome(cls, task: str, outcome: LoopOutcome) -> TaskReport:
        approvals = [a.model_dump(include={"tool", "title", "reason"}) for a in outcome.approvals]
        return cls(
            task=task,
            status=outcome.status,
            text=outcome.text,
            park_id=outcome.park_id,
            approval=approvals[0] if approvals else None,
            approvals=approvals,
            error=outcome.error,
            rounds=outcome.rounds,
            messages=outcome.messages,
            usage=outcome.usage,
            stop_reason=outcome.stop_reason,
            error_code=outcome.error_code,
            warnings=list(outcome.warnings),
            empty=outcome.empty,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "status": self.status,
            "text": self.text,
            "park_id": self.park_id,
            "approval": self.approval,
            "approvals": self.approvals,
            "error": self.error,
            "rounds": self.rounds,
            "usage": [u.to_dict() for u in self.usage],
            "stop_reason": self.stop_reason,
            "warnings": self.warnings,
            "messages": [m.to_dict() for m in self.messages],
        }


def exit_code_for(reports: list[TaskReport]) -> ExitCode:
    """1 if any task failed, else 4 if any hit the limit, else 3 if any parked, else 0."""
    statuses = {r.status for r in reports}
    for status, code in _PRIORITY:
        if status in statuses:
            return code
    return ExitCode.OK
