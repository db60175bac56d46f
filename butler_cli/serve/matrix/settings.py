"""The ``[matrix]`` section: where the butler sits, and the one person it listens to.

Declared like any plug-in's section (an entry point in ``butler.settings``), so `butler config
set matrix.room …` and the file check know it. The access token is never in the file: the
section names the variable or stored key that holds it (``token_env``, default
``BUTLER_MATRIX_TOKEN``, kept with `butler keys set`), and its value is masked everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from butler_cli.core.errors import UsageError
from butler_cli.core.setting import Setting

MATRIX = (
    Setting("homeserver", str, help="the homeserver's URL, e.g. https://matrix.example.org"),
    Setting("user", str, help="the butler's own Matrix account, e.g. @butler:example.org"),
    Setting("person", str, help="the ONE Matrix id whose messages count, e.g. @you:example.org"),
    Setting("room", str, help="the room's id, e.g. !abcdef:example.org"),
    Setting(
        "token_env",
        str,
        "BUTLER_MATRIX_TOKEN",
        secret_name=True,
        help="a NAME: the variable or stored key (butler keys set) holding the access token",
    ),
    Setting("folder", str, help="the project folder chat turns run in (default: serve's own)"),
)

_USER = re.compile(r"@[a-z0-9._=/+\-]+:[A-Za-z0-9.\-]+(:[0-9]{1,5})?")
#: A room id: ``!opaque:server`` — or, from room version 12, ``!opaque`` alone.
_ROOM = re.compile(r"![A-Za-z0-9._=/+\-]+(:[A-Za-z0-9.\-]+(:[0-9]{1,5})?)?")


@dataclass(frozen=True)
class MatrixSettings:
    """The section, checked, with the token read."""

    homeserver: str
    user: str
    person: str
    room: str
    token: str
    folder: Path


def matrix_settings(
    section: Mapping[str, Any], secret: Callable[[str], str | None], cwd: Path
) -> MatrixSettings | None:
    """The channel's settings, or None when no homeserver is set (no channel). A section
    that is there but incomplete or malformed is a usage error naming the key."""
    if not section.get("homeserver"):
        return None
    where = "[matrix]"
    homeserver = str(section["homeserver"]).rstrip("/")
    if not re.fullmatch(r"https?://[^\s/]+(/[^\s]*)?", homeserver):
        raise UsageError(f"{where} homeserver must be an http(s):// URL")
    found: dict[str, str] = {}
    for key, pattern, example in (
        ("user", _USER, "@butler:example.org"),
        ("person", _USER, "@you:example.org"),
        ("room", _ROOM, "!abcdef:example.org"),
    ):
        value = str(section.get(key) or "")
        if not pattern.fullmatch(value):
            raise UsageError(f"{where} {key} must be a Matrix id like {example}")
        found[key] = value
    if found["person"] == found["user"]:
        raise UsageError(f"{where} person must be someone other than the butler's own account")
    name = str(section.get("token_env") or "BUTLER_MATRIX_TOKEN")
    token = secret(name)
    if not token:
        raise UsageError(
            f"{where} needs the butler's access token in {name}: `butler keys set {name}` "
            "(or the variable of that name)"
        )
    folder = Path(str(section.get("folder") or cwd)).expanduser()
    if not folder.is_dir():
        raise UsageError(f"{where} folder {folder} is not a folder")
    return MatrixSettings(
        homeserver, found["user"], found["person"], found["room"], token.strip(), folder
    )
