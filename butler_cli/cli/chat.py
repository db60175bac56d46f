"""`butler chat` (also plain `butler`) and `butler demo`: the interactive session."""

from __future__ import annotations

from butler_cli.cli.option_pairs import ModelOption, model_options
from butler_cli.cli.options import (
    BaseUrl,
    ContinueLast,
    Conversation,
    MaxRounds,
    Model,
    Policy,
    PolicyFile,
    Profile,
    System,
)
from butler_cli.repl.start import DEMO_BANNER, demo_model, start_chat


def chat(
    model: Model = None,
    policy: Policy = None,
    max_rounds: MaxRounds = None,
    system: System = None,
    profile: Profile = None,
    policy_file: PolicyFile = None,
    base_url: BaseUrl = None,
    option: ModelOption = None,
    continue_last: ContinueLast = False,
    conversation: Conversation = None,
) -> None:
    """Talk to the butler. Governed actions stop at an approval prompt: y approve once,
    n deny (with a note), l later (stays parked), d details, s approve for the session.
    Every chat is saved as a conversation: `butler log` lists them."""
    start_chat(
        model,
        policy,
        max_rounds,
        system,
        profile,
        policy_file,
        base_url=base_url,
        model_options=model_options(option),
        continuing=(continue_last or conversation is not None, conversation),
    )


def demo(policy: Policy = None, profile: Profile = None, policy_file: PolicyFile = None) -> None:
    """The offline demo: the chat on a bundled scripted conversation, no API key needed."""
    start_chat(demo_model(), policy, profile=profile, policy_file=policy_file, banner=DEMO_BANNER)
