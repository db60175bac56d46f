"""The room's conversation: the person's messages as chat turns, in a conversation of its own.

A butler on the configured folder (its project instructions, the profile's memory, the tools
and the policy a chat there would have), built at the first message and kept while `serve`
runs; its conversation id is kept in the channel's state, so a restart carries the same
conversation on. A turn that parks stays parked (nobody is asked inline): the park is
announced as a card like any other, and decided through the one door.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from butler_cli.app.chat.chat import Conversation
from butler_cli.app.config.options import RunOptions
from butler_cli.app.run.butler import Butler
from butler_cli.app.run.report import TaskReport
from butler_cli.core.errors import ButlerError


class RoomChat:
    """One conversation, one turn at a time (the caller serialises turns)."""

    def __init__(
        self, folder: Path, conversation: str | None, remember: Callable[[str], None]
    ) -> None:
        self.folder = folder
        self._known = conversation
        self._remember = remember
        self._chat: Conversation | None = None

    def _open(self) -> Conversation:
        if self._chat is None:
            opts = RunOptions()
            chat = Conversation(Butler.build(opts, cwd=self.folder), opts, "matrix")
            if self._known is not None:
                with contextlib.suppress(ButlerError):  # gone: a new conversation starts
                    chat.adopt(chat.butler.conversations.load(self._known))
            self._chat = chat
        return self._chat

    def turn(self, text: str) -> TaskReport:
        """One turn; a parked one waits for its card's answer."""
        chat = self._open()
        report = chat.send(text, lambda state: None)
        if chat.id is not None and chat.id != self._known:
            self._known = chat.id
            self._remember(chat.id)
        return report

    def close(self) -> None:
        if self._chat is not None:
            self._chat.butler.close()
            self._chat = None
