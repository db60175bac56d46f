"""What ``run`` and ``resume`` print, in the format ``--output`` chose (docs/output.md).

``text``: progress on stderr, answers on stdout, plain; on a terminal (stdout and stderr
both), the chat's display instead: the model's words rendered as Markdown as they come,
each call's line after the words that announced it, a parked action said once. ``json``: one
result object per task when it ends. ``stream-json``: one event per line as things happen
(:mod:`butler_cli.app.run.events`).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from butler_cli.app.run.events import (
    SCHEMA_VERSION,
    EventStream,
    decide_commands,
    error_event,
    json_line,
    new_conversation_id,
)
from butler_cli.cli import render
from butler_cli.core.errors import ExitCode

if TYPE_CHECKING:
    from butler_cli.app.run.report import TaskReport
    from butler_cli.core.loop import LoopObserver
    from butler_cli.repl.progress import ChatProgress
    from butler_cli.ui.progress import Progress


def write_out(line: str) -> None:
    sys.stdout.write(line)
    sys.stdout.flush()


class Printer:
    """Gives each task its observer and prints its report, for one ``--output`` format."""

    def __init__(
        self,
        fmt: str,
        started: float,
        total: int,
        context: list[dict[str, object]] | None = None,
        resumed: str | None = None,
    ) -> None:
        self.fmt = fmt
        self.started = started
        self.total = total
        self.context = context or []
        self.resumed = resumed
        self._stream: EventStream | None = None
        self._conversation = ""
        self._task_began = started
        self._open = False  # a task began and has not ended
        self._progress: Progress | None = None
        #: On a terminal (stdout and stderr both): the chat's display, made once.
        self._screen: ChatProgress | None = None

    def observer_for(
        self, index: int, task: str, conversation: str | None = None
    ) -> LoopObserver | None:
        """``conversation``: the task's conversation id (``butler log show ID``)."""
        self._task_began = time.perf_counter()
        self._conversation = conversation or new_conversation_id()
        self._open = True
        if self.fmt == "stream-json":
            self._stream = EventStream(write_out, self.started, self._conversation)
            self._stream.start(task, index, self.total, self.resumed, self.context)
            return self._stream
        if self.fmt == "json":
            return None
        if self._screen is None and sys.stdout.isatty() and sys.stderr.isatty():
            # A person watches: the chat's display, in the order things happen — the model's
            # words rendered as they come, then each call, then what became of the task.
            from butler_cli.repl.progress import ChatProgress

            self._screen = ChatProgress(render.out(), parked_lines=False)
        if self._screen is not None:
            render.task_header(self._screen.console, index, self.total, task)
            self._progress = self._screen
            return self._screen
        from butler_cli.ui.progress import Progress

        console = render.err()
        render.task_header(console, index, self.total, task)
        self._progress = Progress(console)
        return self._progress

    def interrupted(self) -> None:
        """Ctrl-C (SIGINT) mid-batch: one line on stderr and, in the JSON formats, the ending
        a script waits for — stream-json's ``error`` and ``done`` for the task cut short,
        --json's error object — each with exit code 130."""
        message = "interrupted (Ctrl-C): the task was stopped; no later task ran"
        if self._progress is not None:
            self._progress.stop()
        if self._stream is not None and self._open:
            self._stream.interrupted(message)
        elif self.fmt in ("json", "stream-json"):
            elapsed = (time.perf_counter() - self.started) * 1000
            cid = self._conversation if self._open else None
            code = int(ExitCode.INTERRUPTED)
            write_out(json_line(error_event("interrupted", message, code, cid, elapsed)))
        self._open = False
        render.warn(message)

    def report(self, rep: TaskReport) -> None:
        self._open = False
        if self._stream is not None:
            self._stream.finish(rep)
        elif self.fmt == "json":
            write_out(json_line(self.result(rep)))
        elif self._screen is not None:
            screen = self._screen
            screen.stop()
            if rep.text and rep.status != "parked" and not screen.streamed:
                screen.answer(rep.text)  # a parked round's words were shown before its calls
            render.report(rep, False, answered=True)
        else:
            render.report(rep, False)

    def result(self, rep: TaskReport) -> dict[str, Any]:
        """The ``--output json`` object: the task's report, with the fields every event has."""
        elapsed = time.perf_counter()
        return {
            "type": "result",
            "schema": SCHEMA_VERSION,
            "conversation": self._conversation,
            "elapsed_ms": round((elapsed - self.started) * 1000, 1),
            "duration_ms": round((elapsed - self._task_began) * 1000, 1),
            **rep.to_json(),
            "commands": decide_commands(rep.park_id) if rep.park_id else None,
        }
