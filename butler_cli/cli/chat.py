"""`butler chat` (also plain `butler`) and `butler demo`: the interactive session."""

from __future__ import annotations

from butler_cli.app.config.options import RunOptions
from butler_cli.cli.options import ContinueLast, Conversation, run_options
from butler_cli.repl.start import start_chat


@run_options(chat=True)
def chat(
    continue_last: ContinueLast = False,
    conversation: Conversation = None,
    *,
    opts: RunOptions,
) -> None:
    """Talk to the butler. Governed actions stop at an approval prompt: y approve once,
    n deny (with a note), l later (stays parked), d details, s approve for the session.
    Every chat is saved as a conversation: `butler log` lists them. In the chat, !COMMAND
    runs a command of yours as run_command (sandboxed, asked about as the model's would be;
    its output joins the conversation), /editor or Ctrl-X Ctrl-E composes a message in
    $EDITOR, /init drafts this folder's AGENTS.md (you approve the write), and a file
    commands/NAME.md beside the config file (or .butler/commands/NAME.md in a project) is
    the command /NAME; /help lists them all."""
    start_chat(opts, continuing=(continue_last or conversation is not None, conversation))


@run_options("policy", "profile", "policy_file")
def demo(*, opts: RunOptions) -> None:
    """The offline demo: the chat on a bundled scripted conversation, no API key needed."""
    start_chat(opts, demo=True)
