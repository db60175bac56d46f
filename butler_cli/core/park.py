"""Park state (spec P1–P2): the record a parked round is saved as and resumed from (R1, R4).

Pydantic models, because a park file is read back from disk and is untrusted there: it is
validated whole, older parks are mended, repeated call ids are refused. This module is loaded
only where a park is built, saved or read; the loop's messages are plain dataclasses
(``core/messages.py``) that go in and out of the park through their ``to_dict``/``from_dict``,
so the file's JSON is byte for byte what it was when they were pydantic models. What a call
that does not run is answered, and the :class:`~butler_cli.core.outcomes.Journal` of a resumed
round, are in ``core/outcomes.py``. Saving, locking and the MAC live in ``butler_cli.store``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from butler_cli.core.messages import (
    Message,
    ToolResultBlock,
    ToolUseBlock,
    tool_result_from_dict,
    tool_use_from_dict,
)
from butler_cli.core.outcomes import NO_DECISION_NOTE
from butler_cli.core.park_format import PARK_VERSION
from butler_cli.core.verdicts import Verdict

ParkStatus = Literal["pending", "decided", "resolved"]


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
    #: The project instructions (AGENTS.md, CLAUDE.md, BUTLER.md) the task was sent, fenced; a
    #: resume sends them again, byte for byte (None in older parks: read afresh).
    instructions: str | None = None
    #: `--no-stream`: every answer was asked for whole; a resume asks the same way.
    no_stream: bool = False
    #: Where the task came from, for the person deciding: ``chat``, ``run``, ``schedule ID``,
    #: ``matrix`` ("" in older parks: not known). Shown, never acted on.
    origin: str = ""

    @model_serializer(mode="wrap")
    def _older_parks_byte_for_byte(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A field added since the first parks (instructions, no_stream…) is left out while it
        holds its default, so a park written before it existed is written back byte for
        byte: a recorded option added later is one field here."""
        data = handler(self)
        if isinstance(data, dict):
            for name in set(data) - _FIRST_CONTEXT:
                if data[name] == type(self).model_fields[name].default:
                    del data[name]
        return data


#: The fields every park's context has had; one added later is left out while at its default.
_FIRST_CONTEXT = frozenset(
    {
        "task",
        "model",
        "policy",
        "system",
        "max_rounds",
        "cwd",
        "profile",
        "policy_file",
        "base_url",
        "model_options",
        "memory_block",
    }
)


#: A verdict as a park keeps it: written as ``{"decision", "reason", "widen"?}``, read back
#: through :meth:`Verdict.from_dict`, so anything malformed on disk fails closed to refuse.
SavedVerdict = Annotated[
    Verdict,
    PlainValidator(lambda raw: raw if isinstance(raw, Verdict) else Verdict.from_dict(raw)),
    PlainSerializer(lambda v: v.to_dict(), return_type=dict),
]


#: The loop's dataclasses as a park keeps them: written with ``to_dict`` (the JSON they always
#: had), read back through ``from_dict``, which refuses anything malformed (a corrupt park).
SavedMessage = Annotated[
    Message,
    PlainValidator(Message.from_dict),
    PlainSerializer(lambda m: m.to_dict(), return_type=dict),
]
SavedCall = Annotated[
    ToolUseBlock,
    PlainValidator(tool_use_from_dict),
    PlainSerializer(lambda c: c.to_dict(), return_type=dict),
]
SavedResult = Annotated[
    ToolResultBlock,
    PlainValidator(tool_result_from_dict),
    PlainSerializer(lambda r: r.to_dict(), return_type=dict),
]


class ParkState(BaseModel):
    """Everything a resume needs, saved before the person is asked (P1–P2, X1)."""

    v: int = PARK_VERSION
    id: str
    created_at: str
    parent: str | None = None
    #: Which session made the park (a chat, a `serve`, one `butler run`): a random id, so
    #: "did this chat make it" is one comparison (None in older parks: never this session).
    session: str | None = None
    context: RunContext
    messages: list[SavedMessage]
    calls: list[SavedCall]
    approval: Approval
    verdicts: dict[str, SavedVerdict]
    #: Every call of the round that needs a person, in the model's order (``approval`` is the
    #: first). Written only when there are more than one, so a one-call park is the bytes it
    #: always was; older parks asked only the first.
    approvals: list[Approval] = Field(default_factory=list)
    status: ParkStatus = "pending"
    #: The round's decision in one word: approved when any asked call was (for lists and logs).
    decision: Decision | None = None
    #: The person's decision on each asked call, by call id (written only when there are more
    #: than one asked call; a one-call park keeps ``decision`` alone, as it always did).
    decisions: dict[str, Decision] = Field(default_factory=dict)
    decided_at: str | None = None
    #: The machine's boot the decision was recorded in (``store/boot.py``): the round's later
    #: writes are not fsynced, so read in another boot, a call that may have run and has no
    #: result is "outcome unknown". None: every write was durable (older parks, not Linux).
    boot: str | None = None
    started: list[str] = Field(default_factory=list)
    results: dict[str, SavedResult] = Field(default_factory=dict)
    #: The person stopped the decided round (Ctrl-C, SIGINT): it is finished, never continued
    #: — unlike a process that died, which is recovered. Written only when true, so a park
    #: that was not interrupted is the bytes it always was.
    interrupted: bool = False

    @model_serializer(mode="wrap")
    def _older_parks_byte_for_byte(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Fields a one-call park never needed are left out, so it is the bytes it was."""
        data = handler(self)
        if isinstance(data, dict):
            if not self.interrupted:
                data.pop("interrupted", None)
            if self.session is None:
                data.pop("session", None)
            if self.boot is None:
                data.pop("boot", None)
            if len(self.approvals) <= 1:
                data.pop("approvals", None)
                data.pop("decisions", None)
        return data

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
        """Verdicts and results are keyed by call id: a park whose ids repeat is refused, and
        so is one whose asked calls are not its own calls, first the one ``approval`` names."""
        ids = [c.id for c in self.calls]
        if len(set(ids)) != len(ids) or not all(ids):
            raise ValueError("the park's calls do not each have their own id")
        if not self.approvals:
            self.approvals = [self.approval]
        asked = [a.call_id for a in self.approvals]
        if (
            asked[0] != self.approval.call_id
            or len(set(asked)) != len(asked)
            or not set(asked) <= set(ids)
            or not set(self.decisions) <= set(asked)
        ):
            raise ValueError("the park's asked calls are not its own calls, each once")
        return self

    def decided_calls(self) -> dict[str, Decision]:
        """The recorded decision on each asked call (a one-call park's is its ``decision``);
        an asked call with none recorded is a denial (R1)."""
        if self.decision is not None and not self.decisions:
            return {self.approval.call_id: read_decision(self.decision)}
        return {a.call_id: read_decision(self.decisions.get(a.call_id)) for a in self.approvals}

    def arguments_of(self, call_id: str) -> dict[str, Any]:
        """The arguments of one call of the round (empty if it is missing)."""
        for call in self.calls:
            if call.id == call_id:
                return dict(call.input)
        return {}

    def approved_arguments(self) -> dict[str, Any]:
        """The arguments of the first call the person is asked about (empty if missing)."""
        return self.arguments_of(self.approval.call_id)
