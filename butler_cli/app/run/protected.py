"""The butler's own files, which no tool and no program it runs may reach.

One list, used twice: the file tools refuse these paths, and the command sandbox hides them
(an empty read-only directory over a folder, ``/dev/null`` over a file). It holds the home
(parks, the park key, audit log, memory, history), the config file (or the folder it would go
in), the stored keys' file (or its folder), a file keyring's folder, the policy files in use
(a rule file, a policy's Python file) and the key files the config points to.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from pathlib import Path

from butler_cli.app.config.config import Config, config_path
from butler_cli.app.run.instructions import NAMES, folders
from butler_cli.core.errors import GateMoved
from butler_cli.store.stored_keys import keyring_files, keys_path
from butler_cli.tools.trusted import Trusted, program_path


def protected_paths(
    home: Path,
    policy_files: Iterable[Path | str | None] = (),
    config: Config | None = None,
    config_file: Path | None = None,
) -> list[Path]:
    """Every path the agent must never see or change, resolved, without duplicates.

    The config file is listed as itself when it exists, else as the folder it would be written
    to (so a program cannot create one). Key files are listed when they exist.
    """
    config_file = config_file or config_path()
    keys_file = keys_path()  # the stored keys (`butler keys set`), or the folder they go in
    found: list[Path] = [
        home,
        config_file if config_file.exists() else config_file.parent,
        keys_file if keys_file.exists() else keys_file.parent,
    ]
    if (keyring := keyring_files()).exists():  # a file keyring's folder (keyrings.alt)
        found.append(keyring)
    # the person's saved prompts and slash commands, beside the config file: never the model's
    found += [config_file.parent / "templates", config_file.parent / "commands"]
    found += [Path(p) for p in policy_files if p]
    for settings in config.providers.values() if config is not None else []:
        if settings.api_key_file:
            key_file = Path(os.path.expanduser(settings.api_key_file))
            if key_file.exists():
                found.append(key_file)
    out: list[Path] = []
    for path in found:
        real = Path(os.path.realpath(path.expanduser()))
        if real not in out:
            out.append(real)
    return out


def trusted_programs(config: Config | None) -> list[Trusted]:
    """The programs the config names, which the butler runs outside the sandbox or starts
    servers from: the ``[hooks]`` commands, ``$EDITOR`` (``$VISUAL``, vi), each MCP server's
    program and the files among its arguments (``python3 server.py``). Part of the trusted
    base (:mod:`butler_cli.tools.trusted`): read-only to sandboxed programs."""
    words: list[str] = [os.environ.get("EDITOR") or os.environ.get("VISUAL") or "vi"]
    for value in (config.hooks if config is not None else {}).values():
        if isinstance(value, list) and value and isinstance(value[0], str):
            words.append(value[0])
        elif isinstance(value, str) and not value.startswith(("http://", "https://")):
            words.append(value)
    names: list[str] = []
    for word in words:
        try:
            names += shlex.split(word)[:1]
        except ValueError:
            continue
    for table in (config.mcp if config is not None else {}).values():
        if isinstance(table, dict) and isinstance(table.get("command"), str):
            names.append(table["command"])
            args = table.get("args")
            names += [a for a in args if isinstance(a, str)] if isinstance(args, list) else []
    out: list[Trusted] = []
    for name in names:
        where = program_path(name) if os.sep in name or not os.path.exists(name) else None
        if where is not None and where.exists():
            out.append(Trusted(where))
    return out


def trusted_files(config: Config | None, cwd: Path) -> list[Trusted]:
    """:func:`trusted_programs`, and the project instructions a task in ``cwd`` is sent
    (``AGENTS.md``, ``CLAUDE.md``, ``BUTLER.md`` here and in the folders above it up to the home): a
    sandboxed program must not leave words for every later task (issue 31)."""
    found = trusted_programs(config)
    found += [Trusted(folder / name) for folder in folders(cwd) for name in NAMES]
    return found


def policy_file_of(spec: str) -> Path | None:
    """The Python file a ``path/to/file.py:attr`` policy was loaded from, else None."""
    target, sep, _ = spec.rpartition(":")
    if sep and (target.endswith(".py") or "/" in target):
        return Path(target)
    return None


Identity = tuple[int, int] | None


def folder_identities(paths: Iterable[Path]) -> dict[Path, Identity]:
    """(device, inode) of every folder on the way to each of ``paths`` (and of each path that
    is a folder), None where missing. Files are left out: saving a file (an editor, `butler
    keys set`) gives it a new inode; moving a folder above it is what takes it away."""
    out: dict[Path, Identity] = {}
    for path in paths:
        chain = [path, *path.parents] if path.is_dir() else list(path.parents)
        for folder in chain:
            if folder in out:
                break  # the rest of the way up is already recorded
            try:
                st = os.lstat(folder)
            except OSError:
                out[folder] = None
            else:
                out[folder] = (st.st_dev, st.st_ino)
    return out


class GateWatch:
    """Notices a swap: where the gate's folders were when the butler started, checked after
    every round that may have moved one. A program that moved ``~/.config`` away and made a
    fresh one (issue 20) stops the task with one line instead of leaving a planted config for
    the next one.

    The folders to look at are worked out once: a check is one ``lstat`` of each (about 20),
    not a walk up every path's parents again."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.paths = list(paths)
        self.seen = folder_identities(self.paths)
        #: Folders that existed then (one made since is not a swap), as strings for ``lstat``.
        self._watched = [(str(f), seen) for f, seen in self.seen.items() if seen is not None]

    def check(self) -> None:
        for folder, seen in self._watched:
            try:
                st = os.lstat(folder)
            except OSError:
                now: Identity = None
            else:
                now = (st.st_dev, st.st_ino)
            if now != seen:
                raise GateMoved(
                    f"{folder} (a folder holding the butler's own files) was moved or replaced "
                    "while the task ran; stopped, nothing more runs — check it (and the config "
                    "and policy in it) before running the butler again"
                )
