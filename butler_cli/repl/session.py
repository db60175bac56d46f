"""The chat loop: read a line, run a turn through the core, render, ask on parks."""

from __future__ import annotations

from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape

from butler_cli.app.butler import Butler, RunOptions, load_park, resume_park
from butler_cli.app.chat import Answer, Conversation
from butler_cli.app.report import TaskReport
from butler_cli.cli.progress import Progress
from butler_cli.core.errors import ButlerError
from butler_cli.core.park import ParkState
from butler_cli.core.provider import ModelResponse
from butler_cli.repl import approval
from butler_cli.repl.commands import COMMANDS, dispatch
from butler_cli.repl.input import answer_input, chat_input


class ChatProgress(Progress):
    """Progress lines, plus what the model says while it works (text beside its tool calls)."""

    def model_finished(self, response: ModelResponse) -> None:
        super().model_finished(response)
        if response.is_tool_round and response.text:
            self.console.print(Markdown(response.text))


class ChatRepl:
    def __init__(
        self, butler: Butler, opts: RunOptions, console: Console, banner: str = ""
    ) -> None:
        self.butler = butler
        self.console = console
        self.conversation = Conversation(butler, opts)
        self.progress = ChatProgress(console)
        self.running = True
        self.banner = banner
        self._answers = answer_input()

    def ask(self, state: ParkState) -> Answer | None:
        return approval.ask(self.console, self._answers.prompt, state)

    def run(self) -> None:
        session = chat_input(self.butler.home, list(COMMANDS))
        self.console.print(
            f"[bold]butler[/bold] · model {escape(self.butler.model_spec)} · "
            f"policy {escape(self.butler.policy.spec)} · /help for commands, Ctrl-D to leave"
        )
        if self.banner:
            self.console.print(self.banner)
        while self.running:
            try:
                line = session.prompt("you › ")
            except KeyboardInterrupt:
                continue  # Ctrl-C clears the line
            except EOFError:
                break
            if not line.strip():
                continue
            if line.lstrip().startswith("/"):
                dispatch(self, line)
            else:
                self.turn(line)
        self.console.print("Goodbye.")

    def turn(self, text: str) -> None:
        try:
            report = self.conversation.send(text, self.ask, self.progress)
        except KeyboardInterrupt:
            self.progress.stop()
            self.console.print("[yellow]cancelled[/yellow] — nothing more will run for that turn")
            return
        except ButlerError as exc:
            self.console.print(f"[red]butler:[/red] {escape(exc.message)}")
            return
        self.render(report)

    def resume(self, given_id: str) -> None:
        """`/resume ID`: the same prompt as an inline park; a crashed resume is recovered."""
        try:
            state = load_park(given_id)
            if state.status == "pending":
                report = TaskReport(task=state.context.task, status="parked", park_id=state.id)
            else:  # decided but unfinished: recover; finished: refused with a clear line
                report = resume_park(state.id, None, None, self.conversation.opts, self.progress)
            report = self.conversation.decide(report, self.ask, self.progress)
        except ButlerError as exc:
            self.console.print(f"[red]butler:[/red] {escape(exc.message)}")
            return
        self.render(report)

    def render(self, report: TaskReport) -> None:
        if report.text and report.status != "parked":
            self.console.print(Markdown(report.text))
        if report.status == "failed":
            self.console.print(f"[red]failed:[/red] {escape(report.error or 'unknown error')}")
        elif report.status == "limit":
            self.console.print("[yellow]stopped at the round limit[/yellow]")
