"""`@path` completion in the chat: the files an ``@word`` may attach, as the person types.

Names are taken from the chat's folder (or the folder the typed path leads to: ``@docs/``,
``@../``, ``@~/``, as an ``@path`` itself may name any file the person can read), one folder
at a time, never read. Offered: what starts with what is typed, a folder with its ``/``;
names starting with a dot only when a dot is typed. Never offered: the butler's own state —
its home, the config and keys files, everything the session protects — whichever name or
symlink leads there (judged on the resolved path); a name no ``@word`` could carry or that
would not show as it is (a space, a control or invisible character). A folder that cannot be
read offers nothing.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from itertools import islice

from prompt_toolkit.completion import Completion

#: At most this many names are read from one folder, and this many offered.
READ, OFFERED = 5000, 200
#: Unicode categories a name may not hold: controls, formats (bidi, zero-width), surrogates,
#: private use, unassigned, separators.
_UNSHOWN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"}

#: The paths to keep out of completion, asked each time (the session's list once it is built).
Hidden = Callable[[], Iterable[str]]


def at_word(text_before_cursor: str) -> str | None:
    """What follows ``@`` in the word being typed, if that word is an ``@path``."""
    word = text_before_cursor.split()[-1] if text_before_cursor.strip() else ""
    if text_before_cursor[-1:].isspace() or not word.startswith("@"):
        return None
    return word[1:]


def path_completions(typed: str, cwd: str, hidden: Iterable[str]) -> Iterator[Completion]:
    """The names ``@typed`` may go on with (see the module's rule)."""
    folder, slash, prefix = typed.rpartition("/")
    lead = folder + slash
    base = os.path.join(cwd, os.path.expanduser(lead)) if lead else cwd
    kept = [os.path.realpath(path) for path in hidden]
    real_base = os.path.realpath(base)
    if _within(real_base, kept):
        return
    try:
        entries = os.scandir(base)
    except OSError:
        return
    found: list[str] = []
    with entries:
        for entry in islice(entries, READ):
            name = entry.name
            if not name.startswith(prefix) or not _shown(name):
                continue
            if name.startswith(".") and not prefix.startswith("."):
                continue
            target = os.path.join(real_base, name)
            try:
                if entry.is_symlink():
                    target = os.path.realpath(target)
                folder_mark = "/" if entry.is_dir() else ""
            except OSError:
                continue
            if not _within(target, kept):
                found.append(name + folder_mark)
    for name in sorted(found)[:OFFERED]:
        yield Completion(lead + name, start_position=-len(typed), display=name)


def _shown(name: str) -> bool:
    """Whether ``name`` can be an ``@word`` and shows as it is."""
    return not any(unicodedata.category(c) in _UNSHOWN or c.isspace() for c in name)


def _within(path: str, kept: list[str]) -> bool:
    return any(path == k or path.startswith(k.rstrip(os.sep) + os.sep) for k in kept)
