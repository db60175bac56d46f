"""The chat's loop: its first prompt, then each line handed to the chat past it.

Start-up is kept short: the first prompt is drawn with only prompt-toolkit and this loaded.
Everything else — the butler (model, policy, tools, memory), a turn, the slash commands' work,
rich — is :mod:`butler_cli.repl.turns`, imported and built on a thread once the prompt is on
the screen (while the person types) and collected on the first line. That module is the
chat's one lazy edge (:func:`_turns`, named in tests/test_imports.py); `chat -c`'s recap is
the other (:mod:`butler_cli.repl.recap`), taken only when asked.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
from typing import TYPE_CHECKING, Any

from butler_cli.app.chat.deferred import Deferred
from butler_cli.app.config.config_file import config_file
from butler_cli.repl.input import chat_input
from butler_cli.repl.slash import LISTED
from butler_cli.ui.text import wrapped

if TYPE_CHECKING:
    from collections.abc import Mapping

    from butler_cli.app.chat.conversations import Record
    from butler_cli.app.config.options import RunOptions
    from butler_cli.repl.turns import Chat

#: What `chat -c` / `--conversation ID` asks for: (True, None) this folder's last one,
#: (True, ID) that one; (False, None) a new conversation.
Continuing = tuple[bool, str | None]


def _turns() -> type[Chat]:
    """The chat past its first prompt, imported on first use (on the build's thread)."""
    from butler_cli.repl.turns import Chat

    return Chat


class ChatRepl:
    """A person's chat up to its first prompt, and the loop that hands each line on to the
    :class:`~butler_cli.repl.turns.Chat` built behind it."""

    def __init__(
        self,
        given: RunOptions | Mapping[str, Any] | None,
        home_dir: str,
        banner: str,
        continuing: Continuing = (False, None),
        *,
        shown: tuple[str | None, str | None],
        script: str | None = None,
    ) -> None:
        #: The flags the chat was started with, None when none were given (the butler
        #: resolves the rest).
        self.given = given
        #: The model the chat runs whatever the flags name: the demo's script.
        self.script = script
        #: The (model, policy) the flags resolve to: what the first line names.
        self.shown = shown
        self.home_dir = home_dir
        self.banner = banner
        self.continuing = continuing
        self._saved: Record | None = None
        self._ready: Deferred[Chat] = Deferred(
            lambda: _turns().build(self.given, self._saved, script=self.script)
        )

    def run(self) -> None:
        session = chat_input(
            self.home_dir,
            {name: c.help for name, c in LISTED.items()},
            self.argument_ids,
            self.hidden_paths,
            self.compose,
        )
        # Plain print, wrapped between words: rich is not loaded yet, so the prompt comes sooner.
        width = shutil.get_terminal_size().columns
        first = f"butler · model {self.shown[0] or ''} · policy {self.shown[1] or ''}"
        print(wrapped(f"{first} · /help for commands, Ctrl-D to leave", width, 0))
        if self.banner:
            print(wrapped(self.banner, width, 0))
        if self.continuing[0]:  # only when asked: the plain chat's first prompt reads nothing
            from butler_cli.repl.recap import recap_saved

            self._saved = recap_saved(self.home_dir, self.continuing[1])
        # The build starts once the first prompt is on the screen: begun earlier (pre_run), its
        # imports contend with drawing the prompt for the one interpreter lock.
        session.app.after_render += self._start_build
        while True:
            try:
                line = session.prompt("you › ")
            except KeyboardInterrupt:
                continue  # Ctrl-C clears the line
            except EOFError:
                break
            gc.enable()  # in case no drawing ever called _start_build (it is idempotent)
            if not line.strip():
                continue
            # a bad model or policy stops the chat here, before anything runs
            if not self._ready.get().line(line):
                break
        self._leave()

    def _leave(self) -> None:
        """Ctrl-D or /exit: a butler being built is waited for (its build failing stops the
        chat as a first line would), then the chat closes it (:meth:`Chat.leave`)."""
        if not self._ready.started:
            print("Goodbye.")
            return
        try:
            chat = self._ready.get()
        except KeyboardInterrupt:
            print("Memory consolidation skipped: interrupted\nGoodbye.")
            return
        chat.leave()

    def argument_ids(self, command: str) -> list[tuple[str, str]]:
        """The ids `/resume`, `/forget` and `/continue` take, for completion, each with what
        it is. Memory and conversation ids wait for the butler: completion never blocks on
        its build."""
        if command == "/resume":
            return _turns().resume_ids(self.home_dir)
        if not self._ready.finished:
            return []
        return self._ready.get().argument_ids(command)

    def hidden_paths(self) -> list[str]:
        """What `@path` completion never offers: the home and the config file's folder, and
        once the butler is built, every path its session protects (keys, policy files…)."""
        found = [self.home_dir, os.path.dirname(config_file())]
        if self._ready.finished:
            # a failed build is said where a line is sent, not here
            with contextlib.suppress(Exception):
                found += map(str, self._ready.get().butler.session.guard.protected)
        return found

    def compose(self, text: str) -> str | None:
        """Ctrl-X Ctrl-E: ``text`` composed in the person's checked editor (what the chat's
        `/editor` runs too); None when the editor was refused or failed (said in one line)."""
        return _turns().composed(text)

    def _start_build(self, _app: object) -> None:
        gc.enable()  # off since the start (cli/entry.py): the first prompt is up
        self._ready.start()  # once; on later redraws it does nothing
