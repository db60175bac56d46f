"""In-process harness for the acceptance cases (docs/rules.md): real gates, real park files."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from butler_cli.core.gate import Gate, Policy
from butler_cli.core.loop import (
    LoopConfig,
    LoopOutcome,
    ParkDraft,
    continue_after_decision,
    run_loop,
)
from butler_cli.core.messages import Message, ToolUseBlock
from butler_cli.core.park import (
    ParkState,
    RunContext,
    read_decision,
)
from butler_cli.core.provider import ModelRequest, ModelResponse
from butler_cli.core.toolsets import FunctionToolset, Toolbox, Toolset, ToolSpec
from butler_cli.core.verdicts import Verdict
from butler_cli.store.journal import ParkJournal
from butler_cli.store.parks import ParkStore

OBJ = {"type": "object"}


def use(name: str, cid: str, **args: Any) -> ToolUseBlock:
    return ToolUseBlock(id=cid, name=name, input=args)


def tools(*calls: ToolUseBlock, text: str = "") -> ModelResponse:
    return ModelResponse(text=text, tool_calls=list(calls), stop_reason="tool_use")


def say(text: str) -> ModelResponse:
    return ModelResponse(text=text)


class ListModel:
    """Answers with responses[k], k = assistant turns so far (like the scripted model)."""

    def __init__(self, responses: Sequence[ModelResponse]) -> None:
        self.responses = list(responses)
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        k = sum(1 for m in request.messages if m.role == "assistant")
        return self.responses[k]


class ForeverModel:
    """Always asks for the same tool: the round limit is the only way out."""

    def __init__(self, call: Callable[[int], ToolUseBlock]) -> None:
        self.call = call
        self.n = 0

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.n += 1
        return tools(self.call(self.n), text=f"again {self.n}")


class Recorder:
    """Side effects of the test tools, in the order they happened."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def names(self) -> list[str]:
        return [n for n, _ in self.ran]

    def echo_toolset(self) -> FunctionToolset:
        def echo(args: dict[str, Any]) -> str:
            self.ran.append(("echo", args))
            return f"echoed {args['msg']}"

        return FunctionToolset([(ToolSpec("echo", "Echo a message.", OBJ), echo)])

    def executor(self, name: str, args: dict[str, Any]) -> str:
        self.ran.append((name, args))
        if name == "delete_agent":
            return f"deleted {args['handle']}"
        if name == "send_email":
            return f"sent to {args['to']}"
        raise RuntimeError(f"boom: {name}")

    def gate(
        self,
        names: Sequence[str] = ("delete_agent", "send_email"),
        policy: Policy | None = None,
        defaults: dict[str, Verdict] | None = None,
        describer: Callable[[str, dict[str, Any]], str] | None = None,
        executor: Callable[[str, dict[str, Any]], str] | None = None,
    ) -> Gate:
        specs = [ToolSpec(n, n, OBJ, (defaults or {}).get(n)) for n in names]
        return Gate(specs, executor or self.executor, policy=policy, describer=describer)


class Harness:
    """Runs the core loop with parks saved as real files under ``home``."""

    def __init__(self, home: Path, model: Any, toolsets: Sequence[Toolset], **config: Any) -> None:
        self.store = ParkStore(home)
        self.model = model
        self.toolbox = Toolbox(toolsets)
        self.config = LoopConfig(**config)

    def sink(self, parent: str | None = None) -> Callable[[ParkDraft], str]:
        def save(draft: ParkDraft) -> str:
            context = RunContext(task="t", model="test", policy="test")
            state = draft.to_state(
                self.store.new_id(), "2026-12-03T00:00:00+00:00", context, parent
            )
            self.store.save(state)
            return state.id

        return save

    def run(self, task: str = "do it") -> LoopOutcome:
        return run_loop(
            self.model, self.toolbox, [Message.user_text(task)], self.config, self.sink()
        )

    def decide(self, park_id: str, raw_decision: object) -> ParkState:
        """Record a decision as `butler resume` does (missing or malformed → denial)."""
        state = self.store.load(park_id)
        state.status = "decided"
        state.decision = read_decision(raw_decision)
        if len(state.approvals) > 1:  # one answer for every asked call, as --approve gives
            state.decisions = {a.call_id: state.decision for a in state.approvals}
        self.store.save(state)
        return state

    def carry_on(self, park_id: str, journal: Callable[..., Any] = ParkJournal) -> LoopOutcome:
        """Continue a decided park from what is on disk, as a fresh process would."""
        state = self.store.load(park_id)
        assert state.decision is not None
        return continue_after_decision(
            self.model,
            self.toolbox,
            state,
            state.decided_calls(),
            journal(self.store, state),
            self.config,
            self.sink(park_id),
        )

    def resume(self, park_id: str, raw_decision: object) -> LoopOutcome:
        self.decide(park_id, raw_decision)
        return self.carry_on(park_id)


def tool_results(outcome: LoopOutcome) -> list[dict[str, Any]]:
    return [b.to_dict() for m in outcome.messages for b in m.content if b.type == "tool_result"]
