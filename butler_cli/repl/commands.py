"""Slash commands of the chat. Each is a small function; the table is the one list.

The table is made before the chat's first prompt (its names feed the completer), so it is
cheap: a plain class (a dataclass or a NamedTuple costs its making), and what the commands
use (rich, the comforts) is imported when one runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from butler_cli.repl.markup import escape

if TYPE_CHECKING:
    from butler_cli.repl.session import ChatRepl


class Command:
    """One slash command: its name, usage line, help and what it runs."""

    __slots__ = ("name", "usage", "help", "run")

    def __init__(
        self, name: str, usage: str, help: str, run: Callable[[ChatRepl, str], None]
    ) -> None:
        self.name = name
        self.usage = usage
        self.help = help
        self.run = run


def _help(repl: ChatRepl, arg: str) -> None:
    for cmd in COMMANDS.values():
        repl.console.print(f"  {cmd.usage:<14} {cmd.help}")
    repl.console.print("  Enter sends · Alt+Enter adds a line · Ctrl-C cancels · Ctrl-D leaves")
    repl.console.print(
        "  @path in a line attaches that file's content (as read_file would read it) when the "
        "file exists; any other @word is sent as written; \\@word never attaches"
    )


def _pending(repl: ChatRepl, arg: str) -> None:
    from butler_cli.app.parks.parks import waiting_parks
    from butler_cli.ui.console import pending_table

    rows, problems = waiting_parks(repl.butler.home)
    for problem in problems:
        repl.console.print(f"skipped {escape(problem.problem)}")
    pending_table(lambda text: repl.console.out(text.rstrip("\n"), highlight=False), rows)


def _resume(repl: ChatRepl, arg: str) -> None:
    if not arg:
        repl.console.print("usage: /resume ID   (see /pending)")
        return
    repl.resume(arg)


def _tools(repl: ChatRepl, arg: str) -> None:
    from butler_cli.core.gate import default_decision  # not at import: the prompt comes first

    for toolset in repl.butler.toolbox.toolsets:
        for spec in toolset.specs():
            kind = f"governed (default {default_decision(spec)})" if toolset.governed else "benign"
            repl.console.print(f"  {spec.name:<14} {kind:<28} {escape(spec.description)}")


def _policy(repl: ChatRepl, arg: str) -> None:
    policy = repl.butler.policy
    repl.console.print(f"  policy {escape(policy.spec)} — {escape(policy.source)}")


def _memory(repl: ChatRepl, arg: str) -> None:
    from butler_cli.ui.text import visible

    repl.console.print("The memory block frozen for this session (new memories join next session):")
    repl.console.out(visible(repl.butler.block, lines=True), highlight=False)


def _remember(repl: ChatRepl, arg: str) -> None:
    if not arg:
        repl.console.print("usage: /remember TEXT")
        return
    entry = repl.butler.memory.remember(arg, "semantic", {"source": "chat"})
    repl.console.print(f"Remembered as {entry.id}; it joins the prompt from the next session on.")


def _forget(repl: ChatRepl, arg: str) -> None:
    if not arg:
        repl.console.print("usage: /forget ID   (ids show in /memory)")
        return
    gone = repl.butler.memory.forget(arg)
    repl.console.print(f"Forgot {escape(arg)}." if gone else f"No memory {escape(arg)}.")


def _grants(repl: ChatRepl, arg: str) -> None:
    grants = repl.conversation.grants
    listed = grants.all() if grants is not None else []
    if not listed:
        repl.console.print("No grants in this session.")
    for number, grant in enumerate(listed, start=1):
        repl.console.print(escape(f"  {number}. {grant.describe()}"))


def _revoke(repl: ChatRepl, arg: str) -> None:
    grants = repl.conversation.grants
    gone = grants.revoke(int(arg)) if grants is not None and arg.isdigit() else None
    if gone is None:
        repl.console.print("usage: /revoke N   (numbers show in /grants)")
    else:
        repl.console.print(escape(f"Revoked: {gone.describe()}"))


def _conversations(repl: ChatRepl, arg: str) -> None:
    from butler_cli.ui.conversations import summary_lines

    found = repl.butler.conversations.recent(20)
    if not found:
        repl.console.print("No saved conversations yet.")
    for line in summary_lines(found, current=repl.conversation.id):
        repl.console.out(line, highlight=False)


def _continue(repl: ChatRepl, arg: str) -> None:
    if not arg:
        repl.console.print("usage: /continue ID   (see /conversations)")
        return
    repl.continue_saved(arg)


def _new(repl: ChatRepl, arg: str) -> None:
    repl.conversation.reset()
    repl.console.print("Started a new conversation.")


def _exit(repl: ChatRepl, arg: str) -> None:
    repl.running = False


def _clear(repl: ChatRepl, arg: str) -> None:
    from butler_cli.repl import comforts

    comforts.clear(repl, arg)


def _model(repl: ChatRepl, arg: str) -> None:
    from butler_cli.repl import comforts

    comforts.model(repl, arg)


def _cost(repl: ChatRepl, arg: str) -> None:
    from butler_cli.repl import comforts

    comforts.cost(repl, arg)


def _context(repl: ChatRepl, arg: str) -> None:
    from butler_cli.repl import context

    context.context(repl, arg)


def _compact(repl: ChatRepl, arg: str) -> None:
    from butler_cli.repl import context

    context.compact(repl, arg)


def _undo(repl: ChatRepl, arg: str) -> None:
    from butler_cli.repl import context

    context.undo(repl, arg)


def _retry(repl: ChatRepl, arg: str) -> None:
    from butler_cli.repl import context

    context.retry(repl, arg)


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in [
        Command("/help", "/help", "this list", _help),
        Command("/pending", "/pending", "parks awaiting a decision", _pending),
        Command("/resume", "/resume ID", "decide a parked task here", _resume),
        Command("/tools", "/tools", "benign and governed tools, with default verdicts", _tools),
        Command("/policy", "/policy", "the active policy and where it came from", _policy),
        Command("/memory", "/memory", "the memory block this session sends", _memory),
        Command("/remember", "/remember TEXT", "remember a fact", _remember),
        Command("/forget", "/forget ID", "forget a memory", _forget),
        Command("/grants", "/grants", "approvals remembered for this session", _grants),
        Command("/revoke", "/revoke N", "forget a session grant", _revoke),
        Command("/new", "/new", "start a fresh conversation", _new),
        Command("/clear", "/clear", "clear the screen and start a fresh conversation", _clear),
        Command("/model", "/model NAME", "use another model for the next turns", _model),
        Command("/cost", "/cost", "tokens spent this session, and an estimate", _cost),
        Command("/context", "/context", "what each request carries, and the window", _context),
        Command("/compact", "/compact", "fold older turns into a summary", _compact),
        Command("/retry", "/retry", "send your last turn again", _retry),
        Command("/undo", "/undo", "take back the last turn (not what it did)", _undo),
        Command(
            "/conversations", "/conversations", "saved conversations, latest first", _conversations
        ),
        Command("/continue", "/continue ID", "carry on a saved conversation", _continue),
        Command("/exit", "/exit", "leave (Ctrl-D works too)", _exit),
    ]
}


def dispatch(repl: ChatRepl, line: str) -> None:
    name, _, arg = line.strip().partition(" ")
    cmd = COMMANDS.get(name.lower())
    if cmd is None:
        names = " ".join(COMMANDS)
        repl.console.print(f"Unknown command {escape(name)} — try one of: {names}")
        return
    cmd.run(repl, arg.strip())
