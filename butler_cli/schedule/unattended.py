"""A schedule's run, unattended: the one place the scheduler builds a Butler (loaded only by a
scheduler that runs jobs — `serve`, `schedule run` — never by `schedule list`, `add` or
`pause`)."""

from __future__ import annotations

from pathlib import Path

from butler_cli.app.config.options import RunOptions
from butler_cli.app.run.butler import Butler
from butler_cli.app.run.session import Sessions
from butler_cli.core.errors import ButlerError
from butler_cli.schedule.store import Job


def run_job(
    job: Job, sessions: Sessions | None = None
) -> tuple[str, str | None, str, str | None, dict[str, str] | None]:
    """Run the job's task once, unattended: (status, park_id, text, error, approval).

    The options are the ones the schedule was made with — ``--yes-safe`` too: what the policy
    or a kept approval allows then runs, as in `butler run --yes-safe`; without it that
    parks as well. No decision comes from anywhere: an approval parks, as in `butler run`.
    With ``sessions`` the run is on a kept session of the job's model, policy and folder
    (built at its first due run, rebuilt when its config or policy file changes), else on one
    of its own."""
    opts = RunOptions(
        model=job.model, policy=job.policy, policy_file=job.policy_file, yes_safe=job.yes_safe
    )
    try:
        if sessions is None:
            butler = Butler.build(opts, cwd=Path(job.folder))
        else:
            butler = Butler(sessions.lend(opts, Path(job.folder)), release=sessions.give_back)
        with butler:  # closed, or its session given back
            butler.notifier.schedule = job.id  # its [hooks] name the schedule, as --on-park does
            butler.origin = f"schedule {job.id}"
            report = butler.run_task(job.task)
    except ButlerError as exc:
        return "failed", None, "", exc.message, None
    except Exception as exc:  # one job's failure never stops the scheduler
        return "failed", None, "", f"{type(exc).__name__}: {exc}", None
    return report.status, report.park_id, report.text, report.error, report.approval
