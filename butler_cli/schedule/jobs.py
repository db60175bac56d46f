"""Making a schedule: the model, policy and folder are fixed when it is made, as `butler run`
would have resolved them then (flags, then the environment, then the config file)."""

from __future__ import annotations

from pathlib import Path

from butler_cli.app.config.config import load_config, resolve_options
from butler_cli.app.config.first_model import no_model
from butler_cli.app.config.home import home as butler_home
from butler_cli.app.config.options import RunOptions
from butler_cli.app.parks.parks import park_outcomes
from butler_cli.core.defaults import DEFAULT_POLICY
from butler_cli.core.errors import UsageError
from butler_cli.hooks import DEFAULT_TIMEOUT, Hook
from butler_cli.schedule.cron import next_after, utc_now
from butler_cli.schedule.store import Job, ScheduleStore


def add_job(
    cron: str,
    task: str,
    *,
    model: str | None,
    policy: str | None,
    policy_file: str | None,
    folder: str | None,
    on_park: str | None,
    hook_timeout: float = DEFAULT_TIMEOUT,
    yes_safe: bool = False,
) -> Job:
    """Check everything (a bad expression, folder or hook is a usage error), then store it."""
    next_after(cron, utc_now())  # a bad expression, or one that never comes: usage error
    if not task.strip():
        raise UsageError("the task is empty")
    opts = resolve_options(RunOptions(model=model, policy=policy), load_config())
    if not opts.model:
        raise no_model()
    chosen = opts.model
    if chosen.startswith("scripted:"):  # a relative script path means here, not the folder
        chosen = "scripted:" + str(Path(chosen.removeprefix("scripted:")).expanduser().resolve())
    where = Path(folder or ".").expanduser().resolve()
    if not where.is_dir():
        raise UsageError(f"--folder {where} is not a folder")
    hook = Hook.parse(on_park, hook_timeout).to_json() if on_park else None
    pfile = str(Path(policy_file).expanduser().resolve()) if policy_file else None
    return ScheduleStore(butler_home()).add(
        cron,
        task,
        chosen,
        opts.policy or DEFAULT_POLICY,
        pfile,
        str(where),
        hook,
        utc_now(),
        yes_safe=yes_safe,
    )


def park_decisions(park_ids: list[str]) -> dict[str, str]:
    """What became of each park a run left (see ``app/parks/parks.park_outcomes``)."""
    return park_outcomes(butler_home(), park_ids)
