"""The chat's context commands: `/context` (what the model is sent), `/compact`, `/undo` and
`/retry` of the last turn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from butler_cli.app.chat import compaction
from butler_cli.app.run.instructions import instruction_lines
from butler_cli.core.errors import ButlerError
from butler_cli.ui.console import lines_wrapped
from butler_cli.ui.markup import safe as escape
from butler_cli.ui.text import visible

if TYPE_CHECKING:
    from butler_cli.repl.turns import Chat

UNDO_NOTE = "what it did stays done: files it wrote, commands it ran, mail it sent are not undone"


def context(chat: Chat, arg: str) -> None:
    """What each request carries: the memory block (first, the same all session), the project
    instructions, the conversation, and the model's window when it is known."""
    butler = chat.butler
    conversation = chat.conversation
    files = [
        {"path": f.path, "characters": f.characters, "kept": f.kept}
        for f in butler.instructions.files
    ]
    turns = len(compaction.turn_starts(conversation.messages))
    tokens = compaction.estimate(butler.config.system, conversation.messages)
    window = compaction.window_for(butler.model_spec, butler.home)
    lines = [
        f"memory block: {len(butler.block)} characters (first in the system prompt, the same "
        "all session; /memory shows it)",
        *instruction_lines(files),
        f"conversation: {turns} turn(s), {len(conversation.messages)} message(s)",
        f"each request: about {tokens} tokens"
        + (
            f" of {window} in {butler.model_spec}'s window (compacted before {compaction.FILL:.0%})"
            if window
            else f" ({butler.model_spec}'s window is not known yet; learned if it refuses)"
        ),
    ]
    for line in lines:
        lines_wrapped(chat.console, visible(line))


def compact(chat: Chat, arg: str) -> None:
    try:
        folded = chat.conversation.compact("as asked")
    except ButlerError as exc:
        chat.console.print(f"[red]butler:[/red] {escape(exc.message)} — nothing was compacted")
        return
    finally:  # the summary's call was spent even when its answer was not used
        chat.count(chat.conversation.settle_usage())
    if not folded:
        chat.console.print(
            "Nothing to compact yet: no earlier turn to fold, no long attachment or tool "
            "result to shorten."
        )


def undo(chat: Chat, arg: str) -> None:
    words = chat.conversation.undo()
    if words is None:
        chat.console.print("No turn to take back.")
        return
    shown = visible(" ".join(words.split()))
    shown = shown if len(shown) <= 60 else shown[:59] + "…"
    chat.console.out(f'Took back your last turn ("{shown}"); {UNDO_NOTE}.', highlight=False)


def retry(chat: Chat, arg: str) -> None:
    """The last turn taken back and sent again (its tools ask again as they would)."""
    words = chat.conversation.undo()
    if words is None:
        chat.console.print("No turn to retry.")
        return
    chat.console.print(f"Retrying your last turn; {UNDO_NOTE} by the first try.")
    chat.send(words)
