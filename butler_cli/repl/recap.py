"""`chat -c` / `--conversation ID` before the first prompt: the saved conversation found
(sqlite only; the rest loads after the prompt is up) and where it stands said.

Imported only then — a named lazy edge (tests/test_imports.py): the plain chat's first prompt
opens no conversation store.
"""

from __future__ import annotations

import os

from butler_cli.app.chat.conversations import Record, find_saved, recap
from butler_cli.ui.text import visible


def recap_saved(home: str, given: str | None) -> Record | None:
    """The conversation ``given`` (None: this folder's last one), its recap printed; None when
    this folder has none. An unknown id stops here (a ButlerError), before any prompt."""
    saved = find_saved(home, given, os.getcwd())
    if saved is None:
        print("No earlier conversation in this folder; this one starts new.")
        return None
    for line in recap(saved):
        print(visible(line))
    return saved
