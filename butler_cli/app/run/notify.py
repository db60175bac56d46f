"""The ``[hooks]`` of the config file, fired after every task report: the one place a person
hears that something waits for them (``on_park``) or ended (``on_done``, ``on_error``).

:meth:`Butler._finish <butler_cli.app.run.butler.Butler._finish>` calls :meth:`Notifier.after` for
every report it makes — a `butler run` task, a chat turn, a scheduled run, and every park
decided by `butler resume`, the chat or the inbox — so no surface can forget it. A hook runs
after the report exists (a park is on disk already), within its timeout; its failure is one
notice and never reaches the report, the exit code or the task.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from butler_cli.core.notices import notice

if TYPE_CHECKING:
    from butler_cli.app.run.report import TaskReport
    from butler_cli.hooks import Hooks


def warn(line: str) -> None:
    """A hook's problem, as one notice (the terminal layer neutralises it: it may quote the
    hook's output)."""
    notice(line)


class Notifier:
    """Fires the configured hook for a report's status; reports a failure through ``warn``.
    ``hooks`` None: none is configured (the hooks' module is then never imported)."""

    def __init__(self, hooks: Hooks | None, warn: Callable[[str], None] = warn) -> None:
        self.hooks = hooks
        self.warn = warn
        #: The schedule whose run this is, if any: its events name it.
        self.schedule: str | None = None

    @classmethod
    def from_config(cls, table: dict[str, Any] | None) -> Notifier:
        if not table:
            return cls(None)
        from butler_cli.hooks import Hooks

        return cls(Hooks.from_table(table))

    @property
    def active(self) -> bool:
        """Whether any hook is configured (else nothing is looked up for one)."""
        return self.hooks is not None and bool(self.hooks.by_event)

    def after(self, report: TaskReport, conversation: str | None = None) -> None:
        """Fire the hook ``report``'s status calls for (parked → on_park, done/limit →
        on_done, failed → on_error), if there is one. Never raises."""
        chosen = self.hooks.for_status(report.status) if self.hooks is not None else None
        if chosen is None:
            return
        from butler_cli.hooks import fire, task_event

        event, hook = chosen
        body = task_event(
            event,
            report.status,
            report.task,
            report.park_id,
            report.approval,
            conversation,
            self.schedule,
            report.approvals,
        )
        problem = fire(hook, body, label=f"{event} hook")
        if problem is not None:
            with contextlib.suppress(Exception):  # reporting is best effort, like the hook
                self.warn(problem)
