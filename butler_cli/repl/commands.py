"""What the chat's slash commands do (listed, with their help, in :mod:`butler_cli.repl.slash`).
Each is a small function of the chat past its first prompt (:class:`butler_cli.repl.turns.Chat`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from butler_cli.app.chat import custom
from butler_cli.app.parks.parks import waiting_parks
from butler_cli.core.errors import ButlerError
from butler_cli.core.gate import default_decision
from butler_cli.repl import comforts, context
from butler_cli.repl.slash import LISTED
from butler_cli.ui.console import lines_wrapped, pending_table
from butler_cli.ui.conversations import summary_lines
from butler_cli.ui.markup import safe as escape
from butler_cli.ui.text import visible

if TYPE_CHECKING:
    from butler_cli.repl.turns import Chat


def say(chat: Chat, text: str, indent: int | None = None) -> None:
    lines_wrapped(chat.console, text, indent)


def _help(chat: Chat, arg: str) -> None:
    for cmd in LISTED.values():
        say(chat, f"  {cmd.usage:<14} {cmd.help}", 17)
    for mine in chat.customs():  # files the person (or the project) wrote: only a prompt
        whose = "yours" if mine.source == "yours" else "project"
        unused = " — not used: a built-in has this name" if f"/{mine.name}" in RUN else ""
        say(chat, visible(f"  /{mine.name:<13} {mine.summary} ({whose}: {mine.path}){unused}"), 17)
    where = (
        f"  your commands: {custom.yours()}/NAME.md; a project's: "
        f"{' or '.join(custom.PROJECT)}/NAME.md ($ARGUMENTS: what follows /NAME)"
    )
    say(chat, visible(where))
    say(
        chat,
        "  Enter sends · Alt+Enter adds a line · Ctrl-X Ctrl-E edits the line in $EDITOR · "
        "Ctrl-C cancels · Ctrl-D leaves",
    )
    say(
        chat,
        "  !command runs that command as run_command would for the model (the sandbox, the "
        "policy, asking you where it asks); its output joins the conversation; \\! sends a "
        "line starting with !",
    )
    say(
        chat,
        "  @path in a line attaches that file's content (as read_file would read it) when the "
        "file exists; any other @word is sent as written; \\@word never attaches",
    )


def _pending(chat: Chat, arg: str) -> None:
    rows, problems = waiting_parks(chat.butler.home)
    for problem in problems:
        chat.console.print(f"skipped {escape(problem.problem)}")
    pending_table(lambda text: say(chat, text.rstrip("\n")), rows)


def _resume(chat: Chat, arg: str) -> None:
    if not arg:
        chat.console.print("usage: /resume ID   (see /pending)")
        return
    chat.resume(arg)


def _tools(chat: Chat, arg: str) -> None:
    for toolset in chat.butler.toolbox.toolsets:
        for spec in toolset.specs():
            kind = f"governed (default {default_decision(spec)})" if toolset.governed else "benign"
            say(chat, visible(f"  {spec.name:<14} {kind:<28} {spec.description}"), 46)


def _policy(chat: Chat, arg: str) -> None:
    policy = chat.butler.policy
    chat.console.print(f"  policy {escape(policy.spec)} — {escape(policy.source)}")


def _memory(chat: Chat, arg: str) -> None:
    chat.console.print("The memory block frozen for this session (new memories join next session):")
    chat.console.out(visible(chat.butler.block, lines=True), highlight=False)


def _remember(chat: Chat, arg: str) -> None:
    if not arg:
        chat.console.print("usage: /remember TEXT")
        return
    entry = chat.butler.memory.remember(arg, "semantic", {"source": "chat"})
    chat.console.print(f"Remembered as {entry.id}; it joins the prompt from the next session on.")


def _forget(chat: Chat, arg: str) -> None:
    if not arg:
        chat.console.print("usage: /forget ID   (ids show in /memory)")
        return
    gone = chat.butler.memory.forget(arg)
    chat.console.print(f"Forgot {escape(arg)}." if gone else f"No memory {escape(arg)}.")


def _grants(chat: Chat, arg: str) -> None:
    """The session's grants and the approvals kept for this folder, together (each numbered
    as `/revoke` and `butler grants revoke` take it)."""
    grants = chat.conversation.grants
    listed = grants.all() if grants is not None else []
    try:
        kept = chat.conversation.kept_here()
    except ButlerError as exc:  # a malformed file: said, left as it is
        chat.console.print(f"[red]butler:[/red] {escape(exc.message)}")
        kept = []
    if not listed and not kept:
        chat.console.print("No grants in this session, and no approvals kept for this folder.")
    for number, grant in enumerate(listed, start=1):
        chat.console.print(escape(f"  session {number}. {grant.describe()}"))
    for k in kept:
        chat.console.print(escape(f"  kept {k.number}. {k.grant.describe()}  (in {k.folder})"))
    if kept:
        chat.console.print("  /revoke N takes back a session grant, /revoke kept N a kept one")


def _revoke(chat: Chat, arg: str) -> None:
    words = arg.split()
    if len(words) == 2 and words[0] == "kept" and words[1].isdigit():
        try:
            gone_kept = chat.conversation.revoke_kept(int(words[1]))
        except ButlerError as exc:
            chat.console.print(f"[red]butler:[/red] {escape(exc.message)}")
            return
        chat.console.print(escape(f"Revoked kept {words[1]}: {gone_kept.grant.describe()}"))
        return
    grants = chat.conversation.grants
    gone = grants.revoke(int(arg)) if grants is not None and arg.isdigit() else None
    if gone is None:
        chat.console.print("usage: /revoke N  or  /revoke kept N   (numbers show in /grants)")
    else:
        chat.console.print(escape(f"Revoked: {gone.describe()}"))


def _conversations(chat: Chat, arg: str) -> None:
    found = chat.butler.conversations.recent(20)
    if not found:
        chat.console.print("No saved conversations yet.")
    for line in summary_lines(found, current=chat.conversation.id):
        chat.console.out(line, highlight=False)


def _continue(chat: Chat, arg: str) -> None:
    if not arg:
        chat.console.print("usage: /continue ID   (see /conversations)")
        return
    chat.continue_saved(arg)


def _new(chat: Chat, arg: str) -> None:
    chat.conversation.reset()
    chat.console.print("Started a new conversation.")


def _init(chat: Chat, arg: str) -> None:
    conversation = chat.conversation
    conversation.say = lambda line: chat.console.out(visible(line), highlight=False)
    chat.shown(lambda: conversation.init(arg, chat.ask, chat.progress))


def _exit(chat: Chat, arg: str) -> None:
    chat.running = False


RUN: dict[str, Callable[[Chat, str], None]] = {
    "/help": _help,
    "/pending": _pending,
    "/resume": _resume,
    "/tools": _tools,
    "/policy": _policy,
    "/memory": _memory,
    "/remember": _remember,
    "/forget": _forget,
    "/grants": _grants,
    "/revoke": _revoke,
    "/new": _new,
    "/clear": comforts.clear,
    "/model": comforts.model,
    "/cost": comforts.cost,
    "/context": context.context,
    "/compact": context.compact,
    "/retry": context.retry,
    "/undo": context.undo,
    "/conversations": _conversations,
    "/continue": _continue,
    "/init": _init,
    "/editor": lambda chat, arg: chat.edit_and_send(arg),
    "/exit": _exit,
}


def dispatch(chat: Chat, line: str) -> None:
    name, _, arg = line.strip().partition(" ")
    run = RUN.get(name.lower())
    if run is None:
        mine = custom.usable(chat.customs(), RUN).get(name.lower())
        if mine is not None:
            chat.run_custom(mine, arg.strip(), line.strip())
            return
        names = " ".join(LISTED)
        chat.console.print(f"Unknown command {escape(name)} — try one of: {names}")
        return
    run(chat, arg.strip())
