"""The trusted base: everything the butler executes or imports outside the sandbox (issue 31).

A sandboxed program must not be able to change what the butler itself runs next: the
bubblewrap binary, the folders on PATH (where hooks, ``$EDITOR`` and MCP servers are found),
the butler's own installation and interpreter (``sys.prefix``, every ``sys.path`` entry, the
user site folder Python would import from), the config files a library reads from the home
(keyring's ``python_keyring`` folder), the shell's start-up files and the programs the
config names. Two defences, both from here:

- :func:`base_paths` lists them; the sandbox binds each one that lies inside a write root
  read-only over itself, after the writable binds (:mod:`butler_cli.tools.sandbox`).
- :func:`refusal` is checked before such a program runs or such a file is loaded, like ssh's
  ``StrictModes``: the file and every folder above it must be owned by the person or root and
  writable by nobody else, and must not lie in a folder sandboxed programs may write.

bubblewrap itself is found only at :data:`BWRAP_PATHS` (root's files), never through PATH.
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Where bubblewrap is looked for, in order: fixed, root-owned places, never PATH.
BWRAP_PATHS = ("/usr/bin/bwrap", "/usr/local/bin/bwrap")

#: Files a login or interactive shell runs from the home: kept read-only like the programs.
SHELL_FILES = (
    ".profile",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".pam_environment",
    ".config/fish",
    ".config/environment.d",
    ".config/autostart",
    ".config/systemd/user",
)


@dataclass(frozen=True)
class Trusted:
    """One path of the trusted base: ``folder`` when, missing inside a write root, it must be
    made (empty, 0700) so nothing planted can appear there (a PATH folder, the user site)."""

    path: Path
    folder: bool = False


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def keyring_config_root() -> Path:
    """Where keyring would read ``keyringrc.cfg`` (its ``config_root`` on Linux). The butler
    never lets keyring read it (:mod:`butler_cli.store.stored_keys` picks the backend in
    code), and the folder is read-only to sandboxed programs all the same."""
    root = os.environ.get("XDG_CONFIG_HOME") or str(_home() / ".config")
    return Path(root) / "python_keyring"


def _installation() -> list[Trusted]:
    """The interpreter and every place Python imports from, the butler's package included."""
    found = [Trusted(Path(sys.executable))]
    found += [Trusted(Path(p)) for p in {sys.prefix, sys.exec_prefix, sys.base_prefix}]
    found += [Trusted(Path(p)) for p in sys.path if p]
    found.append(Trusted(Path(__file__).resolve().parent.parent))  # butler_cli itself
    if site.ENABLE_USER_SITE:  # imported from at the next start once it exists
        found.append(Trusted(Path(site.getusersitepackages()), folder=True))
    return found


def base_paths(extra_programs: Iterable[str | Path] = ()) -> list[Trusted]:
    """The trusted base of this process: bubblewrap's fixed paths, every PATH folder, the
    installation, keyring's config folder, the shell start-up files, and ``extra_programs``
    (hooks, ``$EDITOR``, MCP servers: bare names found on PATH)."""
    found = [Trusted(Path(p)) for p in BWRAP_PATHS]
    path = os.environ.get("PATH", "")
    found += [Trusted(Path(p), folder=True) for p in path.split(os.pathsep) if os.path.isabs(p)]
    found += _installation()
    found.append(Trusted(keyring_config_root(), folder=True))
    home = _home()
    found += [Trusted(home / name) for name in SHELL_FILES]
    for program in extra_programs:
        where = program_path(str(program))
        if where is not None:
            found.append(Trusted(where))
    return found


def program_path(program: str) -> Path | None:
    """The absolute path ``program`` names: as given when it has a slash, else found on PATH."""
    if os.sep in program:
        return Path(os.path.abspath(os.path.expanduser(program)))
    found = shutil.which(program)
    return Path(os.path.abspath(found)) if found else None


@functools.cache
def _process_base() -> tuple[Trusted, ...]:
    return tuple(base_paths())


def process_base() -> tuple[Trusted, ...]:
    """:func:`base_paths` without extra programs, worked out once per process."""
    return _process_base()


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def kept_read_only(base: Iterable[Trusted], roots: Sequence[Path]) -> list[Path]:
    """The trusted paths a sandboxed program could otherwise write: those inside one of the
    write ``roots`` (resolved), outermost first. A missing folder there is made now, empty
    and 0700, so that a program cannot create it and fill it; a missing file is left (a
    sandboxed program could create it: see docs/guarantees.md)."""
    out: list[Path] = []
    for item in base:
        real = Path(os.path.realpath(item.path))
        if not any(inside(real, r) for r in roots) or real in out:
            continue
        if not os.path.lexists(real):
            if not item.folder:
                continue
            try:
                real.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError:
                continue
        out.append(real)
    out.sort(key=lambda p: len(p.parts))
    return out


def _owner_problem(path: Path, st: os.stat_result, owners: Sequence[int]) -> str | None:
    if st.st_uid not in owners:
        return f"{path} is owned by user {st.st_uid}, not by you or root"
    mode = st.st_mode
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        # a root-owned sticky folder (/tmp): others may add entries, not replace ours
        if stat.S_ISDIR(mode) and mode & stat.S_ISVTX and st.st_uid == 0:
            return None
        return f"{path} is writable by others (mode {stat.S_IMODE(mode):o})"
    return None


def refusal(
    path: Path | str,
    write_roots: Sequence[Path] = (),
    what: str = "the program",
    root_only: bool = False,
) -> str | None:
    """Why ``path`` may not be run or loaded, else None: it, or a folder above it (on its
    way as written and after its links are followed), is owned by someone other than the
    person or root, is writable by others, or lies inside one of ``write_roots`` (where a
    sandboxed program may write) — unless it is in a folder of the trusted base the sandbox
    always keeps read-only there (a PATH folder, made if missing: :func:`kept_read_only`).
    ``root_only``: every owner must be root (bubblewrap)."""
    owners = (0,) if root_only else tuple({0, os.getuid()})
    given = Path(os.path.abspath(os.path.expanduser(str(path))))
    real = Path(os.path.realpath(given))
    kept = [Path(os.path.realpath(t.path)) for t in process_base() if t.folder]
    for root in write_roots:
        real_root = Path(os.path.realpath(root))
        if any(inside(real, k) and inside(k, real_root) for k in kept):
            continue
        if inside(real, real_root) or inside(given, real_root):
            return (
                f"refusing to run {what} {given}: it is inside {real_root}, a folder "
                "sandboxed programs may write"
            )
    seen: set[Path] = set()
    for candidate in (given, real):
        for folder in (candidate, *candidate.parents):
            if folder in seen:
                continue
            seen.add(folder)
            try:
                st = os.lstat(folder)
            except OSError as exc:
                return f"refusing to run {what} {given}: {folder}: {exc.strerror or exc}"
            if stat.S_ISLNK(st.st_mode):
                continue  # the link itself cannot be changed; its folder is checked
            problem = _owner_problem(folder, st, owners)
            if problem is not None:
                return f"refusing to run {what} {given}: {problem}"
    return None


def bubblewrap() -> tuple[str | None, str]:
    """The bubblewrap binary at a fixed path that passes :func:`refusal` as root's file, and
    why not when none does."""
    problems: list[str] = []
    for candidate in BWRAP_PATHS:
        if not os.path.exists(candidate):
            continue
        problem = refusal(candidate, what="bubblewrap", root_only=True)
        if problem is None:
            return candidate, ""
        problems.append(problem)
    if problems:
        return None, "; ".join(problems)
    return None, f"bubblewrap (bwrap) is not installed (looked at {', '.join(BWRAP_PATHS)})"
