"""`butler doctor`: the sandbox in use, the butler's paths, which keys are set (names only)."""

from __future__ import annotations

from butler_cli.app.config.options import RunOptions
from butler_cli.app.views.doctor import diagnose, doctor_lines
from butler_cli.cli import render
from butler_cli.cli.options import Json, Policy, PolicyFile
from butler_cli.ui.text import visible


def doctor(policy: Policy = None, policy_file: PolicyFile = None, json_out: Json = False) -> None:
    """Which sandbox commands run in, where the home, config and policy files are, and which
    key variables are set (never their values)."""
    data = diagnose(RunOptions(policy=policy, policy_file=policy_file))
    if json_out:
        render.print_json(data)
        return
    for line in doctor_lines(data):
        print(visible(line))  # a folder's name may hold anything
