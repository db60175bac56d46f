"""Park state (spec P1–P2) and how a parked round is answered on resume (R1–R2, X2, X4).

Pure data and logic: saving, locking and the MAC live in ``butler_cli.store``; this module
only sees a :class:`Journal` that records each call's progress durably.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    model_validator,
)

from butler_cli.core.messages import Message, ToolResultBlock, ToolUseBlock
from butler_cli.core.park_format import PARK_VERSION
from butler_cli.core.verdicts import Verdict

REFUSED_PREFIX = "Refused (not run)"
NOT_RUN_PREFIX = "Not executed —"
NO_DECISION_NOTE = "no decision recorded — failing closed"
OUTCOME_UNKNOWN = (
    "Outcome unknown: the process stopped while this action was running; it was not run again."
)
NEEDS_OWN_APPROVAL = (
    f"{NOT_RUN_PREFIX} this action needs its own approval; ask again so it can be reviewed."
)
NO_APPROVAL_ON_RECORD = f"{NOT_RUN_PREFIX} no approval on record (fail-closed)."

ParkStatus = Literal["pending", "decided", "resolved"]


def refused_message(reason: str) -> str:
    return f"{REFUSED_PREFIX}: {reason.rstrip('.')}."


def declined_message(note: str | None) -> str:
    suffix = f": {note}" if note else ""
    return f"{NOT_RUN_PREFIX} you declined this action (fail-closed){suffix}."


class Approval(BaseModel):
    """What the person is shown. Display only: what runs is the saved call itself (P2)."""

    model_config = ConfigDict(frozen=True)
    call_id: str
    tool: str
    title: str
    reason: str


class Decision(BaseModel):
    """A person's answer to a park (R1)."""

    model_config = ConfigDict(frozen=True)
    approved: bool
    note: str | None = None


def read_decision(raw: object) -> Decision:
    """Read a decision; missing or malformed is a denial, never an implicit approval (R1)."""
    if isinstance(raw, Decision):
        return raw
    if isinstance(raw, dict) and isinstance(raw.get("approved"), bool):
        note = raw.get("note")
        if note is None or isinstance(note, str):
            return Decision(approved=raw["approved"], note=note or None)
    return Decision(approved=False, note=NO_DECISION_NOTE)


class RunContext(BaseModel):
    """What a fresh process needs to continue the task (R4): never a key."""

    model_config = ConfigDict(frozen=True)
    task: str
    model: str
    policy: str
    system: str = ""
    max_rounds: int = 8
    cwd: str = ""
    profile: str = "default"
    policy_file: str | None = None
    base_url: str | None = None
    #: The model options (`-o temperature=0.2`…), checked; a resume asks the same way.
    model_options: dict[str, int | float] = Field(default_factory=dict)
    #: The frozen memory block the conversation was sent; a resume sends it again, byte for
    #: byte (None in parks written before it was kept: the resume composes one afresh).
    memory_block: str | None = None


#: A verdict as a park keeps it: written as ``{"decision", "reason", "widen"?}``, read back
#: through :meth:`Verdict.from_dict`, so anything malformed on disk fails closed to refuse.
SavedVerdict = Annotated[
    Verdict,
    PlainValidator(lambda raw: raw if isinstance(raw, Verdict) else Verdict.from_dict(raw)),
    PlainSerializer(lambda v: v.to_dict(), return_type=dict),
]


class ParkState(BaseModel):
    """Everything a resume needs, saved before the person is asked (P1–P2, X1)."""

    v: int = PARK_VERSION
    id: str
    created_at: str
    parent: str | None = None
    context: RunContext
    messages: list[Message]
    calls: list[ToolUseBlock]
    approval: Approval
    verdicts: dict[str, SavedVerdict]
    status: ParkStatus = "pending"
    decision: Decision | None = None
    decided_at: str | None = None
    started: list[str] = Field(default_factory=list)
    results: dict[str, ToolResultBlock] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _outcome_of_older_parks(cls, data: Any) -> Any:
        """Parks written before results had ``outcome``: an error result counts as failed.
        (Here, not on every result: a result is built each round, a park read rarely.)"""
        if isinstance(data, dict) and isinstance(data.get("results"), dict):
            results = {
                cid: {**r, "outcome": "failed"}
                if isinstance(r, dict) and "outcome" not in r and r.get("is_error")
                else r
                for cid, r in data["results"].items()
            }
            data = {**data, "results": results}
        return data

    @model_validator(mode="after")
    def _one_identity_per_call(self) -> ParkState:
        """Verdicts and results are keyed by call id: a park whose ids repeat is refused."""
        ids = [c.id for c in self.calls]
        if len(set(ids)) != len(ids) or not all(ids):
            raise ValueError("the park's calls do not each have their own id")
        return self

    def approved_arguments(self) -> dict[str, Any]:
        """The arguments of the call the person is asked about (empty if it is missing)."""
        for call in self.calls:
            if call.id == self.approval.call_id:
                return dict(call.input)
        return {}


class Journal(Protocol):
    """Durable progress of a resumed round: what started, what finished (X2)."""

    def result_for(self, call_id: str) -> ToolResultBlock | None: ...

    def was_started(self, call_id: str) -> bool: ...

    def mark_started(self, call_id: str) -> None: ...

    def record_result(self, result: ToolResultBlock) -> None: ...

    def resolved(self) -> None:
        """Every call has its result: the park is finished and never runs again."""


def results_message(results: Sequence[ToolResultBlock]) -> Message:
    return Message(role="user", content=list(results))
