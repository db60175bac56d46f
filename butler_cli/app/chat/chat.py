"""A chat conversation: turns that carry on, parks decided inline through the one door.

Terminal-free: the REPL supplies an ``ask`` callback that shows a park to a person and
returns their answer (or None for "later"). Deciding goes through ``app/parks/door.decide``,
the same exactly-once door as `butler resume` and the inbox, so a park decided here cannot be
decided again; the session's own butler continues the task (one butler per session).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from butler_cli.app.chat import compaction, init, shell
from butler_cli.app.chat import conversations as convs
from butler_cli.app.config.options import RunOptions
from butler_cli.app.parks.approvals import folder_key, kept_for, list_kept, revoke
from butler_cli.app.parks.decisions import load_park
from butler_cli.app.parks.door import Answer, decide
from butler_cli.app.run.butler import Butler
from butler_cli.app.run.report import TaskReport
from butler_cli.core.grants import GrantBook, KeptApproval
from butler_cli.core.loop import LoopObserver
from butler_cli.core.messages import ImageBlock, Message
from butler_cli.core.notices import notice
from butler_cli.core.provider import Provider, Usage
from butler_cli.memory.capture import Consolidated, consolidate, due
from butler_cli.store.conversations import Record

if TYPE_CHECKING:  # a park's models load when a turn parks, not for every turn
    from butler_cli.core.park import ParkState


#: Shows a park to a person and returns their answer (one for every call it asks about, or
#: call by call, with what to keep), or None to leave it parked.
Ask = Callable[["ParkState"], Answer | None]


class Conversation:
    """The session's conversation; a parked turn joins it only once it is answered."""

    def __init__(self, butler: Butler, opts: RunOptions, origin: str = "chat") -> None:
        self.butler = butler
        butler.origin = origin
        self.opts = opts
        self.messages: list[Message] = []
        #: Its id in the conversation store: given on the first turn, or by continuing one.
        self.id: str | None = None
        #: Where a one-line report goes (a compaction made before a turn): the chat's screen.
        self.say: Callable[[str], None] = notice
        #: Model calls made outside a turn's loop (compaction, consolidation) not yet counted:
        #: a turn takes them into its usage; `/compact` and the session's end settle them.
        self.side_usage: list[Usage] = []

    @property
    def grants(self) -> GrantBook | None:
        return self.butler.config.grants

    def kept_here(self) -> list[KeptApproval]:
        """The approvals kept for this session's folder (``butler grants`` lists every one)."""
        here = folder_key(self.butler.cwd)
        return [k for k in list_kept(self.butler.home) if k.folder == here]

    def revoke_kept(self, number: int) -> KeptApproval:
        """Take back kept approval ``number``: from the next call on, this session asks too."""
        gone = revoke(self.butler.home, number)
        self.butler.config = replace(
            self.butler.config, kept=kept_for(self.butler.home, self.butler.cwd)
        )
        return gone

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
        images: Sequence[ImageBlock] = (),
        answerer: Provider | None = None,
    ) -> TaskReport:
        """One user turn: run it, and decide every park it makes until it ends or waits. The
        turn joins the saved conversation; a parked one is linked to its park, and deciding it
        (here or with `butler resume`) adds the outcome. Before a request would pass the
        model's window the older turns are compacted (said in one line); a provider that
        refuses the request as too long teaches the window, and the turn runs once more.
        ``text`` is what the person typed (a park's task, a title, a hook event); ``prompt``,
        when files are attached, what the model is sent: attachments live in the
        conversation only; ``images`` go with it, as images. ``answerer``: who answers in the
        model's place for this turn and its inline decisions (`!command`); compaction before
        it still asks the model."""
        if self.id is None:
            self.id = convs.begin(self.butler, "chat", text)
        sent = text if prompt is None else prompt
        self._fit(sent)
        base = len(self.messages)

        def run() -> TaskReport:  # the turn on the messages as they are (once more if compacted)
            return self.butler.run_task(
                text, observer, self.messages, prompt, self.id, images=images
            )

        with self.butler.answered_by(answerer):
            report = run()
            why = self._too_long(report, sent)
            if why is not None and self.compact(why):
                base = len(self.messages)
                report = run()
            # The compaction's calls belong to this turn: its line, `/cost` and the record
            # count them.
            report.usage = [*self.side_usage, *report.usage]
            self.side_usage = []
            convs.record_turn(self.butler, self.id, report, base)
            report = self.answer_parks(report, ask, observer)
        if report.status in ("done", "limit"):
            self.messages = report.messages
        return report

    def shell(self, command: str, ask: Ask, observer: LoopObserver | None = None) -> TaskReport:
        """`!command`: the person's own ``run_command``, through the gate like a model's, in a
        turn of this conversation (``app/chat/shell.py``); a bad line raises a UsageError."""
        argv = shell.argv_of(command)
        person = shell.PersonsCommand(argv)
        return self.send(f"!{command}", ask, observer, shell.prompt_for(argv), answerer=person)

    def init(self, given: str, ask: Ask, observer: LoopObserver | None = None) -> TaskReport:
        """`/init [FILE]`: the model drafts the folder's instructions file; every governed call
        of the turn — the write above all — is put to the person (``app/chat/init.py``)."""
        path = init.target(self.butler.cwd, given)
        with self.butler.configured(init.asking_everything(self.butler.config)):
            return self.send(f"/init {path.name}", ask, observer, init.prompt(path))

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
            room = int(window * compaction.FILL) - len(text) // compaction.CHARS_PER_TOKEN
            self.compact(f"about {tokens} tokens, near the {window}-token window", room)

    def compact(self, why: str = "as asked", target: int | None = None) -> int:
        """Make what is sent smaller (the memory block and the system prompt are untouched):
        the older turns folded into a summary the model writes, and when that is not enough
        (``target`` tokens; None: as small as it goes) the last turns' attachment bodies
        dropped and long tool results cut, said in one line. Nonzero when it shrank. The
        saved conversation keeps every turn whole; only what is sent is shorter."""
        done = compaction.compact(
            self.messages, self.butler.summarizer(self.side_usage), target=target
        )
        if done is None:
            return 0
        before = compaction.estimate(self.butler.config.system, self.messages)
        self.messages = done.messages
        after = compaction.estimate(self.butler.config.system, self.messages)
        self.say(_compacted_line(done, why, before, after))
        return max(done.folded, 1) if done.changed else 0

    def settle_usage(self) -> list[Usage]:
        """The model calls made outside a turn (a `/compact`, the session's consolidation),
        joined to the saved conversation's counts and handed over for `/cost`."""
        spent, self.side_usage = self.side_usage, []
        if spent and self.id is not None:
            convs.record_usage(self.butler, self.id, spent)
        return spent

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
        return consolidate(self.butler.memory, self.butler.summarizer(self.side_usage))

    def resume(
        self, park_id: str, answer: Answer, observer: LoopObserver | None = None
    ) -> TaskReport:
        """Hand a decision to the one door (``app/parks/door.decide``) and say what it kept:
        the task continues on this session's butler when this session made the park (so the
        memory block, the grants and the MCP servers stay the ones in use), else on a butler
        made for that park alone from what it recorded, closed afterwards."""
        decided = decide(park_id, answer, opts=self.opts, butler=self.butler, observer=observer)
        for kept in decided.kept:
            # the chat names its own commands; a Matrix room, the terminal's
            undo = (
                f"`/grants`, `/revoke kept {kept.number}`"
                if self.butler.origin == "chat"
                else f"`butler grants`, `butler grants revoke {kept.number}`"
            )
            self.say(
                f"kept approval {kept.number} ({kept.grant.describe()} in {kept.folder}): "
                f"from now on it runs without asking here ({undo})"
            )
        for why in decided.not_kept:
            self.say(f"not kept — {why}")
        return decided.report

    def answer_parks(
        self, report: TaskReport, ask: Ask, observer: LoopObserver | None = None
    ) -> TaskReport:
        """While the task is parked, ask about every call the round waits on and hand the
        answer to the one door; "later" leaves it parked. The park is read once to be shown
        (and once more under its lock, by the door)."""
        while report.status == "parked" and report.park_id is not None:
            answer = ask(load_park(report.park_id))
            if answer is None:
                return report
            resumed = self.resume(report.park_id, answer, observer)
            # The parked round's model call was spent too: the turn's usage counts every call.
            resumed.usage = [*report.usage, *resumed.usage]
            report = resumed
        return report


def _compacted_line(done: compaction.Compacted, why: str, before: int, after: int) -> str:
    """What a compaction did, in one line: what was folded, dropped or cut, and the sizes."""
    parts: list[str] = []
    if done.folded:
        parts.append(f"compacted {done.folded} earlier turn(s) into a summary")
    elif done.longer:
        parts.append("kept the earlier turns: their summary came out longer than they are")
    if done.dropped:
        names = ", ".join(done.dropped)
        parts.append(f"dropped the body of {len(done.dropped)} attachment(s) ({names})")
    if done.cut:
        parts.append(f"cut {done.cut} long tool result(s) to their first lines")
    if not (done.dropped or done.cut) and done.folded:
        parts.append(f"the last {compaction.KEEP_TURNS} turns are kept whole")
    return "; ".join([f"{parts[0]} ({why}): about {before} → {after} tokens", *parts[1:]])
