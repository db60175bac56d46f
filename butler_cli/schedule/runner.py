"""Running schedules: claim what is due, run it unattended exactly as `butler run` does, record
the outcome, and fire the ``on_park`` hook when it parks.

The clock and the task runner are injected: tests move time by hand, and nothing here prints
(the caller says what to do with each :class:`Finished`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from butler_cli.app.parks.parks import park_outcomes
from butler_cli.app.run.masking import masked
from butler_cli.core.errors import ButlerError
from butler_cli.hooks import Hook, fire, task_event
from butler_cli.schedule.cron import utc_now as utc_now
from butler_cli.schedule.store import Job, ScheduleStore

if TYPE_CHECKING:
    from butler_cli.app.run.session import Sessions

Clock = Callable[[], datetime]
#: How often a running scheduler looks at the store (schedules added meanwhile are seen).
POLL_SECONDS = 2.0


@dataclass(frozen=True)
class Finished:
    """What one run came to: the job, the run's row id, and its outcome."""

    job: Job
    run_id: int
    status: str
    park_id: str | None
    text: str
    error: str | None
    hook_problem: str | None


Runner = Callable[[Job], tuple[str, str | None, str, str | None, dict[str, str] | None]]


class Scheduler:
    """Claims due jobs from the store and runs them one after another."""

    def __init__(
        self,
        store: ScheduleStore,
        clock: Clock = utc_now,
        runner: Runner | None = None,
        on_finished: Callable[[Finished], None] | None = None,
        sessions: Sessions | None = None,
        on_problem: Callable[[str], None] | None = None,
    ) -> None:
        """``sessions``: where the default runner keeps its sessions across ticks (`serve`
        passes the process's); none: each run builds its own. ``on_problem``: told once, in
        one line, each distinct reason the store cannot be used (the scheduler keeps trying)."""
        self.store = store
        self.clock = clock
        if runner is None:
            # the scheduler's edge: running a job builds a Butler, which `schedule list`,
            # `add` and `pause` never need (they import this module for the clock and types)
            from butler_cli.schedule.unattended import run_job

            runner = partial(run_job, sessions=sessions)
        self.runner: Runner = runner
        self.on_finished = on_finished
        self.on_problem = on_problem
        self._said: set[str] = set()

    def tick(self) -> list[Finished]:
        """Run every job due now, once each (whatever was missed: one run, not a burst)."""
        return [
            self._skipped(job, run_id) or self._run(job, run_id)
            for job, run_id in self.store.claim_due(self.clock())
        ]

    def _skipped(self, job: Job, run_id: int) -> Finished | None:
        """A due run whose schedule's last run still waits for a person is not run (it would
        park the same thing again): recorded as ``skipped``, saying why. `schedule run ID`
        (a person asking) always runs."""
        waiting = self.store.waiting_park(job.id, run_id)
        if waiting is None or park_outcomes(self.store.home, [waiting]).get(waiting) != "pending":
            return None
        text = (
            f"skipped: the last run's park {waiting} still waits for a person — decide it "
            f"(butler resume {waiting}, or in the inbox) and the next run goes ahead"
        )
        self.store.finish_run(run_id, "skipped", self.clock(), park_id=waiting, text=text)
        done = Finished(job, run_id, "skipped", waiting, text, None, None)
        if self.on_finished is not None:
            self.on_finished(done)
        return done

    def run_now(self, job: Job) -> Finished:
        """`schedule run ID`: one run now; the schedule's next due time is left as it is."""
        return self._run(job, self.store.start_run(job.id, "now", job.task, self.clock()))

    def _run(self, job: Job, run_id: int) -> Finished:
        status, park_id, text, error, approval = self.runner(job)
        text, error = masked(text), masked(error) if error is not None else None
        self.store.finish_run(run_id, status, self.clock(), park_id=park_id, text=text, error=error)
        problem = None
        hook = Hook.from_json(job.hook)
        if status == "parked" and park_id is not None and hook is not None:
            event = task_event("on_park", status, job.task, park_id, approval, None, job.id)
            problem = fire(hook, event, task_folders=[Path(job.folder)])
            self.store.note_hook(run_id, problem or "delivered")
        done = Finished(job, run_id, status, park_id, text, error, problem)
        if self.on_finished is not None:
            self.on_finished(done)
        return done

    def seconds_to_next(self) -> float:
        """Seconds until the earliest unpaused job is due (at most the poll interval)."""
        now = self.clock()
        dues = [datetime.fromisoformat(j.next_due) for j in self.store.jobs() if not j.paused]
        if not dues:
            return POLL_SECONDS
        wait = (min(dues) - now) / timedelta(seconds=1)
        return min(max(wait, 0.05), POLL_SECONDS)

    def serve(self, stop: threading.Event) -> None:
        """Until ``stop`` is set: catch up once on start, then run each job when it is due.
        A run in flight when ``stop`` is set finishes (or parks) before this returns. A store
        that cannot be used (``schedule.db`` not a database) is said once and left as it is;
        the scheduler tries again at every poll."""
        try:
            self.store.interrupted(self.clock())
        except ButlerError as exc:
            self._trouble(exc)
        while not stop.is_set():
            try:
                self.tick()
                wait = self.seconds_to_next()
            except ButlerError as exc:
                self._trouble(exc)
                wait = POLL_SECONDS
            stop.wait(wait)

    def _trouble(self, exc: ButlerError) -> None:
        if exc.message not in self._said:
            self._said.add(exc.message)
            if self.on_problem is not None:
                self.on_problem(exc.message)
