"""`butler chat` (also plain `butler`) and `butler demo`: the interactive session."""

from __future__ import annotations

import os
import sys

from butler_cli.cli.options import MaxRounds, Model, Policy, PolicyFile, Profile, System

DEMO_BANNER = (
    "This is the offline demo: a scripted butler, no API key. Type anything (say, 'hello') "
    "and press Enter; it will run a benign tool, then ask before changing a file."
)


def chat(
    model: Model = None,
    policy: Policy = None,
    max_rounds: MaxRounds = None,
    system: System = None,
    profile: Profile = None,
    policy_file: PolicyFile = None,
) -> None:
    """Talk to the butler. Governed actions stop at an approval prompt: y approve once,
    n deny (with a note), l later (stays parked), d details."""
    _start(model, policy, max_rounds, system, profile, policy_file, banner="")


def demo(policy: Policy = None, profile: Profile = None, policy_file: PolicyFile = None) -> None:
    """The offline demo: the chat on a bundled scripted conversation, no API key needed."""
    from importlib.resources import files

    script = files("butler_cli.demo").joinpath("demo.json")
    _start(f"scripted:{script}", policy, None, None, profile, policy_file, banner=DEMO_BANNER)


def _start(
    model: str | None,
    policy: str | None,
    max_rounds: int | None,
    system: str | None,
    profile: str | None,
    policy_file: str | None,
    banner: str,
) -> None:
    from butler_cli.app.options import MODEL_ENV, RunOptions
    from butler_cli.cli.render import out
    from butler_cli.core.errors import UsageError
    from butler_cli.repl.session import ChatRepl
    from butler_cli.store.files import butler_home

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the chat needs a terminal; for scripts use `butler run`")
    model = model or os.environ.get(MODEL_ENV)
    if not model:
        raise UsageError(f"no model chosen: pass --model (e.g. scripted:PATH) or set {MODEL_ENV}")
    # A person is present: a policy `allow` runs (the unattended --yes-safe rule is for `run`).
    opts = RunOptions(model, policy, system, max_rounds, True, profile, policy_file)
    ChatRepl(opts, str(butler_home()), out(), banner).run()
