"""What ``run`` and ``resume`` print, in the format ``--output`` chose (docs/output.md).

``text``: progress on stderr, answers on stdout. ``json``: one result object per task when it
ends. ``stream-json``: one event per line as things happen (:mod:`butler_cli.app.run.events`).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from butler_cli.app.run.events import (
    SCHEMA_VERSION,
    EventStream,
    decide_commands,
    json_line,
    new_conversation_id,
)
from butler_cli.cli import render

if TYPE_CHECKING:
    from butler_cli.app.run.report import TaskReport
    from butler_cli.core.loop import LoopObserver


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

    def observer_for(
        self, index: int, task: str, conversation: str | None = None
    ) -> LoopObserver | None:
        """``conversation``: the task's conversation id (``butler log show ID``)."""
        self._task_began = time.perf_counter()
        self._conversation = conversation or new_conversation_id()
        if self.fmt == "stream-json":
            self._stream = EventStream(write_out, self.started, self._conversation)
            self._stream.start(task, index, self.total, self.resumed, self.context)
            return self._stream
        if self.fmt == "json":
            return None
        from butler_cli.ui.progress import Progress

        console = render.err()
        render.task_header(console, index, self.total, task)
        return Progress(console)

    def report(self, rep: TaskReport) -> None:
        if self._stream is not None:
            self._stream.finish(rep)
        elif self.fmt == "json":
            write_out(json_line(self.result(rep)))
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
