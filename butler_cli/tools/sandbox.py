"""The sandbox ``run_command`` starts programs in.

Linux: bubblewrap (``bwrap``, found only at a fixed path: :mod:`butler_cli.tools.trusted`).
The program sees the whole file system read-only except its write roots — the task's folder
and the roots the person named (``allowed_roots``), never the home by default (issue 31);
inside them every ``.git`` (and the git dir a ``gitdir:`` file points to) and the trusted
base (what the butler itself runs or imports) stay read-only; the butler's own files (home,
config, policy files, key files) are hidden — an
empty read-only folder over a directory, ``/dev/null`` over a file. It gets a fresh ``/tmp``,
``/dev`` and ``/proc``, its own PID namespace (it cannot see the butler or its environment,
and everything it started dies with it), no capabilities, and a new session (no typing into
the terminal). The network is kept unless ``[sandbox] network = false``.

macOS: ``sandbox-exec`` with a profile saying the same (written to the same rules; it is not
exercised by the test suite, which runs on Linux).

Where neither can start, :func:`detect_sandbox` says why; the command tool then never runs a
program without a person's approval.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from butler_cli.tools.trusted import Trusted, bubblewrap, kept_read_only, process_base

PROBE_TIMEOUT_S = 10.0
#: ``BUTLER_SANDBOX=none`` turns the sandbox off: every command then asks a person (stricter,
#: never looser; the test suite uses it to stand for a machine without bubblewrap).
OFF_VARIABLE = "BUTLER_SANDBOX"
#: How deep below an allowed root ``.git`` folders are looked for (they are kept read-only).
GIT_SCAN_DEPTH = 2
GIT_SCAN_MAX_ENTRIES = 20_000


@dataclass(frozen=True)
class Confinement:
    """What a sandboxed server may write (``writable``; the task's folder when empty), what
    it must never see (``hidden``), and the programs the config names (``trusted``), kept
    read-only like the rest of the trusted base."""

    hidden: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    trusted: tuple[Trusted, ...] = ()


@dataclass(frozen=True)
class Sandbox:
    """Which sandbox programs start in: ``bubblewrap``, ``sandbox-exec`` or ``none``."""

    kind: str
    program: str | None = None
    #: Why there is none (shown in the approval and by `butler doctor`).
    problem: str = ""

    @property
    def active(self) -> bool:
        return self.program is not None

    def describe(self) -> str:
        if self.active:
            return f"{self.kind} ({self.program})"
        return f"none — {self.problem}"

    def wrap(
        self,
        argv: Sequence[str],
        cwd: Path,
        writable: Iterable[Path],
        hidden: Iterable[Path],
        network: bool = True,
        trusted: Iterable[Trusted] = (),
    ) -> list[str]:
        """The argv that runs ``argv`` inside the sandbox (``argv`` itself when none): only
        ``writable`` may be written, and inside it neither ``.git`` nor the trusted base
        (this process's, and ``trusted``: the programs the config names)."""
        if self.program is None:
            return list(argv)
        roots = _existing(writable)
        masks = _masks(hidden, roots)
        gits = git_dirs(cwd, roots)
        keep = kept_read_only([*process_base(), *trusted], roots)
        if self.kind == "bubblewrap":
            under_tmp = programs_under_tmp(argv)
            pins = pinned([*masks, *keep], roots)  # no folder above them can be moved
            args = bwrap_args(cwd, roots, [*keep, *gits], masks, network, under_tmp, pins)
            return [self.program, *args, "--", *argv]
        profile = seatbelt_profile(roots, [*keep, *gits], masks, network)
        return [self.program, "-p", profile, *argv]

    def wrap_server(self, argv: Sequence[str], cwd: Path, confined: Confinement) -> list[str]:
        """The argv that runs a long-lived server (an MCP server) under the same write model
        as a command: only its write roots (by default ``cwd``, the task's folder) and a
        private /tmp writable, the trusted base and ``.git`` read-only, the butler's own files
        hidden; the network kept, its own PID namespace and session (it cannot see the
        butler, and it dies with it)."""
        writable = confined.writable or (cwd,)
        return self.wrap(argv, cwd, writable, confined.hidden, True, confined.trusted)


@functools.cache
def detect_sandbox() -> Sandbox:
    """The sandbox this machine can start, probed once per process: its program only at a
    fixed path (never found through PATH, which a program may have put a folder first on)."""
    if os.environ.get(OFF_VARIABLE, "").strip().lower() in ("none", "off", "0"):
        return Sandbox("none", None, f"the sandbox is turned off ({OFF_VARIABLE})")
    if sys.platform == "darwin":
        program = "/usr/bin/sandbox-exec"
        if os.path.exists(program):
            return Sandbox("sandbox-exec", program)
        return Sandbox("none", None, "sandbox-exec was not found")
    if not sys.platform.startswith("linux"):
        return Sandbox("none", None, f"no sandbox is known for {sys.platform}")
    program, problem = bubblewrap()
    if program is None:
        return Sandbox("none", None, problem)
    probe = [program, *bwrap_args(Path("/"), [], [], [], True), "--", "true"]
    try:
        done = subprocess.run(
            probe,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Sandbox("none", None, f"bubblewrap cannot start here ({exc})")
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return Sandbox(
            "none", None, f"bubblewrap cannot start here ({why[-1] if why else 'failed'})"
        )
    return Sandbox("bubblewrap", program)


def programs_under_tmp(argv: Sequence[str]) -> list[Path]:
    """Folders under /tmp the program needs to start, which the fresh /tmp would hide: its
    own folder (found on PATH), the folders on PATH, and this Python's prefixes (a virtual
    environment made under /tmp runs there). They come back read-only."""
    tmp = Path("/tmp")
    found = shutil.which(argv[0]) if argv else None
    candidates = [Path(found).parent] if found else []
    candidates += [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    candidates += [Path(p) for p in {sys.prefix, sys.exec_prefix, sys.base_prefix}]
    kept: list[Path] = []
    for path in candidates:
        real = Path(os.path.realpath(path))
        if real != tmp and tmp in real.parents and real.is_dir() and real not in kept:
            kept.append(real)
    return kept


def bwrap_args(
    cwd: Path,
    roots: Sequence[Path],
    gits: Sequence[Path],
    masks: Sequence[Path],
    network: bool,
    under_tmp: Sequence[Path] = (),
    pins: Sequence[Path] = (),
) -> list[str]:
    """bubblewrap's options, in mount order: read-only everything, a fresh /tmp (with the
    program's own folders under /tmp bound back read-only), the allowed roots writable, the
    folders above the butler's files bound onto themselves (``pins``: a mount point cannot be
    renamed or removed, EBUSY), fresh /dev and /proc, ``.git`` read-only again, the butler's
    files hidden last (each a mount point too)."""
    args = [
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    if not network:
        args.append("--unshare-net")
    args += ["--ro-bind", "/", "/", "--tmpfs", "/tmp"]
    for path in under_tmp:
        args += ["--ro-bind", str(path), str(path)]
    for root in sorted(roots, key=lambda p: len(p.parts)):
        args += ["--bind", str(root), str(root)]
    for pin in pins:
        args += ["--bind", str(pin), str(pin)]
    # after the roots: even a root of "/" cannot bring back the host's /proc or /dev
    args += ["--dev", "/dev", "--proc", "/proc"]
    for git in gits:
        args += ["--ro-bind", str(git), str(git)]
    for mask in masks:
        if mask.is_dir():
            args += ["--tmpfs", str(mask), "--remount-ro", str(mask)]
        else:
            args += ["--ro-bind", "/dev/null", str(mask)]
    args += ["--chdir", str(cwd)]
    return args


def seatbelt_profile(
    roots: Sequence[Path], gits: Sequence[Path], masks: Sequence[Path], network: bool
) -> str:
    """A ``sandbox-exec`` profile with the same rules (later rules win in SBPL)."""

    def q(path: Path | str) -> str:
        return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'

    writable = " ".join(f"(subpath {q(r)})" for r in roots)
    lines = [
        "(version 1)",
        "(allow default)",
        "(deny file-write*)",
        f'(allow file-write* {writable} (subpath "/private/tmp") (subpath "/private/var/folders")'
        ' (literal "/dev/null") (regex #"^/dev/tty"))',
    ]
    lines += [f"(deny file-write* (subpath {q(g)}))" for g in gits]
    for mask in masks:
        kind = "subpath" if mask.is_dir() else "literal"
        lines.append(f"(deny file-read* file-write* ({kind} {q(mask)}))")
    if not network:
        lines.append("(deny network*)")
    return "\n".join(lines) + "\n"


def _existing(paths: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        real = Path(os.path.realpath(path))
        if real.is_dir() and real not in out:
            out.append(real)
    return out


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _masks(hidden: Iterable[Path], roots: Sequence[Path]) -> list[Path]:
    """What to hide, resolved, outermost first, nothing inside an already hidden folder.

    A path that does not exist yet but could be created through a writable root must not be
    planted by a program: a folder (the butler's home or config folder before first use) is
    made now, empty and 0700, and hidden; a policy's missing bytecode file is covered by
    hiding its ``__pycache__`` folder (made if need be). Other missing files are left alone.
    """
    found: list[Path] = []
    for raw in hidden:
        real = Path(os.path.realpath(raw))
        if not real.exists():
            if not any(_inside(real, r) for r in roots):
                continue  # nothing can create it from inside the sandbox
            if real.suffix == ".pyc" and real.parent.name == "__pycache__":
                real = real.parent
            elif real.suffix:
                continue
            real.mkdir(parents=True, exist_ok=True, mode=0o700)
        found.append(real)
    found.sort(key=lambda p: len(p.parts))
    out: list[Path] = []
    for path in found:
        if not any(_inside(path, kept) for kept in out if kept.is_dir()):
            out.append(path)
    return out


def pinned(masks: Sequence[Path], roots: Sequence[Path]) -> list[Path]:
    """Every folder between a writable root and a hidden path, outermost first: bound onto
    itself it becomes a mount point, which nothing inside the sandbox can rename, remove or
    replace — so ``mv ~/.config ~/.config.moved`` cannot take the config file away and put
    a planted one at its path (issue 20). The root itself and the hidden path are already
    mount points."""
    out: list[Path] = []
    for mask in masks:
        for root in roots:
            if mask == root or root not in mask.parents:
                continue
            for folder in reversed(mask.parents):
                if root in folder.parents and folder not in out:
                    out.append(folder)
    out.sort(key=lambda p: len(p.parts))
    return out


def git_dirs(cwd: Path, roots: Sequence[Path]) -> list[Path]:
    """Every git folder a program could write through a writable root: the repository the
    working folder is in, and ``.git`` up to :data:`GIT_SCAN_DEPTH` levels below each root,
    with the folders a ``gitdir:`` file (worktree, submodule) points to."""
    found: list[Path] = []

    def add(dot_git: Path) -> None:
        for path in _git_targets(dot_git):
            if path not in found and any(_inside(path, r) for r in roots):
                found.append(path)

    here = Path(os.path.realpath(cwd))
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            add(folder / ".git")
    budget = [GIT_SCAN_MAX_ENTRIES]
    for root in roots:
        _scan(root, GIT_SCAN_DEPTH, add, budget)
    return found


def _scan(folder: Path, depth: int, add: object, budget: list[int]) -> None:
    assert callable(add)
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        budget[0] -= 1
        if budget[0] < 0:
            return
        if entry.name == ".git":
            add(Path(entry.path))
        elif depth > 0 and entry.is_dir(follow_symlinks=False):
            _scan(Path(entry.path), depth - 1, add, budget)


def _git_targets(dot_git: Path) -> list[Path]:
    """``.git`` itself, and for a ``gitdir:`` file the folder it names and that folder's
    ``commondir`` (a worktree's shared repository)."""
    out = [Path(os.path.realpath(dot_git))]
    if dot_git.is_file():
        try:
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return out
        if text.startswith("gitdir:"):
            target = Path(os.path.realpath(dot_git.parent / text[7:].strip()))
            if target.is_dir():
                out.append(target)
                common = target / "commondir"
                if common.is_file():
                    try:
                        raw = common.read_text(encoding="utf-8").strip()
                    except OSError:
                        raw = ""
                    if raw:
                        shared = Path(os.path.realpath(target / raw))
                        if shared.is_dir():
                            out.append(shared)
    return out
