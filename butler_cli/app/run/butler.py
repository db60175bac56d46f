"""Runs: a butler over a session (app/run/session.py) runs tasks and resumes parks.

The one place that knows every layer; the CLI calls one function here per command.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from butler_cli.app.chat import conversations as convs
from butler_cli.app.config.options import RunOptions, recorded_options
from butler_cli.app.parks.approvals import keep, kept_for
from butler_cli.app.parks.decisions import now_iso, park_store, summary_of
from butler_cli.app.run.audit import AuditObserver
from butler_cli.app.run.masking import MaskingProvider
from butler_cli.app.run.notify import Notifier
from butler_cli.app.run.report import TaskReport
from butler_cli.app.run.session import Session, open_session, remember_park_key
from butler_cli.core.errors import ToolUnavailable
from butler_cli.core.loop import (
    LoopConfig,
    LoopObserver,
    LoopOutcome,
    Observers,
    ParkDraft,
    ParkSink,
    continue_after_decision,
    run_loop,
)
from butler_cli.core.messages import ImageBlock, Message, TextBlock
from butler_cli.core.notices import notice
from butler_cli.core.provider import ModelRequest, Provider, Usage
from butler_cli.memory.capture import actions_done, capture_turn
from butler_cli.providers import model_spec_of, resolve_model
from butler_cli.store.audit import AuditLog
from butler_cli.store.faults import crash_point

if TYPE_CHECKING:
    from butler_cli.app.run.instructions import Instructions
    from butler_cli.core.grants import Grant, GrantBook, KeptApproval
    from butler_cli.core.park import Decision, ParkState, RunContext
    from butler_cli.memory.store import MemoryStore
    from butler_cli.policy.loader import LoadedPolicy
    from butler_cli.store.conversations import ConversationStore
    from butler_cli.store.journal import ParkJournal
    from butler_cli.store.parks import ParkStore
    from butler_cli.tools.masking import MaskingToolbox
    from butler_cli.tools.mcp_hub import McpHub

#: Gives each task of a batch its own observer (e.g. progress output), or None; the third
#: argument is the task's conversation id (None when the store could not be written).
ObserverFactory = Callable[[int, str, str | None], LoopObserver | None]


DEFAULT_PERSONA = (
    "You are butler, a personal assistant in the person's terminal. Be brief and concrete. "
    "Reading and the clock run at once; changing, deleting or sending anything waits for the "
    "person's approval, so ask for such actions plainly and accept a refusal. Remember durable "
    "facts about the person with the memory tools."
)


def system_prompt(block: str, persona: str, instructions: str = "") -> str:
    """F5: the frozen block leads, the persona follows, then the project instructions (fenced,
    see app/run/instructions.py); nothing per-turn comes before them."""
    prompt = f"{block}\n\n{persona or DEFAULT_PERSONA}"
    return f"{prompt}\n\n{instructions}" if instructions else prompt


#: The recorded options a park takes from what the session made of them (the model spec an
#: alias names, the policy loaded, the memory's profile…) rather than as resolved.
_MADE = frozenset(
    {"model", "policy", "system", "max_rounds", "profile", "policy_file", "model_options"}
)


class Butler:
    """One run — a task, a resumed park, or a chat's turns — on a :class:`Session` (the model,
    policy, tools, memory and home it keeps), with what is the run's own."""

    def __init__(
        self,
        session: Session,
        grants: GrantBook | None = None,
        release: Callable[[Session], None] | None = None,
    ) -> None:
        """One run (or a chat's runs) on ``session``, with what is the run's own: the session
        grants, the kept approvals as they are now, the hooks. ``release`` takes the session
        back when the run closes (a kept session); by default closing closes it."""
        self.session = session
        self._release: Callable[[Session], None] | None = release or Session.close
        self._store: ParkStore | None = None
        self.audit = AuditLog(session.home)
        #: The model this run talks to: the session's, until the chat's `/model` switches it.
        self.provider = session.provider
        self.model_spec = session.model_spec
        self.config = LoopConfig(
            system=system_prompt(session.block, session.persona, session.instructions.text),
            max_rounds=session.max_rounds,
            allow_runs=session.options.yes_safe,
            grants=grants,
            kept=kept_for(session.home, session.cwd),  # read now: one kept since counts
        )
        remember_park_key(session.home)  # made since the session was built, perhaps
        self._told: set[str] = set()
        #: The [hooks]: fired once per report, by run_task and resume, after the lock is let go.
        self.notifier = Notifier.from_config(session.settings.hooks)
        #: Where its tasks come from (``chat``, ``run``, ``schedule ID``…): a park records it
        #: so the inbox and `pending` can say where a park came from.
        self.origin = "run"

    # What the session keeps, read from it (never copied: one session, one truth).
    @property
    def home(self) -> Path:
        return self.session.home

    @property
    def policy(self) -> LoadedPolicy:
        return self.session.policy

    @property
    def cwd(self) -> Path:
        return self.session.cwd

    @property
    def memory(self) -> MemoryStore:
        return self.session.memory

    @property
    def block(self) -> str:
        return self.session.block

    @property
    def instructions(self) -> Instructions:
        return self.session.instructions

    @property
    def toolbox(self) -> MaskingToolbox:
        return self.session.toolbox

    @property
    def mcp(self) -> McpHub | None:
        return self.session.mcp

    @property
    def store(self) -> ParkStore:
        """The parks, opened on first use (a round that never parks loads none of it)."""
        if self._store is None:
            self._store = park_store(self.home)
        return self._store

    @property
    def conversations(self) -> ConversationStore:
        """The conversation store, opened on first use (the chat's first prompt waits for
        nothing of it) and kept by the session: a session `serve` keeps keeps it open."""
        return self.session.conversations

    @classmethod
    def build(
        cls,
        opts: RunOptions,
        *,
        cwd: Path | None = None,
        home: Path | None = None,
        grants: GrantBook | None = None,
        recorded: RunContext | None = None,
    ) -> Butler:
        """A butler on a session of its own (see :func:`~butler_cli.app.run.session.open_session`),
        closed with it: a chat, one `butler run` batch, one `butler resume`."""
        return cls(open_session(opts, cwd=cwd, home=home, recorded=recorded), grants)

    def context(self, task: str) -> RunContext:
        """What a park records to continue the task in a fresh process (built when a round
        parks: the park's models load then, not on every run)."""
        from butler_cli.core.park import RunContext

        options = self.session.options
        return RunContext(
            task=task,
            model=self.model_spec,
            policy=self.policy.spec,
            system=self.session.persona,
            max_rounds=self.config.max_rounds,
            cwd=str(self.cwd),
            profile=self.memory.profile,
            policy_file=str(self.session.policy_file) if self.session.policy_file else None,
            model_options=dict(options.model_options or {}),
            memory_block=self.block,
            instructions=self.instructions.text,
            origin=self.origin,
            # every other recorded option as resolved (base URL, --no-stream…), by its name
            **{name: getattr(options, name) for name in recorded_options() if name not in _MADE},
        )

    def keep_approval(self, grant: Grant, state: ParkState, call_id: str) -> KeptApproval | None:
        """Keep an approval ("always allow this here") of a park's call for the park's folder,
        bound to the files it names now; audited like a grant (its number and scope, never
        its values). Only the one door calls this (``app/parks/door.decide``), holding the
        park once its decision is recorded. None when its files cannot be resolved now."""
        bound = self.bind_grant(grant)
        if bound.exact is not None and bound.judged is None:
            return None
        kept, new = keep(self.home, bound, state.context.cwd, now_iso())
        if new:
            self.audit.record_grant(
                number=kept.number,
                tool=bound.tool,
                scope="exact" if bound.exact is not None else bound.scope_keys(),
                args=state.arguments_of(call_id),
                kept=True,
            )
        return kept

    def bind_grant(self, grant: Grant) -> Grant:
        """An exact grant also remembers the files its arguments resolve to now: a later call
        with the same text that names other files (a folder swapped for a symlink) asks again."""
        from butler_cli.core.grants import canonical

        gate = self.toolbox.gate_for(grant.tool)
        if grant.exact is None or gate is None:
            return grant
        try:
            judged = gate.judged(grant.tool, json.loads(grant.exact))
        except (ValueError, OSError):
            return grant
        return replace(grant, judged=canonical(dict(judged)))

    def model(self) -> Provider:
        """The provider as the loop meets it: every answer masked as it arrives (a key a model
        server echoes back never reaches the screen, a park, the conversation or memory)."""
        return MaskingProvider(self.provider)

    @contextmanager
    def answered_by(self, provider: Provider | None) -> Iterator[None]:
        """While it holds, ``provider`` answers in the model's place (the chat's `!command`:
        the person's own call, then no model call); the model again afterwards, whatever
        happened. None changes nothing."""
        if provider is None:
            yield
            return
        model = self.provider
        self.provider = provider
        try:
            yield
        finally:
            self.provider = model

    @contextmanager
    def configured(self, config: LoopConfig) -> Iterator[None]:
        """While it holds, the loop runs under ``config`` (the chat's `/init`: every governed
        call asked); the run's own config again afterwards, whatever happened — with the
        approvals kept meanwhile (a decision re-reads them into the config in use)."""
        own = self.config
        self.config = config
        try:
            yield
        finally:
            self.config = replace(own, kept=self.config.kept)

    def switch_model(self, name: str) -> str:
        """The chat's `/model NAME`: the next turns use that model (an alias or a spec, as
        the session's config names them), with the session's base URL, model options and
        streaming; a bad name raises and changes nothing. Its spec."""
        settings, options = self.session.settings, self.session.options
        spec = settings.model_spec(name)
        provider = resolve_model(
            spec,
            options.base_url,
            settings.providers,
            options.model_options,
            stream=settings.streams(options),
        )
        self.provider = provider
        self.model_spec = model_spec_of(provider, spec)
        return self.model_spec

    def summarize(self, prompt: str) -> str:
        """The configured model as the memory's summarizer (C2)."""
        return self.summarizer([])(prompt)

    def summarizer(self, spent: list[Usage]) -> Callable[[str], str]:
        """The configured model as a summarizer (a compaction, a consolidation) whose every
        call's usage joins ``spent``: `/cost` and the saved record count these calls too."""

        def summarize(prompt: str) -> str:
            response = self.model().complete(ModelRequest("", [Message.user_text(prompt)], []))
            spent.append(response.usage)
            return response.text

        return summarize

    def _finish(self, task: str, outcome: LoopOutcome) -> TaskReport:
        """C1: a completed turn is captured (a parked one is captured by its resume)."""
        self.toolbox.check_gate()  # a swap by anything beside the task is seen before it ends
        report = TaskReport.from_outcome(task, outcome)
        if report.status in ("done", "limit"):
            capture_turn(self.memory, task, actions_done(report.messages))
        return report

    def _park_sink(self, task: str, parent: str | None) -> ParkSink:
        def sink(draft: ParkDraft) -> str:
            self.toolbox.check_gate()  # never a park in a home swapped since the start
            context = self.context(task)
            state = draft.to_state(self.store.new_id(), now_iso(), context, parent, self.session.id)
            self.store.save(state)  # on disk before anyone is asked (X1)
            crash_point("park-written")
            return state.id

        return sink

    def _observers(self, observer: LoopObserver | None, resumed: str | None = None) -> LoopObserver:
        audit = AuditObserver(self.audit, resumed)
        return Observers(audit, observer) if observer is not None else audit

    def run_task(
        self,
        task: str,
        observer: LoopObserver | None = None,
        history: Sequence[Message] = (),
        prompt: str | None = None,
        conversation: str | None = None,
        images: Sequence[ImageBlock] = (),
    ) -> TaskReport:
        """Run one task; ``history`` is the conversation so far (chat), empty for `run`.
        ``prompt`` is what the model is sent for it when that is more than the task's words
        (attached context); the park and the report keep the task as the person typed it.
        ``conversation`` (its id in the store) is what the [hooks] are told it belongs to;
        ``images`` (attached) go in the same user message, after its text."""
        self._tell_mcp_failures()
        outcome = run_loop(
            self.model(),
            self.toolbox,
            [*history, _user(task if prompt is None else prompt, images)],
            self.config,
            self._park_sink(task, None),
            self._observers(observer),
        )
        report = self._finish(task, outcome)
        self.notifier.after(report, conversation)
        return report

    def close(self) -> None:
        """The run is over (safe to call twice): its session is closed, or given back to the
        process that keeps it. The MCP servers are the process's: they stop when it ends."""
        release, self._release = self._release, None
        if release is not None:
            release(self.session)

    def __enter__(self) -> Butler:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None and self._release is not None:
            self._release = Session.close  # a run that failed is not kept: nor is its session
        self.close()

    def _tell_mcp_failures(self) -> None:
        """Name each MCP server that could not be listed (once per butler)."""
        for name, problem in (self.mcp.failures if self.mcp is not None else {}).items():
            if name not in self._told:
                self._told.add(name)
                notice(
                    f"MCP server '{name}' did not start ({problem}); going on without it "
                    f"(its stderr: {self.mcp.log_dir / name}.log)"  # type: ignore[union-attr]
                )

    def check_reachable(self, state: ParkState, decisions: Mapping[str, Decision]) -> None:
        """Every approved call's tool must be able to run now (its MCP server started), or the
        decision is not recorded: the park stays pending for a later resume."""
        for asked in state.approvals:
            if decisions[asked.call_id].approved:
                self._reachable(state.id, asked.tool)

    def _reachable(self, park_id: str, tool: str) -> None:
        problem = None
        server = self.mcp.server_of(tool) if self.mcp is not None else None
        if server is not None and self.mcp is not None:
            from butler_cli.app.run.mcp_servers import unavailable

            problem = unavailable(self.mcp, server, tool)
        if problem is None and self.toolbox.owner(tool) is None:
            problem = "no tool of that name is offered now"
        if problem is not None:
            raise ToolUnavailable(
                f"park {park_id} stays pending: '{tool}' cannot run now — {problem}. "
                "Nothing ran and the approval is not used; resume it again when it can run"
            )

    def made(self, state: ParkState) -> bool:
        """Whether this butler's session made the park (its id is recorded in the park): then
        it continues the park itself; any other park goes on from what it recorded."""
        return state.session is not None and state.session == self.session.id

    def continue_decided(
        self,
        state: ParkState,
        decisions: Mapping[str, Decision],
        observer: LoopObserver | None = None,
    ) -> TaskReport:
        """Continue a park whose decision is recorded (by the one door, holding it); the
        outcome joins the conversation the park was made in, whoever decided it — an action
        the person stopped (Ctrl-C) as ``interrupted``: the park is finished, so nothing may
        say it waits or suggest a `butler resume` that would refuse it."""
        approved = summary_of(decisions).approved
        try:
            report = self.continue_park(state, decisions, observer)
        except KeyboardInterrupt:
            stopped = TaskReport(task=state.context.task, status="interrupted")
            convs.park_decided(self, state.id, approved, stopped)
            raise
        convs.park_decided(self, state.id, approved, report)
        return report

    def told(self, park_id: str, report: TaskReport) -> None:
        """The [hooks], once the park's lock is let go: a slow one delays no other decider."""
        cid = self.conversations.of_park(park_id) if self.notifier.active else None
        self.notifier.after(report, cid)

    def continue_park(
        self,
        state: ParkState,
        decisions: Mapping[str, Decision],
        observer: LoopObserver | None = None,
    ) -> TaskReport:
        """Answer the parked round exactly once, each asked call by its decision, then let
        the loop go on (R2–R3)."""
        from butler_cli.store.journal import ParkJournal

        assert state.decision is not None
        self._tell_mcp_failures()
        journal = ParkJournal(self.store, state)
        try:
            outcome = continue_after_decision(
                self.model(),
                self.toolbox,
                state,
                decisions,
                journal,
                self.config,
                self._park_sink(state.context.task, state.id),
                self._observers(observer, resumed=state.id),
            )
        except KeyboardInterrupt:
            self._interrupted(journal)
            raise
        return self._finish(state.context.task, outcome)

    def _interrupted(self, journal: ParkJournal) -> None:
        """The person stopped a decided round (Ctrl-C, SIGINT): recorded durably before the
        process goes, so the park is finished as interrupted and nothing continues it; a
        process that dies instead leaves it decided, and is recovered."""
        state = journal.state
        if state.status != "decided":  # the round was answered: the park is finished already
            return
        running = journal.interrupted()
        what = ", ".join(running) if running else "the round"
        self.audit.record(
            "interrupted",
            park=state.id,
            tool=state.approval.tool,
            args=state.approved_arguments(),
            outcome="stopped by you",
            text=f"{len(running)} call(s) stopped while running",
        )
        notice(
            f"{what}: stopped by you; it may have partly run. Park {state.id} is finished and "
            "will not be continued"
        )


def _user(text: str, images: Sequence[ImageBlock]) -> Message:
    """The person's turn: the text, then each attached image."""
    return Message(role="user", content=[TextBlock(text=text), *images])
