"""The bounded, governed tool loop (spec L1–L7) and its continuation after a decision (R3).

No I/O of its own: the model, the toolbox, the park sink and the observer are injected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from butler_cli.core.defaults import DEFAULT_MAX_ROUNDS
from butler_cli.core.errors import ModelError
from butler_cli.core.gate import Gate
from butler_cli.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from butler_cli.core.outcomes import Journal, results_message
from butler_cli.core.provider import ModelRequest, ModelResponse, Provider, Usage
from butler_cli.core.rounds import NO_JOURNAL, fresh_judge, resumed_judge, run_round
from butler_cli.core.toolsets import GovernedToolset, Toolbox
from butler_cli.core.verdicts import Verdict, allow, approve
from butler_cli.core.vet import clean_text, vet_calls

if TYPE_CHECKING:  # the park's pydantic models load only when a round parks or resumes
    from butler_cli.core.grants import GrantBook, KeptApprovals
    from butler_cli.core.park import Approval, Decision, ParkState, RunContext

UNATTENDED_REASON = (
    "{who} allows '{name}', but an unattended run acts on its own only with --yes-safe"
)

OutcomeStatus = Literal["done", "parked", "limit", "failed"]


@dataclass(frozen=True, slots=True)
class LoopConfig:
    system: str = ""
    max_rounds: int = DEFAULT_MAX_ROUNDS
    #: False in unattended runs without --yes-safe: a policy ``allow`` parks instead (X5).
    allow_runs: bool = True
    #: A chat session's grants; None everywhere else (run, resume in another process).
    grants: GrantBook | None = None
    #: The approvals a person kept for the task's folder (every surface), or None.
    kept: KeptApprovals | None = None


@dataclass(frozen=True, slots=True)
class ParkDraft:
    """A parked round, ready for the store to give it an id and write it (P2)."""

    messages: list[Message]
    calls: list[ToolUseBlock]
    #: Every call of the round that needs a person, in the model's order (never empty).
    approvals: list[Approval]
    verdicts: dict[str, Verdict]
    #: Calls already answered (malformed ones): saved as results, so a resume never runs them.
    answered: dict[str, ToolResultBlock] = field(default_factory=dict)

    def to_state(
        self,
        park_id: str,
        created_at: str,
        context: RunContext,
        parent: str | None,
        session: str | None = None,
    ) -> ParkState:
        """The park record for this round, ready to be written (P2)."""
        from butler_cli.core.park import ParkState

        return ParkState(
            id=park_id,
            created_at=created_at,
            parent=parent,
            session=session,
            context=context,
            messages=self.messages,
            calls=self.calls,
            approval=self.approvals[0],
            approvals=list(self.approvals),
            verdicts=dict(self.verdicts),
            results=self.answered,
        )


#: Saves a parked round durably and returns its id; called before anyone is asked (X1).
ParkSink = Callable[[ParkDraft], str]


class LoopObserver:
    """Hooks for progress display and audit. Every method is a no-op by default."""

    def model_started(self) -> None: ...

    def model_text(self, delta: str) -> None:
        """A piece of the model's text, as a streaming provider receives it."""

    def model_finished(self, response: ModelResponse) -> None: ...

    def model_failed(self, message: str) -> None:
        """The model call failed: no response comes, and the loop ends (status ``failed``)."""

    def round_classified(
        self, calls: Sequence[ToolUseBlock], verdicts: dict[str, Verdict], park_id: str | None
    ) -> None: ...

    def tool_started(self, call: ToolUseBlock) -> None:
        """A call is about to run (after every check): it runs until ``tool_finished``."""

    def tool_finished(
        self, call: ToolUseBlock, result: ToolResultBlock, seconds: float
    ) -> None: ...

    def call_judged(self, call: ToolUseBlock, verdict: Verdict | None, outcome: str) -> None:
        """A governed call of a resumed round was judged again (X4) and this came of it."""


class Observers(LoopObserver):
    """Fans every hook out to several observers, in order."""

    def __init__(self, *observers: LoopObserver) -> None:
        self._all = observers

    def model_started(self) -> None:
        for o in self._all:
            o.model_started()

    def model_text(self, delta: str) -> None:
        for o in self._all:
            o.model_text(delta)

    def model_finished(self, response: ModelResponse) -> None:
        for o in self._all:
            o.model_finished(response)

    def model_failed(self, message: str) -> None:
        for o in self._all:
            o.model_failed(message)

    def round_classified(
        self, calls: Sequence[ToolUseBlock], verdicts: dict[str, Verdict], park_id: str | None
    ) -> None:
        for o in self._all:
            o.round_classified(calls, verdicts, park_id)

    def tool_started(self, call: ToolUseBlock) -> None:
        for o in self._all:
            o.tool_started(call)

    def tool_finished(self, call: ToolUseBlock, result: ToolResultBlock, seconds: float) -> None:
        for o in self._all:
            o.tool_finished(call, result, seconds)

    def call_judged(self, call: ToolUseBlock, verdict: Verdict | None, outcome: str) -> None:
        for o in self._all:
            o.call_judged(call, verdict, outcome)


CUT_MARKER = "[butler: the reply stopped at the model's length limit (max_tokens)]"
#: An answer with no text and no call, and 0 output tokens: what a gateway (LiteLLM) makes
#: of a server's overflow, so it is taken for one (the chat compacts and asks again).
EMPTY_TOO_LONG = (
    "the model answered nothing (0 output tokens, no text, no tool call): the conversation is "
    "possibly too long for it"
)
#: An answer with no text and no call that the model did write (or whose size is unknown).
EMPTY_ANSWER = "the model's answer was empty: no text and no tool call"


@dataclass
class LoopOutcome:
    status: OutcomeStatus
    text: str
    messages: list[Message]
    rounds: int
    park_id: str | None = None
    #: A parked round's calls that wait for the person, in the model's order.
    approvals: list[Approval] = field(default_factory=list)
    error: str | None = None
    usage: list[Usage] = field(default_factory=list)
    #: Why the model's last reply ended ("max_tokens": it was cut at the length limit).
    stop_reason: str | None = None
    #: The failure's code (a ModelError's: "context_too_long" when the request did not fit;
    #: "possibly_too_long": an answer of 0 tokens with nothing in it).
    error_code: str | None = None
    #: One line each on how the answers came (a stream asked again whole, an empty answer).
    warnings: list[str] = field(default_factory=list)
    #: The last answer held no text and no call.
    empty: bool = False

    @property
    def approval(self) -> Approval | None:
        """The first call a parked round waits on (None when it did not park)."""
        return self.approvals[0] if self.approvals else None


def classify_call(toolbox: Toolbox, call: ToolUseBlock, config: LoopConfig) -> Verdict:
    """The verdict for one governed call under this run's rules (G2 plus X5)."""
    gate = toolbox.gate_for(call.name)
    if gate is None:
        raise ValueError(f"'{call.name}' is not a governed tool")
    verdict = gate.classify(call.name, dict(call.input))
    if verdict.decision == "approve" and (config.grants is not None or config.kept):
        verdict = _granted(gate, call, verdict, config) or verdict
    if verdict.decision == "allow" and not config.allow_runs:
        who = "the policy" if verdict.kept is None else f"kept approval {verdict.kept}"
        return approve(UNATTENDED_REASON.format(who=who, name=call.name))
    return verdict


def _granted(
    gate: GovernedToolset, call: ToolUseBlock, verdict: Verdict, config: LoopConfig
) -> Verdict | None:
    """An allow when a session grant, else a kept approval, covers this approve; only an
    approve is ever granted, never a refuse. The reason names the grant's number, never its
    arguments: it goes to the audit log. An unattended run still needs --yes-safe for it."""
    try:  # a grant is judged on the resolved paths, like the rules (never the raw text)
        judged = gate.judged(call.name, call.input)
    except (ValueError, OSError):
        return None
    hit = config.grants.covering(call.name, call.input, judged) if config.grants else None
    if hit is not None:
        return allow(f"session grant {hit[0]} (policy: {verdict.reason})")
    kept = config.kept.covering(call.name, call.input, judged) if config.kept else None
    if kept is not None and not verdict.ask_always:
        return Verdict(
            "allow", f"kept approval {kept.number} (policy: {verdict.reason})", kept=kept.number
        )
    return None


def run_loop(
    provider: Provider,
    toolbox: Toolbox,
    messages: Sequence[Message],
    config: LoopConfig,
    park: ParkSink,
    observer: LoopObserver | None = None,
) -> LoopOutcome:
    """Run model rounds until a final answer, a park, the round limit or a model failure."""
    obs = observer or LoopObserver()
    convo = list(messages)
    tools = toolbox.definitions()
    usage: list[Usage] = []
    warnings: list[str] = []
    rounds = 0
    while True:
        obs.model_started()
        try:
            response = provider.complete(ModelRequest(config.system, convo, tools, obs.model_text))
        except ModelError as exc:
            obs.model_failed(exc.message)
            return LoopOutcome(
                "failed",
                "",
                convo,
                rounds,
                error=exc.message,
                usage=usage,
                error_code=exc.code,
                warnings=warnings,
            )
        obs.model_finished(response)
        usage.append(response.usage)
        warnings.extend(response.warnings)
        if not response.is_tool_round:
            return _answered(response, convo, rounds, usage, warnings)
        if rounds >= config.max_rounds:
            marker = f"[butler: aborted after {config.max_rounds} tool-use rounds]"
            said = clean_text(response.text)
            text = f"{said}\n\n{marker}" if said else marker
            convo.append(Message(role="assistant", content=[TextBlock(text=text)]))
            return LoopOutcome("limit", text, convo, rounds, usage=usage, warnings=warnings)
        rounds += 1
        calls, answered = vet_calls(list(response.tool_calls), response.malformed)
        calls = [c if c.id in answered else sealed(toolbox, c) for c in calls]
        convo.append(_assistant_turn(response.text, calls))
        verdicts = {
            c.id: classify_call(toolbox, c, config)
            for c in calls
            if c.id not in answered and toolbox.is_governed(c.name)
        }
        asked = [c for c in calls if _needs_person(verdicts.get(c.id))]
        if asked:  # the round waits, whole: every call that needs a person is put to them
            approvals = [_approval_for(toolbox, c, verdicts[c.id]) for c in asked]
            park_id = park(ParkDraft(list(convo), calls, approvals, verdicts, answered))
            obs.round_classified(calls, verdicts, park_id)
            return LoopOutcome(
                "parked",
                response.text,
                convo,
                rounds,
                park_id,
                approvals,
                usage=usage,
                warnings=warnings,
            )
        obs.round_classified(calls, verdicts, None)
        judge = fresh_judge(verdicts, answered)
        convo.append(
            results_message(
                run_round(calls, toolbox, judge, NO_JOURNAL, obs.tool_finished, obs.tool_started)
            )
        )


def _answered(
    response: ModelResponse,
    convo: list[Message],
    rounds: int,
    usage: list[Usage],
    warnings: list[str],
) -> LoopOutcome:
    """The outcome of a final answer. One with no text and no call is never silent: with 0
    output tokens it is a failure (possibly too long), else an answer said to be empty."""
    text = clean_text(response.text)
    if response.stop_reason == "max_tokens":  # said, never a silently short answer
        text = f"{text}\n\n{CUT_MARKER}" if text else CUT_MARKER
    empty = not text.strip() and not response.tool_calls
    used = response.usage  # a server that counted the prompt and wrote nothing (a script: 0, 0)
    if empty and used.output_tokens == 0 and used.input_tokens:
        return LoopOutcome(
            "failed",
            "",
            convo,
            rounds,
            error=EMPTY_TOO_LONG,
            usage=usage,
            error_code="possibly_too_long",
            warnings=warnings,
            empty=True,
        )
    if empty:
        warnings = [*warnings, EMPTY_ANSWER]
    elif text:
        convo.append(Message(role="assistant", content=[TextBlock(text=text)]))
    return LoopOutcome(
        "done",
        text,
        convo,
        rounds,
        usage=usage,
        stop_reason=response.stop_reason,
        warnings=warnings,
        empty=empty,
    )


def _assistant_turn(text: str, calls: Sequence[ToolUseBlock]) -> Message:
    blocks: list[TextBlock | ToolUseBlock] = [TextBlock(text=clean_text(text))] if text else []
    return Message(role="assistant", content=[*blocks, *calls])


def continue_after_decision(
    provider: Provider,
    toolbox: Toolbox,
    park: ParkState,
    decisions: Mapping[str, Decision],
    journal: Journal,
    config: LoopConfig,
    sink: ParkSink,
    observer: LoopObserver | None = None,
) -> LoopOutcome:
    """Answer the parked round (R2) — each asked call by the person's decision on it — then
    go on with a fresh round budget (R3)."""
    obs = observer or LoopObserver()

    def classify(call: ToolUseBlock) -> Verdict:
        return classify_call(toolbox, call, config)

    judge = resumed_judge(park, decisions, toolbox, classify, obs.call_judged)
    results = run_round(park.calls, toolbox, judge, journal, obs.tool_finished, obs.tool_started)
    convo = [*park.messages, results_message(results)]
    return run_loop(provider, toolbox, convo, config, sink, obs)


def sealed(toolbox: Toolbox, call: ToolUseBlock) -> ToolUseBlock:
    """The call as it is recorded, judged and run: its gate's seal (an edit carries the digest
    of the file it was judged on); the call itself for every other tool."""
    gate = toolbox.gate_for(call.name)
    if not isinstance(gate, Gate):
        return call
    args = gate.seal(call.name, call.input)
    return call if args is call.input else replace(call, input=args)


def _needs_person(verdict: Verdict | None) -> bool:
    return verdict is not None and verdict.decision == "approve"


def _approval_for(toolbox: Toolbox, call: ToolUseBlock, verdict: Verdict) -> Approval:
    from butler_cli.core.park import Approval

    return Approval(
        call_id=call.id, tool=call.name, title=toolbox.title(call), reason=verdict.reason
    )
