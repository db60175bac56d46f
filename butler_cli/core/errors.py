"""One error family for the whole butler.

Every error the butler raises on purpose is a :class:`ButlerError` with a machine-readable
``code`` and the :class:`ExitCode` the CLI should end with. The CLI turns them into one line
in exactly one place (``butler_cli.cli.entry``, worded by ``butler_cli.cli.failure``); nothing
else prints them.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Literal


class ExitCode(IntEnum):
    """Process exit codes (see the README). Several apply → USAGE, FAILED, LIMIT, PARKED."""

    OK = 0
    FAILED = 1
    USAGE = 2
    PARKED = 3
    LIMIT = 4
    UNRESUMABLE = 5
    #: Ctrl-C outside the chat (128 + SIGINT, as a shell reports it).
    INTERRUPTED = 130


#: The exit code of one task's outcome (its report's status): `run`'s, `resume`'s and
#: `schedule run`'s, and the ``exit_code`` of a stream's last event.
STATUS_EXIT = {
    "done": ExitCode.OK,
    "failed": ExitCode.FAILED,
    "parked": ExitCode.PARKED,
    "limit": ExitCode.LIMIT,
}


class ButlerError(Exception):
    """Base of every deliberate butler error: a code, a one-line message, an exit code."""

    code: str = "butler_error"
    exit_code: ExitCode = ExitCode.FAILED
    #: Lines that say what to do about it, shown under the error's line (never in its JSON).
    directions: tuple[str, ...] = ()

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else self.code


class UsageError(ButlerError):
    """Bad input or configuration: nothing ran."""

    code = "usage"
    exit_code = ExitCode.USAGE


class GateMoved(ButlerError):
    """A folder holding the butler's own files (home, config, policy, keys) was moved or
    replaced while a task ran: the butler stops rather than act on files it never checked."""

    code = "gate_moved"


class Untrusted(ButlerError):
    """A program or file the butler would run or load outside the sandbox could have been
    changed by someone else (a sandboxed program, another user): refused, like ssh's
    ``StrictModes`` (issue 31)."""

    code = "untrusted"


class ToolsetError(UsageError):
    """A toolset or gate was built wrong (spec G1, G5): raised before any model call."""

    code = "toolset"


class PolicyLoadError(UsageError):
    """A policy could not be found, imported or validated."""

    code = "policy_load"


class ModelError(ButlerError):
    """The model (provider) could not answer; the task fails."""

    code = "model"
    exit_code = ExitCode.FAILED


#: Why a park cannot be resumed, as far as the words for it go.
ParkProblem = Literal["decided", "tampered", "unresumable"]
#: Someone decided the park (or is deciding it now).
DECIDED: ParkProblem = "decided"
#: The file was edited, or signed with another key: nobody decided it.
TAMPERED: ParkProblem = "tampered"
#: Anything else (corrupt, unknown version, an unreadable ledger…).
UNRESUMABLE: ParkProblem = "unresumable"


class ParkError(ButlerError):
    """A park cannot be resumed: decided, tampered with, corrupt, locked or of unknown version.
    ``kind`` says which when it matters to the words (the inbox's "already decided" is for
    :data:`DECIDED` only); ``code`` stays ``park`` for scripts."""

    code = "park"
    exit_code = ExitCode.UNRESUMABLE

    def __init__(
        self, message: str, *, code: str | None = None, kind: ParkProblem = UNRESUMABLE
    ) -> None:
        super().__init__(message, code=code)
        self.kind = kind


class NoModel(UsageError):
    """No model was chosen (no flag, variable or config file names one); ``directions`` say
    how to choose one (:func:`butler_cli.app.config.first_model.no_model`)."""

    code = "no_model"

    def __init__(self, message: str, directions: tuple[str, ...]) -> None:
        super().__init__(message)
        self.directions = directions


class ParkNotFound(UsageError):
    """No park matches the id (or prefix) given."""

    code = "park_not_found"


class StorageError(ButlerError):
    """A state file could not be written (a full disk, a permission, a read-only file system).

    Raised only after the half-written temp file is removed: the old file is untouched."""

    code = "storage"
    exit_code = ExitCode.FAILED


class ToolUnavailable(ButlerError):
    """The tool an approval is for cannot run now (its MCP server is gone or fails to start):
    the decision is not recorded and the park stays pending, to be resumed again."""

    code = "tool_unavailable"
    exit_code = ExitCode.FAILED
