"""Line input for the chat: history under the butler's home, multi-line, completion of slash
commands, their ids and ``@path`` (:mod:`butler_cli.repl.at_paths`).

Enter sends; Alt+Enter (or Esc then Enter) adds a line. Ctrl-C clears the line; Ctrl-D leaves.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

from prompt_toolkit import PromptSession
from prompt_toolkit.application import run_in_terminal
from prompt_toolkit.completion import CompleteEvent, Completer, Completion, WordCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.key_binding.key_processor import KeyPressEvent

from butler_cli.app.config.home import private_dir
from butler_cli.repl.at_paths import Hidden, at_word, path_completions

HISTORY_FILE = "chat_history"


#: Edits a text in the person's checked $EDITOR; the text saved, or None when nothing came
#: of it (the editor refused or failed: said on the screen already).
Composer = Callable[[str], str | None]


def _bindings(compose: Composer | None = None) -> KeyBindings:
    kb = KeyBindings()

    @kb.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    if compose is not None:
        edit = compose

        @kb.add("c-x", "c-e")
        def _in_editor(event: KeyPressEvent) -> None:
            """Ctrl-X Ctrl-E: the line so far, composed in $EDITOR (checked before it runs),
            comes back to be sent or changed; nothing is sent by the editor itself."""
            buffer = event.current_buffer

            async def composed() -> None:
                text = await run_in_terminal(lambda: edit(buffer.text))
                if text is not None:
                    buffer.document = Document(text, len(text))

            event.app.create_background_task(composed())

    return kb


def private_history(home: str) -> FileHistory:
    """The chat history file, created 0600 before prompt-toolkit ever opens it."""
    private_dir(home)
    path = os.path.join(home, HISTORY_FILE)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600))
    return FileHistory(path)


#: For a command taking an id: the ids to offer, each with a few words saying what it is
#: (looked up when asked; [] when unknown).
Arguments = Callable[[str], Sequence[tuple[str, str]]]
#: Shown beside an id in the menu, at most this many characters.
META_CHARS = 48


class ChatCompleter(Completer):
    """Slash commands, then the ids a command takes (`/resume` park ids, `/forget` memory ids,
    `/continue` conversation ids), looked up as the person types; the menu shows what each
    is beside it (a command's help, a park's tool and task, a memory's text, a
    conversation's task); and the files an ``@path`` being typed may name, from ``cwd``,
    never one of ``hidden``'s paths."""

    def __init__(
        self,
        commands: dict[str, str],
        arguments: Arguments | None = None,
        cwd: str = ".",
        hidden: Hidden = tuple,
    ) -> None:
        self.words = WordCompleter(
            list(commands), meta_dict=dict(commands), sentence=True, match_middle=False
        )
        self.arguments = arguments
        self.cwd = cwd
        self.hidden = hidden

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        text = document.text_before_cursor
        path = at_word(text)
        if path is not None:
            yield from path_completions(path, self.cwd, self.hidden())
            return
        name, space, typed = text.partition(" ")
        if not space:
            yield from self.words.get_completions(document, complete_event)
            return
        if self.arguments is None or " " in typed.strip():
            return
        typed = typed.lstrip()
        try:
            ids = self.arguments(name.lower())
        except Exception:  # a lookup that fails offers nothing; the command itself will say
            return
        for value, about in ids:
            if value.startswith(typed):
                meta = " ".join(about.split())
                meta = meta if len(meta) <= META_CHARS else meta[: META_CHARS - 1] + "…"
                yield Completion(value, start_position=-len(typed), display_meta=meta)


def chat_input(
    home: str,
    commands: dict[str, str],
    arguments: Arguments | None = None,
    hidden: Hidden = tuple,
    compose: Composer | None = None,
) -> PromptSession[str]:
    completer = ChatCompleter(commands, arguments, os.getcwd(), hidden)
    return PromptSession(
        history=private_history(home),
        key_bindings=_bindings(compose),
        completer=completer,
        complete_while_typing=True,
        multiline=False,
    )


def answer_input() -> PromptSession[str]:
    """A plain one-line prompt for the approval question (no history: answers are not kept)."""
    return PromptSession()
