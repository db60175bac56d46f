"""The chat's slash commands as they are listed: name, usage line and help.

The list is made before the chat's first prompt (its names and help feed the completer), so
it is cheap: a plain class (a dataclass or a NamedTuple costs its making) and no imports. What
each command does is :mod:`butler_cli.repl.commands`, loaded with the rest of the chat after
the first prompt.
"""

from __future__ import annotations


class Command:
    """One slash command as listed: its name, usage line and help."""

    __slots__ = ("name", "usage", "help")

    def __init__(self, name: str, usage: str, help: str) -> None:
        self.name = name
        self.usage = usage
        self.help = help


LISTED: dict[str, Command] = {
    c.name: c
    for c in [
        Command("/help", "/help", "this list"),
        Command("/pending", "/pending", "parks awaiting a decision"),
        Command("/resume", "/resume ID", "decide a parked task here"),
        Command("/tools", "/tools", "benign and governed tools, with default verdicts"),
        Command("/policy", "/policy", "the active policy and where it came from"),
        Command("/memory", "/memory", "the memory block this session sends"),
        Command("/remember", "/remember TEXT", "remember a fact"),
        Command("/forget", "/forget ID", "forget a memory"),
        Command("/grants", "/grants", "session grants and approvals kept for this folder"),
        Command("/revoke", "/revoke [kept] N", "take back a session grant (or a kept one)"),
        Command("/new", "/new", "start a fresh conversation"),
        Command("/clear", "/clear", "clear the screen and start a fresh conversation"),
        Command("/model", "/model NAME", "use another model for the next turns"),
        Command("/cost", "/cost", "tokens spent this session, and an estimate"),
        Command("/context", "/context", "what each request carries, and the window"),
        Command("/compact", "/compact", "fold older turns into a summary"),
        Command("/retry", "/retry", "send your last turn again"),
        Command("/undo", "/undo", "take back the last turn (not what it did)"),
        Command("/conversations", "/conversations", "saved conversations, latest first"),
        Command("/continue", "/continue ID", "carry on a saved conversation"),
        Command(
            "/init", "/init [FILE]", "draft this folder's AGENTS.md (or CLAUDE.md…); you approve"
        ),
        Command("/editor", "/editor [TEXT]", "compose the message in $EDITOR (Ctrl-X Ctrl-E)"),
        Command("/exit", "/exit", "leave (Ctrl-D works too)"),
    ]
}
