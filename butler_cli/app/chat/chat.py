"""A chat conversation: turns that carry on, parks decided inline through the resume path.

Terminal-free: the REPL supplies an ``ask`` callback that shows a park to a person and
returns their answer (or None for "later"). Deciding goes through :meth:`Butler.resume`, the
same exactly-once path as `butler resume`, so a park decided here cannot be decided again; the
session's own butler continues the task (one butler per session).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from butler_cli.app.chat import compaction
from butler_cli.app.chat import conversations as convs
from butler_cli.app.config.options import RunOptions
from butler_cli.app.parks.decisions import RoundAnswer, load_park
from butler_cli.app.run.butler import Butler
from butler_cli.app.run.report import TaskReport
from butler_cli.app.run.tasks import resume_park
from butler_cli.core.grants import Grant, GrantBook
from butler_cli.core.loop import LoopObserver
from butler_cli.core.messages import Message
from butler_cli.core.notices import notice
from butler_cli.memory.capture import Consolidated, consolidate, due
from butler_cli.store.conversations import Record

if TYPE_CHECKING:  # a park's models load when a turn parks, not for every turn
    from butler_cli.core.park import ParkState


@dataclass(frozen=True)
class Answer:
    """A person's answer at the approval prompt; ``grant`` remembers it for the session."""

    approved: bool
    note: str | None = None
    grant: Grant | None = None
    #: "always allow this here": kept beyond the session for the task's folder
    keep: Grant | None = None


#: Shows a park and returns the person's answer — one for every call it asks about, or one
#: per call id (each call of the round put to them in turn) — or None to leave it parked.
Ask = Callable[["ParkState"], Answer | Mapping[str, Answer] | None]


class Conversation:
    """The session's conversation; a parked turn joins it only once it is answered."""

    def __init__(self, butler: Butler, opts: RunOptions) -> None:
        self.butler = butler
        self.opts = opts
        self.messages: list[Message] = []
        #: Its id in the conversation store: given on the first turn, or by continuing one.
        self.id: str | None = None
        #: Where a one-line report goes (a compaction made before a turn): the chat's screen.
        self.say: Callable[[str], None] = notice

    @property
    def grants(self) -> GrantBook | None:
        return self.butler.config.grants

    def reset(self) -> None:
        self.messages = []
        self.id = None

    def adopt(self, record: Record) -> None:
        """Carry on a saved conversation: its messages become this session's, and the next
        turns join it."""
        self.messages = [Message.from_dict(m) for m in record.messages]
        self.id = record.summary.id

    def send(
        self,
        text: str,
        ask: Ask,
        observer: LoopObserver | None = None,
        prompt: str | None = None,
    ) -> TaskReport:
        """One user turn: run it, and decide every park it makes until it ends or waits. The
        turn joins the saved conversation; a parked one is linked to its park, and deciding it
        (here or with `butler resume`) adds the outcome. Before a request would pass the
        model's window the older turns are compacted (said in one line); a provider that
        refuses the request as too long teaches the window, and the turn runs once more.
        ``text`` is what the person typed (a park's task, a title, a hook event); ``prompt``,
        when files are attached, what the model is sent: attachments live in the
        conversation only."""
        if self.id is None:
            self.id = convs.begin(self.butler, "chat", text)
        sent = text if prompt is None else prompt
        self._fit(sent)
        base = len(self.messages)
        report = self.butler.run_task(
            text, observer, history=self.messages, prompt=prompt, conversation=self.id
        )
        why = self._too_long(report, sent)
        if why is not None and self.compact(why):
            base = len(self.messages)
            report = self.butler.run_task(
                text, observer, history=self.messages, prompt=prompt, conversation=self.id
            )
        convs.record_turn(self.butler, self.id, report, base)
        report = self.decide(report, ask, observer)
        if report.status in ("done", "limit"):
            self.messages = report.messages
        return report

    def _too_long(self, report: TaskReport, sent: str) -> str | None:
        """Why the turn is taken for too long for the model (so the older turns are compacted
        and it runs once more), or None: the provider said so (its window is learned), or
        the answer was empty with 0 output tokens (what a gateway makes of an overflow) or
        past the model's known window."""
        tokens = compaction.estimate(self.butler.config.system, self.messages, sent)
        spec, home = self.butler.model_spec, self.butler.home
        if report.status == "failed" and report.error_code == "context_too_long":
            window = compaction.learn(spec, home, report.error or "", tokens)
            return f"the provider said it was too long (window {window} tokens)"
        if report.status == "failed" and report.error_code == "possibly_too_long":
            return "the model answered nothing, with 0 output tokens: possibly too long for it"
        past = compaction.over(spec, home, tokens) if report.empty else None
        if report.status == "done" and past is not None:
            return f"the model answered nothing, at about {tokens} of its {past}-token window"
        return None

    def _fit(self, text: str) -> None:
        """Compact first when this turn's request would pass the model's known window."""
        tokens = compaction.estimate(self.butler.config.system, self.messages, text)
        window = compaction.over(self.butler.model_spec, self.butler.home, tokens)
        if window is not None:
            self.compact(f"about {tokens} tokens, near the {window}-token window")

    def compact(self, why: str = "as asked") -> int:
        """Fold the older turns into a summary the model writes (the memory block and the
        system prompt are untouched; the last turns stay whole); how many turns were folded.
        The saved conversation keeps every turn; only what is sent is shorter."""
        done = compaction.compact(self.messages, self.butler.summarize)
        if done is None:
            return 0
        before = compaction.estimate(self.butler.config.system, self.messages)
        self.messages = done.messages
        after = compaction.estimate(self.butler.config.system, self.messages)
        self.say(
            f"compacted {done.folded} earlier turn(s) into a summary ({why}): about {before} → "
            f"{after} tokens; the last {compaction.KEEP_TURNS} turns are kept whole"
        )
        return max(done.folded, 1)

    def last_turn(self) -> tuple[int, str] | None:
        """Where the last turn starts and the words it was sent with; None when there is none
        to take back (an empty conversation, or only a compaction's summary)."""
        starts = compaction.turn_starts(self.messages)
        if not starts or compaction.is_summary(self.messages[starts[-1]]):
            return None
        return starts[-1], self.messages[starts[-1]].text

    def undo(self) -> str | None:
        """Take the last turn out of the conversation (what the model is sent, and the saved
        record); its words, or None when there is none. What it did stays done."""
        last = self.last_turn()
        if last is None:
            return None
        start, words = last
        dropped = len(self.messages) - start
        self.messages = self.messages[:start]
        if self.id is not None:
            convs.drop_last(self.butler, self.id, dropped)
        return words

    def consolidate_if_due(self) -> Consolidated | None:
        """C2 at the end of a session, past the threshold: the facts the older turns were
        folded into (None: not due, or nothing folded)."""
        if not due(self.butler.memory):
            return None
        return consolidate(self.butler.memory, self.butler.summarize)

    def resume(
        self,
        park_id: str,
        answer: RoundAnswer,
        observer: LoopObserver | None = None,
        made_here: bool | None = None,
    ) -> TaskReport:
        """Decide a park and continue it: on this session's butler when this session made it
        (so the memory block, the grants and the MCP servers stay the ones in use), else on a
        butler made for that park alone from what it recorded, closed afterwards."""
        if made_here is None:
            made_here = self.butler.made(load_park(park_id))
        if made_here:
            return self.butler.resume(park_id, answer, observer)
        return resume_park(park_id, answer, self.opts, observer)

    def decide(
        self, report: TaskReport, ask: Ask, observer: LoopObserver | None = None
    ) -> TaskReport:
        """While the task is parked, ask about every call the round waits on; an answer
        resumes it, "later" leaves it parked. The park is read once to be shown (and once
        more under its lock to be decided, by the resume)."""
        while report.status == "parked" and report.park_id is not None:
            state = load_park(report.park_id)
            answer = ask(state)
            if answer is None:
                return report
            answers = (
                {a.call_id: answer for a in state.approvals}
                if isinstance(answer, Answer)
                else dict(answer)
            )
            from butler_cli.core.park import Decision

            for cid, given in answers.items():
                self._remember(state, cid, given)
            each = {cid: Decision(approved=a.approved, note=a.note) for cid, a in answers.items()}
            made_here = self.butler.made(state)
            answered = RoundAnswer(None, each=each)
            resumed = self.resume(report.park_id, answered, observer, made_here)
            # The parked round's model call was spent too: the turn's usage counts every call.
            resumed.usage = [*report.usage, *resumed.usage]
            report = resumed
        return report

    def _remember(self, state: ParkState, call_id: str, answer: Answer) -> None:
        """A session grant or a kept approval the person chose with one call's answer."""
        if answer.grant is not None and self.grants is not None:
            grant = self.butler.bind_grant(answer.grant)
            number = self.grants.add(grant)
            self.butler.audit.record_grant(
                number=number,
                tool=grant.tool,
                scope="exact" if grant.exact is not None else grant.scope_keys(),
                args=state.arguments_of(call_id),
            )
        if answer.keep is not None:
            self.butler.keep_approval(answer.keep, state, call_id)
