"""The chat past its first prompt: the butler (model, policy, tools, memory), a turn and what
it shows, the approval prompt, the slash commands' work — and rich, which draws all of it.

:mod:`butler_cli.repl.session` draws the first prompt without any of this: it imports this
module once, on the thread that builds the butler while the person types (a named lazy edge in
tests/test_imports.py), and hands it every line from the first one on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prompt_toolkit import PromptSession
from rich.console import Console

from butler_cli.app.chat import custom
from butler_cli.app.chat.chat import Conversation
from butler_cli.app.chat.conversations import Record, find, recap
from butler_cli.app.chat.shell import RAN_NOTE
from butler_cli.app.config.editor import compose
from butler_cli.app.config.options import RunOptions, options_from
from butler_cli.app.parks.decisions import load_park
from butler_cli.app.parks.door import Answer
from butler_cli.app.parks.parks import waiting_parks
from butler_cli.app.run.butler import Butler
from butler_cli.app.run.report import TaskReport
from butler_cli.core.errors import ButlerError
from butler_cli.core.grants import GrantBook
from butler_cli.core.loop import CUT_MARKER
from butler_cli.core.messages import ImageBlock, ToolResultBlock
from butler_cli.repl import approval
from butler_cli.repl.comforts import AttachRefused, Tally, attach, turn_usage
from butler_cli.repl.commands import dispatch
from butler_cli.repl.input import answer_input
from butler_cli.repl.progress import ChatProgress
from butler_cli.ui.console import out
from butler_cli.ui.markup import markdown
from butler_cli.ui.markup import safe as escape
from butler_cli.ui.stream import Wrapped
from butler_cli.ui.text import visible

if TYPE_CHECKING:
    from butler_cli.core.park import ParkState
    from butler_cli.core.provider import Usage


class Chat:
    """One person's chat session once its butler is built: each line goes to :meth:`line`."""

    def __init__(self, butler: Butler, conversation: Conversation) -> None:
        self.butler = butler
        self.conversation = conversation
        self.console: Console = out()
        # A parked call is shown by its approval box, right after: no progress line repeats it.
        self.progress = ChatProgress(self.console, parked_lines=False)
        #: Tokens spent this session, for /cost.
        self.tally = Tally()
        self.running = True  # /exit ends it
        self._answers: PromptSession[str] | None = None  # made on the first approval

    @staticmethod
    def resume_ids(home: str) -> list[tuple[str, str]]:
        """The parks `/resume` takes, for completion, each with its tool and task
        (neutralised): read from the home, so they complete before the butler is built."""
        summaries, _ = waiting_parks(Path(home))
        return [(s.id, visible(f"{s.tool} · {s.task}")) for s in summaries]

    @classmethod
    def build(
        cls,
        given: RunOptions | Mapping[str, Any] | None,
        saved: Record | None = None,
        *,
        script: str | None = None,
    ) -> Chat:
        """The butler the chat's flags make (the rest resolved as `butler run` resolves it;
        ``script``: the demo's model, whatever they name), and its conversation — carrying on
        ``saved`` (`chat -c` / `--conversation`). A person is present: a policy `allow` runs
        (the unattended --yes-safe rule is for `run`)."""
        if isinstance(given, Mapping):  # the fast entry's flags, by field name
            given = options_from(dict(given))
        opts = replace(given or RunOptions(), yes_safe=True)
        if script is not None:
            opts = replace(opts, model=script)
        butler = Butler.build(opts, grants=GrantBook())  # grants live in this session only
        client = getattr(butler.provider, "client", None)
        if callable(client):
            client()  # make the provider's HTTP client now, while the person is still typing
        conversation = Conversation(butler, opts)
        if saved is not None:
            conversation.adopt(saved)
        return cls(butler, conversation)

    def line(self, text: str) -> bool:
        """One line the person sent: a slash command or a turn. False once they asked to
        leave (/exit)."""
        if text.lstrip().startswith("/"):
            dispatch(self, text)
        elif text.lstrip().startswith("!"):
            self.shell(text.lstrip()[1:])
        else:
            self.turn(text[1:] if text.startswith("\\!") else text)
        return self.running

    def argument_ids(self, command: str) -> list[tuple[str, str]]:
        """The ids `/forget` and `/continue` take, for completion, each with what it is (a
        memory's text, a conversation's task; neutralised)."""
        if command == "/forget":
            return [(e.id, visible(e.text)) for e in self.butler.memory.entries()]
        if command == "/continue":
            return [(c.id, visible(c.title)) for c in self.butler.conversations.recent(50)]
        return []

    def continue_saved(self, given: str) -> None:
        """`/continue ID`: this session carries on that conversation."""
        try:
            record = find(self.butler.conversations, given, str(self.butler.cwd))
        except ButlerError as exc:
            self.console.print(f"[red]butler:[/red] {escape(exc.message)}")
            return
        assert record is not None  # an id was given
        self.conversation.adopt(record)
        for line in recap(record):
            self.console.out(visible(line), highlight=False)

    def leave(self) -> None:
        """Ctrl-D or /exit: past the threshold the session's turns are consolidated (C2; a
        failure changes nothing), the butler is closed (its MCP servers, its memory database)."""
        try:
            try:
                done = self.conversation.consolidate_if_due()
            finally:
                self.conversation.settle_usage()  # the record counts the consolidation's calls
            if done is not None:
                self.console.print(
                    f"Folded {done.absorbed} older turns into memory: "
                    f"{len(done.facts)} new fact{'' if len(done.facts) == 1 else 's'} about you."
                )
                for fact in done.facts:  # shown, so a wrong one is seen and forgotten
                    self.console.out(visible(f"- [{fact.id}] {fact.text}"), highlight=False)
                if done.facts:
                    self.console.print(
                        "Forget a wrong one with `butler memory forget ID`; "
                        "review them with `butler memory list --new`."
                    )
        except (ButlerError, KeyboardInterrupt) as exc:
            message = exc.message if isinstance(exc, ButlerError) else "interrupted"
            self.console.print(f"Memory consolidation skipped: {escape(message)}")
        with contextlib.suppress(ButlerError):
            self.butler.close()
        self.console.print("Goodbye.")

    def ask(self, state: ParkState) -> Answer | None:
        if self._answers is None:
            self._answers = answer_input()
        return approval.ask(self.console, self._answers.prompt, state)

    def turn(self, text: str) -> None:
        try:
            prompt, images = attach(self, text)
        except AttachRefused as exc:
            self.console.out(f"{exc} — nothing was sent", highlight=False)
            return
        self.send(text, prompt if prompt != text else None, images)

    def send(
        self, text: str, prompt: str | None = None, images: list[ImageBlock] | None = None
    ) -> None:
        """Send one turn and show what came of it: ``text`` as typed (the task a park, a
        title and a hook see), ``prompt`` what the model is sent when files are attached,
        ``images`` the attached images (sent as images)."""
        conversation = self.conversation
        conversation.say = lambda line: self.console.out(visible(line), highlight=False)
        self.shown(lambda: conversation.send(text, self.ask, self.progress, prompt, images or []))

    @staticmethod
    def composed(text: str) -> str | None:
        """``text`` composed in the person's $EDITOR, checked before it runs like every program
        the butler starts with their rights (`app/config/editor.py`); None, said in one line,
        when it is refused or fails."""
        try:
            return compose(text, [Path.cwd()])
        except ButlerError as exc:
            out().print(f"[red]butler:[/red] {escape(exc.message)}")
            return None

    def edit_and_send(self, text: str) -> None:
        """`/editor [TEXT]`: compose the turn in $EDITOR, then send what was saved (nothing
        when it is empty or the editor did not run)."""
        composed = self.composed(text)
        if composed is not None and composed.strip():
            self.turn(composed)
        elif composed is not None:
            self.console.out("nothing to send: the editor left the message empty", highlight=False)

    def customs(self) -> list[custom.Custom]:
        """The custom slash commands as the folders hold them now (read at each use)."""
        butler = self.butler
        guard = butler.session.guard
        return custom.found(custom.yours(), butler.cwd, butler.home, list(guard.protected))

    def run_custom(self, command: custom.Custom, arguments: str, typed: str) -> None:
        """`/NAME args`: the command's text, ``$ARGUMENTS`` filled, sent as this turn's prompt
        (the turn's task is the line as typed); what the model then does is judged as ever."""
        prompt = command.prompt(arguments)
        if command.source == "yours":
            self.console.out(
                visible(f"{typed.split()[0]}: your command {command.path}"), highlight=False
            )
        else:  # a cloned repository's words: shown whole before they go to the model
            said = f"{typed.split()[0]}: the project's command {command.path} sends:"
            self.console.out(visible(said), highlight=False)
            self.console.out(visible(prompt, lines=True), highlight=False, style="dim")
        self.send(typed, prompt)

    def shell(self, command: str) -> None:
        """`!command`: the person's own command, as a ``run_command`` under the gate (asked
        about where the policy asks); its output is shown here and joins the conversation."""
        conversation = self.conversation
        conversation.say = lambda line: self.console.out(visible(line), highlight=False)
        self.shown(lambda: conversation.shell(command, self.ask, self.progress), self._ran)

    def _ran(self, report: TaskReport) -> None:
        """A `!command`'s report: what the command gave back, whole, in place of an answer."""
        if report.status == "done" and report.text == RAN_NOTE:
            results = [
                block
                for message in report.messages[-2:-1]
                for block in message.content
                if isinstance(block, ToolResultBlock)
            ]
            for result in results:
                self.progress.stop()
                self.console.out(visible(result.content, lines=True), highlight=False)
            report = replace(report, text="")
        self.render(report)

    def shown(
        self, work: Callable[[], TaskReport], render: Callable[[TaskReport], None] | None = None
    ) -> None:
        """Run a turn (or a resume) and render its report; Ctrl-C says what was cut short, a
        ButlerError is one line."""
        try:
            report = work()
        except KeyboardInterrupt:
            self.interrupted()
            return
        except ButlerError as exc:
            self.console.print(f"[red]butler:[/red] {escape(exc.message)}")
            return
        (render or self.render)(report)

    def interrupted(self) -> None:
        """Ctrl-C in a turn: say what was cut short, and that nothing more runs for it."""
        progress = self.progress
        progress.stop()
        running = progress.running
        if running:
            progress.forget_running()
            said = (
                f"{running[0]} was interrupted; it may have partly run"
                if len(running) == 1
                else f"{', '.join(running)} were interrupted; they may have partly run"
            )
            self.console.out(f"stopped: {said}", highlight=False)
        self.console.print("[yellow]cancelled[/yellow] — nothing more will run for that turn")

    def resume(self, given_id: str) -> None:
        """`/resume ID`: the same prompt as an inline park; a crashed resume is recovered."""

        def decided() -> TaskReport:
            state = load_park(given_id)
            if state.status == "pending":
                report = TaskReport(task=state.context.task, status="parked", park_id=state.id)
            else:  # decided but unfinished: recover; finished: refused with a clear line
                report = self.conversation.resume(state.id, Answer(), self.progress)
            return self.conversation.answer_parks(report, self.ask, self.progress)

        self.shown(decided)

    def count(self, usage: Sequence[Usage]) -> None:
        """Model calls join `/cost` (a scripted model's, which spend nothing, do not)."""
        for used in usage:
            if not used.known or used.input_tokens or used.output_tokens:
                self.tally.add(self.butler.model_spec, used)

    def render(self, report: TaskReport) -> None:
        self.progress.stop()
        shown = self.progress.streamed  # already rendered as it streamed
        if report.text and report.status != "parked" and not shown:
            self.console.print(Wrapped(markdown(report.text)))
        if shown and report.stop_reason == "max_tokens":  # streamed without the marker
            self.console.out(CUT_MARKER, highlight=False)
        for said in report.warnings:  # an empty answer, a stream asked again: never silent
            self.console.out(f"note: {visible(said)}", highlight=False)
        self.count(report.usage)
        line = turn_usage(report.usage)
        if line is not None:
            self.console.print(f"[dim]{line}[/dim]")
        if report.status == "failed":
            self.console.print(f"[red]failed:[/red] {escape(report.error or 'unknown error')}")
        elif report.status == "limit":
            self.console.print("[yellow]stopped at the round limit[/yellow]")
        self.console.print()  # a blank line sets each turn apart from the next
