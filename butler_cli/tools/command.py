"""``run_command``: a governed tool that runs an argv list — never through a shell.

The approval shows the exact argv and working directory; what runs is byte for byte what was
shown. A timeout kills the whole process group. Output is captured and capped, keeping the head
and the tail and marking the cut.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from pathlib import Path
from typing import Any

from butler_cli.core.gate import Gate, Policy, default_title
from butler_cli.core.toolsets import ToolSpec
from butler_cli.core.verdicts import Verdict, approve, refuse
from butler_cli.tools.paths import default_roots, home_refusal, resolve, root_refusal

DEFAULT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 3600.0
OUTPUT_CAP = 16 * 1024

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


def cap_output(data: bytes, cap: int = OUTPUT_CAP) -> str:
    """Head and tail kept, the middle cut and marked."""
    if len(data) <= cap:
        return data.decode("utf-8", errors="replace")
    half = cap // 2
    cut = len(data) - 2 * half
    head = data[:half].decode("utf-8", errors="replace")
    tail = data[-half:].decode("utf-8", errors="replace")
    return f"{head}\n[butler: {cut} bytes of output cut here]\n{tail}"


class CommandTool:
    def __init__(self, base_dir: Path, home: Path, roots: list[Path] | None = None) -> None:
        self.base = base_dir
        self.home = home
        self.roots = roots if roots is not None else default_roots(base_dir)

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
        return f"run_command: {shlex.join(argv)}  (in {cwd})"

    def execute(self, name: str, args: dict[str, Any]) -> str:
        argv, cwd, timeout = self._checked(args)  # checked again: the disk may have changed
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise RuntimeError(f"could not start {argv[0]!r}: {exc.strerror or exc}") from exc
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the whole group: children too
            out, _ = proc.communicate()
            return f"killed after {timeout:g} s (timeout)\n{cap_output(out)}"
        return f"exit status {proc.returncode}\n{cap_output(out)}"

    def governed(self, policy: Policy | None) -> Gate:
        spec = ToolSpec("run_command", "Run a program (argv list, no shell).", _SCHEMA, _DEFAULT)
        return Gate([spec], self.execute, policy=policy, describer=self.describe, guard=self.guard)
