"""Custom slash commands (Claude Code's ``.claude/commands/NAME.md``): a Markdown file whose
text becomes the prompt of a chat turn, ``$ARGUMENTS`` replaced by what follows ``/NAME``.

Two folders: the person's own, ``commands/`` beside the config file (one of the butler's own
paths, so no tool of the model's writes it), and the project's, ``.butler/commands/`` (or
``.claude/commands/``) in the chat's folder — a project's file, someone else's words in a cloned
repository. Either only makes a prompt: whatever the model then asks for goes through the gate
like any turn. A built-in command's name is never taken over (the file is listed as unused),
and the person's command wins over a project's of the same name.

A project's file is read as ``read_file`` reads (a link only inside its own folder, never one
of the butler's own files or a hard link to one, secrets masked); the person's, without
following a link.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from butler_cli.app.config.config import config_path
from butler_cli.store.files import read_no_follow
from butler_cli.tools.paths import PathRules, read_regular
from butler_cli.tools.redact import mask_text

#: A command's name, from its file's name (``review-pr.md`` is ``/review-pr``).
NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
#: The project's folders, in the chat's folder, first found first.
PROJECT = (".butler/commands", ".claude/commands")
PLACEHOLDER = "$ARGUMENTS"
#: A command file is read up to this much (a prompt, not a document).
CAP = 64 * 1024


@dataclass(frozen=True)
class Custom:
    """One command file: its name, where it is, whose it is, its text."""

    name: str
    path: Path
    #: "yours" (beside the config file) or "project" (in the chat's folder).
    source: str
    text: str

    @property
    def summary(self) -> str:
        """Its first non-empty line, for /help."""
        return next((ln.strip() for ln in self.text.splitlines() if ln.strip()), "")

    def prompt(self, arguments: str) -> str:
        """The turn it sends: ``$ARGUMENTS`` replaced by what followed the command; without
        the placeholder, what followed is added on a line of its own (never dropped)."""
        if PLACEHOLDER in self.text:
            return self.text.replace(PLACEHOLDER, arguments)
        return f"{self.text}\n\n{arguments}" if arguments else self.text


def _own(folder: Path, file: str) -> str | None:
    """A file of the person's folder: a regular file, read without following a link."""
    try:
        return read_no_follow(folder / file)[:CAP].decode("utf-8", errors="replace")
    except OSError:
        return None


def _project(folder: Path, file: str, home: Path, protected: Sequence[Path]) -> str | None:
    """A project's file (``file``, relative to the chat's ``folder``), read as read_file reads
    one inside that folder alone: a link — the file's or a folder's on the way — that leads
    out of it is refused, as one outside the allowed roots is."""
    rules = PathRules(folder, home, protected, [folder])
    try:
        data, _ = read_regular(rules, file, CAP)
    except (OSError, ValueError):
        return None
    return mask_text(data.decode("utf-8", errors="replace"))


def _files(folder: Path) -> list[tuple[str, str]]:
    """(name, file name) of each ``NAME.md`` in ``folder``, sorted."""
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return []
    return [
        (entry[:-3], entry)
        for entry in entries
        if entry.endswith(".md") and NAME.fullmatch(entry[:-3])
    ]


def found(yours: Path, cwd: Path, home: Path, protected: Sequence[Path]) -> list[Custom]:
    """Every command file: the person's (``yours``) first, then the project's; a name met
    again later is left out (the person's wins)."""
    out: dict[str, Custom] = {}
    for name, file in _files(yours):
        text = _own(yours, file)
        if text is not None and text.strip():
            out[name] = Custom(name, yours / file, "yours", text.strip())
    # The chat's folder is the root, not each commands folder as resolved: a `.butler` or
    # `.claude/commands` linked out of the project made the place it names the root.
    root = Path(os.path.realpath(cwd))
    for sub in PROJECT:
        for name, file in _files(root / sub):
            if name in out:
                continue
            text = _project(root, f"{sub}/{file}", home, protected)
            if text is not None and text.strip():
                where = Path(os.path.realpath(root / sub / file))
                out[name] = Custom(name, where, "project", text.strip())
    return list(out.values())


def yours() -> Path:
    """The person's folder: ``commands/`` beside the config file (``butler config path``)."""
    return config_path().parent / "commands"


def usable(commands: Sequence[Custom], builtins: Collection[str]) -> dict[str, Custom]:
    """The commands a line may call, by ``/name``: none named like a built-in."""
    return {f"/{c.name}": c for c in commands if f"/{c.name}" not in builtins}
