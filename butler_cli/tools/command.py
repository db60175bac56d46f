"""``run_command``: a governed tool that runs an argv list — never through a shell.

The approval shows the exact argv and working directory; what runs is byte for byte what was
shown. The program starts in the sandbox (:mod:`butler_cli.tools.sandbox`) with a scrubbed
environment (:func:`butler_cli.tools.redact.child_env`). Where no sandbox can start, every
call asks a person, whatever the policy says.

Bounded: at the timeout, or when Ctrl-C interrupts the butler (the program runs in a session
of its own, so the terminal's signal never reaches it), the whole tree is killed and reading
stops (the call returns within the timeout plus a moment, even if a grandchild escaped and
holds the output open); output is
capped while it streams, keeping the head and the tail and marking the cut, so memory is
bounded by the cap, never by the program.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butler_cli.api import (
    Classifier,
    Gate,
    ToolSpec,
    Verdict,
    approve,
    coerce_verdict,
    default_title,
    refuse,
)
from butler_cli.tools.paths import default_roots, home_refusal, resolve, root_refusal
from butler_cli.tools.redact import child_env

if TYPE_CHECKING:  # the sandbox is looked for when a command is judged or run, not before
    from butler_cli.tools.sandbox import Sandbox
    from butler_cli.tools.trusted import Trusted

DEFAULT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 3600.0
OUTPUT_CAP = 16 * 1024
READ_CHUNK = 64 * 1024
#: After a kill, how long to wait for the killed process to be reaped.
REAP_S = 0.5

_SCHEMA = {
    "type": "object",
    "properties": {
        "argv": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Program and arguments",
        },
        "cwd": {"type": "string", "description": "Working directory (default: the task's)"},
        "timeout_s": {"type": "number", "description": "Seconds before it is killed (default 60)"},
    },
    "required": ["argv"],
}
_DEFAULT = approve("runs a program on your machine — asking you first")


class HeadTail:
    """Output kept while it streams: the first and the last ``cap // 2`` bytes, and a count."""

    def __init__(self, cap: int = OUTPUT_CAP) -> None:
        self.half = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.half:
                del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        cut = self.total - len(self.head) - len(self.tail)
        tail = self.tail.decode("utf-8", errors="replace")
        if cut <= 0:
            return head + tail
        return f"{head}\n[butler: {cut} bytes of output cut here]\n{tail}"


def cap_output(data: bytes, cap: int = OUTPUT_CAP) -> str:
    """Head and tail kept, the middle cut and marked."""
    kept = HeadTail(cap)
    kept.add(data)
    return kept.text()


class CommandTool:
    def __init__(
        self,
        base_dir: Path,
        home: Path,
        roots: list[Path] | None = None,
        protected: Sequence[Path] = (),
        network: bool = True,
        sandbox: Sandbox | None = None,
        write_roots: Sequence[Path] = (),
        trusted: Sequence[Trusted] = (),
    ) -> None:
        self.base = base_dir
        self.home = home
        self.roots = roots if roots is not None else default_roots(base_dir)
        #: where the program may write: the task's folder unless more are named (issue 31)
        self.write_roots = list(write_roots) or [base_dir]
        self.trusted = list(trusted)
        self.protected = [home, *protected]
        self.network = network
        self._sandbox = sandbox

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            from butler_cli.tools.sandbox import detect_sandbox

            self._sandbox = detect_sandbox()
        return self._sandbox

    def _checked(self, args: dict[str, Any]) -> tuple[list[str], Path, float]:
        argv = args.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError("'argv' must be a non-empty list of strings (no shell is used)")
        if any("\x00" in a for a in argv):
            raise ValueError("'argv' contains a NUL byte")
        cwd = resolve(self.base, args.get("cwd") or str(self.base))
        problem = home_refusal(cwd, self.home) or root_refusal(cwd, self.roots)
        for arg in argv[1:]:  # a path argument into the butler's home (best effort: no shell)
            if problem is None and ("/" in arg or arg.startswith("~")):
                problem = home_refusal(resolve(cwd, arg.split("=", 1)[-1] or "."), self.home)
        if problem:
            raise PermissionError(problem)
        timeout = args.get("timeout_s", DEFAULT_TIMEOUT_S)
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout <= MAX_TIMEOUT_S
        ):
            raise ValueError(
                f"'timeout_s' must be a number of seconds from 0 to {MAX_TIMEOUT_S:.0f}"
            )
        return argv, cwd, float(timeout)

    def guard(self, name: str, args: dict[str, Any]) -> Verdict | None:
        try:
            self._checked(args)
        except (ValueError, PermissionError) as exc:
            return refuse(str(exc))
        return None

    def describe(self, name: str, args: dict[str, Any]) -> str:
        try:
            argv, cwd, _ = self._checked(args)
        except (ValueError, PermissionError):
            return default_title(name, args)  # argv first and whole, even when malformed
        return f"run_command: {shlex.join(argv)} (in {cwd})"

    def unsandboxed(self, policy: Classifier | None) -> Classifier:
        """The policy, except that without a sandbox an ``allow`` becomes an approve: a
        program that would run unconfined always waits for a person."""

        def classify(name: str, args: dict[str, Any]) -> object:
            verdict = coerce_verdict(policy(name, args)) if policy is not None else None
            if self.sandbox.active or (verdict is not None and verdict.decision == "refuse"):
                return verdict
            shown = f"; the policy said: {verdict.reason}" if verdict and verdict.reason else ""
            return approve(  # ask_always: a kept approval never answers for it (nor is offered)
                f"not sandboxed ({self.sandbox.problem}) — this program would run with your "
                f"full rights, so it always asks you{shown}",
                ask_always=True,
            )

        return classify

    def execute(self, name: str, args: dict[str, Any]) -> str:
        argv, cwd, timeout = self._checked(args)  # checked again: the disk may have changed
        full = self.sandbox.wrap(
            argv, cwd, self.write_roots, self.protected, self.network, self.trusted
        )
        env = child_env()
        if self.sandbox.kind == "bubblewrap":
            env["TMPDIR"] = "/tmp"  # its own fresh /tmp; the butler's TMPDIR may be read-only
        try:
            proc = subprocess.Popen(
                full,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise RuntimeError(f"could not start {argv[0]!r}: {exc.strerror or exc}") from exc
        try:
            kept, ended = _read_until(proc, time.monotonic() + timeout)
        except BaseException:  # Ctrl-C: it runs in its own session, so no signal reached it
            _kill_tree(proc)
            raise
        if proc.poll() is None:  # the deadline came first
            _kill_tree(proc)
            return f"killed after {timeout:g} s (timeout)\n{kept.text()}"
        note = ""
        if not ended:  # it exited, but something it started still held the output open
            _kill_tree(proc)
            note = (
                f"\n[butler: a process it started kept the output open; stopped reading "
                f"at the {timeout:g} s timeout]"
            )
        return f"exit status {_exit_status(proc)}\n{kept.text()}{note}"

    def governed(self, policy: Classifier | None) -> Gate:
        spec = ToolSpec("run_command", "Run a program (argv list, no shell).", _SCHEMA, _DEFAULT)
        return Gate(
            [spec],
            self.execute,
            policy=self.unsandboxed(policy),
            describer=self.describe,
            guard=self.guard,
        )


def _read_until(proc: subprocess.Popen[bytes], deadline: float) -> tuple[HeadTail, bool]:
    """Read the output as it streams until end of file or the deadline; True when it ended.

    The pipe is closed either way: nothing waits on it after this returns."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    kept = HeadTail()
    ended = False
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if not selector.select(left):
                continue
            chunk = os.read(fd, READ_CHUNK)
            if not chunk:
                ended = True
                break
            kept.add(chunk)
    proc.stdout.close()
    if ended:
        # still running with its output closed: the caller kills it
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(max(0.0, deadline - time.monotonic()))
    return kept, ended


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """Kill the process group (in the sandbox, bubblewrap takes its PID namespace down with
    it), then reap without waiting long."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(REAP_S)


def _exit_status(proc: subprocess.Popen[bytes]) -> str:
    code = proc.returncode
    return f"{code} (killed by signal {-code})" if code is not None and code < 0 else str(code)
