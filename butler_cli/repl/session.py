"""The chat loop: read a line, run a turn through the core, render, ask on parks.

Start-up is kept short: the first prompt is drawn with only prompt-toolkit loaded (rich and
the rest come after); the butler (model, policy, tools, memory) is built on a
thread while the person types, and collected on first use. What only a turn or a command
needs (the comforts, rich's escaping, pathlib) is imported where it is used.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable
from typing import TYPE_CHECKING

from butler_cli.app.chat.deferred import Deferred
from butler_cli.core.errors import ButlerError
from butler_cli.repl.commands import COMMANDS, dispatch
from butler_cli.repl.input import answer_input, chat_input
from butler_cli.repl.markup import escape

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from rich.console import Console

    from butler_cli.app.chat.chat import Answer, Conversation
    from butler_cli.app.chat.conversations import Record
    from butler_cli.app.config.options import RunOptions
    from butler_cli.app.run.butler import Butler
    from butler_cli.app.run.report import TaskReport
    from butler_cli.core.park import ParkState
    from butler_cli.repl.comforts import Tally
    from butler_cli.ui.progress import Progress

#: What `chat -c` / `--conversation ID` asks for: (True, None) this folder's last one,
#: (True, ID) that one; (False, None) a new conversation.
Continuing = tuple[bool, str | None]


def _build(opts: RunOptions, saved: Record | None = None) -> tuple[Butler, Conversation, Progress]:
    from butler_cli.app.chat.chat import Conversation
    from butler_cli.app.run.butler import Butler
    from butler_cli.core.grants import GrantBook
    from butler_cli.repl.progress import ChatProgress
    from butler_cli.ui.console import out

    butler = Butler.build(opts, grants=GrantBook())  # grants live in this session only
    client = getattr(butler.provider, "client", None)
    if callable(client):
        client()  # import the provider's SDK now, while the person is still typing
    conversation = Conversation(butler, opts)
    if saved is not None:  # `chat -c` / `--conversation`: its turns carry on here
        conversation.adopt(saved)
    return butler, conversation, ChatProgress(out())


class ChatRepl:
    def __init__(
        self,
        opts: Callable[[], RunOptions],
        home_dir: str,
        banner: str,
        console: Console | None = None,
        continuing: Continuing = (False, None),
        *,
        shown: tuple[str | None, str | None],
    ) -> None:
        #: Makes the flags the chat was started with (the butler resolves the rest), after the
        #: first prompt: a dataclass costs its making.
        self._make_opts = opts
        self._opts: RunOptions | None = None
        #: The (model, policy) the flags resolve to: what the first line names.
        self.shown = shown
        self.home_dir = home_dir
        self._console = console
        self.banner = banner
        self.running = True
        self.continuing = continuing
        self._saved: Record | None = None
        self._ready: Deferred[tuple[Butler, Conversation, Progress]] = Deferred(
            lambda: _build(self.opts, self._saved)
        )
        self._answers: PromptSession[str] | None = None  # made on the first approval
        self._tally: Tally | None = None

    @property
    def tally(self) -> Tally:
        """Tokens spent this session, for /cost (made on first use, after the first prompt)."""
        if self._tally is None:
            from butler_cli.repl.comforts import Tally

            self._tally = Tally()
        return self._tally

    @property
    def opts(self) -> RunOptions:
        """The flags the chat was started with (made on first use, on the build's thread)."""
        if self._opts is None:
            self._opts = self._make_opts()
        return self._opts

    @property
    def console(self) -> Console:
        """rich's console, made on first use (after the first prompt is up)."""
        if self._console is None:
            from butler_cli.ui.console import out

            self._console = out()
        return self._console

    # -- the parts built in the background ---------------------------------------------------
    @property
    def butler(self) -> Butler:
        return self._ready.get()[0]

    @property
    def conversation(self) -> Conversation:
        return self._ready.get()[1]

    @property
    def progress(self) -> Progress:
        return self._ready.get()[2]

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> None:
        session = chat_input(
            self.home_dir, {name: c.help for name, c in COMMANDS.items()}, self.argument_ids
        )
        print(  # plain print: rich is not loaded yet, so the prompt comes sooner
            f"butler · model {self.shown[0] or ''} · policy {self.shown[1] or ''} · "
            "/help for commands, Ctrl-D to leave"
        )
        if self.banner:
            print(self.banner)
        if self.continuing[0]:
            self._recap_saved()  # only when asked: the plain chat's first prompt reads nothing
        # The build starts once the first prompt is on the screen: begun earlier (pre_run), its
        # imports contend with drawing the prompt for the one interpreter lock.
        session.app.after_render += self._start_build
        while self.running:
            try:
                line = session.prompt("you › ")
            except KeyboardInterrupt:
                continue  # Ctrl-C clears the line
            except EOFError:
                break
            gc.enable()  # in case no drawing ever called _start_build (it is idempotent)
            if not line.strip():
                continue
            self._ready.get()  # a bad model or policy stops the chat here, before anything runs
            if line.lstrip().startswith("/"):
                dispatch(self, line)
            else:
                self.turn(line)
        self.consolidate_if_due()
        if self._ready.finished:  # still building: it dies with the process, unwaited for
            with contextlib.suppress(ButlerError):  # it never built: nothing to close
                self.butler.close()  # the session's MCP servers and memory database
        self.console.print("Goodbye.")

    def _recap_saved(self) -> None:
        """`chat -c` / `--conversation ID`: find it (sqlite only; the rest loads after the
        prompt is up) and say where it stands. An unknown id stops here, before any prompt."""
        import os

        from butler_cli.app.chat.conversations import find_saved, recap
        from butler_cli.ui.text import visible

        self._saved = find_saved(self.home_dir, self.continuing[1], os.getcwd())
        if self._saved is None:
            print("No earlier conversation in this folder; this one starts new.")
            return
        for line in recap(self._saved):
            print(visible(line))

    def continue_saved(self, given: str) -> None:
        """`/continue ID`: this session carries on that conversation."""
        from butler_cli.app.chat.conversations import find, recap
        from butler_cli.ui.text import visible

        try:
            record = find(self.butler.conversations, given, str(self.butler.cwd))
        except ButlerError as exc:
            self.console.print(f"[red]butler:[/red] {escape(exc.message)}")
            return
        assert record is not None  # an id was given
        self.conversation.adopt(record)
        for line in recap(record):
            self.console.out(visible(line), highlight=False)

    def argument_ids(self, command: str) -> list[tuple[str, str]]:
        """The ids `/resume`, `/forget` and `/continue` take, for completion, each with what
        it is (a park's tool and task, a memory's text, a conversation's task; neutralised). Memory
        and conversation ids wait for the butler: completion never blocks on its build."""
        from butler_cli.ui.text import visible

        if command == "/resume":
            from pathlib import Path

            from butler_cli.app.parks.parks import waiting_parks

            summaries, _ = waiting_parks(Path(self.home_dir))
            return [(s.id, visible(f"{s.tool} · {s.task}")) for s in summaries]
        if not self._ready.finished:
            return []
        if command == "/forget":
            return [(e.id, visible(e.text)) for e in self.butler.memory.entries()]
        if command == "/continue":
            return [(c.id, visible(c.title)) for c in self.butler.conversations.recent(50)]
        return []

    def _start_build(self, _app: object) -> None:
        gc.enable()  # off since the start (cli/entry.py): the first prompt is up
        self._ready.start()  # once; on later redraws it does nothing

    def consolidate_if_due(self) -> None:
        """C2 at the end of a session, past the threshold; a failure changes nothing."""
        if not self._ready.started:
            return
        try:
            absorbed = self.conversation.consolidate_if_due()
            if absorbed is not None:
                self.console.print(f"Folded {absorbed} older turns into your profile memory.")
        except (ButlerError, KeyboardInterrupt) as exc:
            message = exc.message if isinstance(exc, ButlerError) else "interrupted"
            self.console.print(f"Memory consolidation skipped: {escape(message)}")

    def ask(self, state: ParkState) -> Answer | dict[str, Answer] | None:
        from butler_cli.repl import approval

        if self._answers is None:
            self._answers = answer_input()
        return approval.ask(self.console, self._answers.prompt, state)

    def turn(self, text: str) -> None:
        from butler_cli.repl.comforts import AttachRefused, attach

        try:
            prompt = attach(self, text)
        except AttachRefused as exc:
            self.console.out(f"{exc} — nothing was sent", highlight=False)
            return
        self.send(text, prompt if prompt != text else None)

    def send(self, text: str, prompt: str | None = None) -> None:
        """Send one turn and show what came of it: ``text`` as typed (the task a park, a
        title and a hook see), ``prompt`` what the model is sent when files are attached."""
        from butler_cli.ui.text import visible

        conversation = self.conversation
        conversation.say = lambda line: self.console.out(visible(line), highlight=False)
        try:
            report = self.conversation.send(text, self.ask, self.progress, prompt)
        except KeyboardInterrupt:
            self.interrupted()
            return
        except ButlerError as exc:
            self.console.print(f"[red]butler:[/red] {escape(exc.message)}")
            return
        self.render(report)

    def interrupted(self) -> None:
        """Ctrl-C in a turn: say what was cut short, and that nothing more runs for it."""
        from butler_cli.repl.progress import ChatProgress

        progress = self.progress
        progress.stop()
        running = progress.running if isinstance(progress, ChatProgress) else []
        if isinstance(progress, ChatProgress) and running:
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
        from butler_cli.app.parks.decisions import RoundAnswer, load_park
        from butler_cli.app.run.report import TaskReport

        try:
            state = load_park(given_id)
            if state.status == "pending":
                report = TaskReport(task=state.context.task, status="parked", park_id=state.id)
            else:  # decided but unfinished: recover; finished: refused with a clear line
                report = self.conversation.resume(state.id, RoundAnswer(None), self.progress)
            report = self.conversation.decide(report, self.ask, self.progress)
        except KeyboardInterrupt:
            self.interrupted()
            return
        except ButlerError as exc:
            self.console.print(f"[red]butler:[/red] {escape(exc.message)}")
            return
        self.render(report)

    def render(self, report: TaskReport) -> None:
        from butler_cli.core.loop import CUT_MARKER
        from butler_cli.repl.comforts import turn_usage
        from butler_cli.repl.markup import markdown
        from butler_cli.repl.progress import Wrapped

        self.progress.stop()
        shown = getattr(self.progress, "streamed", False)  # already rendered as it streamed
        if report.text and report.status != "parked" and not shown:
            self.console.print(Wrapped(markdown(report.text)))
        if shown and report.stop_reason == "max_tokens":  # streamed without the marker
            self.console.out(CUT_MARKER, highlight=False)
        for used in report.usage:
            if not used.known or used.input_tokens or used.output_tokens:
                self.tally.add(self.butler.model_spec, used)
        line = turn_usage(report.usage)
        if line is not None:
            self.console.print(f"[dim]{line}[/dim]")
        if report.status == "failed":
            self.console.print(f"[red]failed:[/red] {escape(report.error or 'unknown error')}")
        elif report.status == "limit":
            self.console.print("[yellow]stopped at the round limit[/yellow]")
        self.console.print()  # a blank line sets each turn apart from the next
