"""Saved prompts the person wrote (llm's ``-t NAME``): a template is ``NAME.md`` in the
``templates`` folder beside the config file, and ``-t NAME`` makes its text the system prompt,
as ``--system`` would (a park records it, so a resume goes on with the same words).

The folder is the person's, never the model's: it is one of the butler's own paths
(``app/run/protected.py``), so no file tool reads or writes it and a sandboxed program sees it
empty. A file there that is a link, not a regular file, or not UTF-8 text is refused by name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from butler_cli.app.config.config import config_path
from butler_cli.core.errors import UsageError
from butler_cli.store.files import read_no_follow

#: A template's name: what ``-t`` takes (no folder, no dot first).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
SUFFIX = ".md"
#: A template longer than this is refused (a system prompt, not a document).
CAP = 64 * 1024


def folder(config_file: Path | None = None) -> Path:
    """Where templates live: ``templates/`` beside the config file (``butler config path``)."""
    return (config_file or config_path()).parent / "templates"


def names(config_file: Path | None = None) -> list[str]:
    """The templates there, by name, sorted (none when the folder does not exist)."""
    try:
        entries = os.listdir(folder(config_file))
    except OSError:
        return []
    found = [e[: -len(SUFFIX)] for e in entries if e.endswith(SUFFIX)]
    return sorted(n for n in found if NAME.fullmatch(n))


def load(name: str, config_file: Path | None = None) -> str:
    """The text of template ``name``; a usage error naming the file when it cannot be used."""
    where = folder(config_file)
    if not NAME.fullmatch(name) or name.endswith(SUFFIX):
        raise UsageError(
            f"-t takes a template's name (letters, digits, '.', '_', '-'), such as 'review': "
            f"the file NAME{SUFFIX} in {where}",
            code="bad_template",
        )
    path = where / f"{name}{SUFFIX}"
    try:
        data = read_no_follow(path)
    except FileNotFoundError:
        known = ", ".join(names(config_file)) or "none yet"
        raise UsageError(
            f"no template {name!r}: write it as {path} (templates there: {known})",
            code="no_template",
        ) from None
    except OSError as exc:
        why = f"template {path} cannot be read: {exc.strerror or exc} (a link is never followed)"
        raise UsageError(why, code="bad_template") from None
    if len(data) > CAP:
        raise UsageError(f"template {path} is longer than {CAP} bytes", code="bad_template")
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise UsageError(f"template {path} is not UTF-8 text", code="bad_template") from None
