"""`/init`: the model drafts this folder's project instructions file (Claude Code's `/init`),
and the butler writes it only as a governed change the person approves.

The turn runs with every governed call put to the person — a policy ``allow``, a session grant
or a kept approval answers nothing here (``LoopConfig.allow_runs`` off: X5 makes every allow
an approve, as in an unattended run without ``--yes-safe``) — so the file is never written,
nor overwritten, without the person reading the change first: a new file numbered, an
existing one as a diff.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from butler_cli.app.run.instructions import NAMES
from butler_cli.core.errors import UsageError
from butler_cli.core.loop import LoopConfig


def target(folder: Path, given: str) -> Path:
    """The file `/init` drafts: the one named (one of :data:`NAMES`), else the first of them
    the folder has, else ``AGENTS.md`` (the name other tools read too)."""
    name = given.strip()
    if name:
        if name not in NAMES:
            raise UsageError(
                f"/init writes one of {', '.join(NAMES)} (the files a task here is sent), "
                f"not {name!r}",
                code="bad_init",
            )
        return folder / name
    for known in NAMES:
        if (folder / known).is_file():
            return folder / known
    return folder / NAMES[0]


def prompt(path: Path) -> str:
    """What the model is asked to do."""
    exists = path.is_file()
    how = (
        f"{path.name} exists already: read it first and change it with edit_file, keeping "
        "what is still true"
        if exists
        else f"write it with write_file to {path}"
    )
    return (
        f"Draft {path.name}, the project instructions for this folder ({path.parent}), which "
        "the butler sends with every task started here. Look at the folder first with "
        "list_dir, search_files and read_file (a README, build and test files, the layout), "
        "then write short, concrete instructions for an assistant working here: what the "
        "project is, how to build, test and run it, and the conventions it follows — what "
        f"you found, nothing invented, under 60 lines. Then {how}. The person will see the "
        "change and decide."
    )


def asking_everything(config: LoopConfig) -> LoopConfig:
    """The loop's config for the `/init` turn: every governed call waits for the person."""
    return replace(config, allow_runs=False)
