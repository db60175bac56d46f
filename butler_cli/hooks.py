"""Hooks: tell someone a task is waiting (or ended), without ever touching the task.

A hook is either a command (an argv list, run without a shell, the event as JSON on its
standard input, a scrubbed environment) or a URL the event is POSTed to as JSON. It runs after
the park is on disk, within a timeout; whatever it does — fail, hang, print — is reported as
one line and changes nothing about the park or the task.

Two users: a schedule's own ``--on-park`` hook (:mod:`butler_cli.schedule.runner`), and the
config file's ``[hooks]`` section (:class:`Hooks`: ``on_park``, ``on_done``, ``on_error``),
fired by the app layer after every task report (:mod:`butler_cli.app.run.notify`).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from butler_cli.core.errors import UsageError
from butler_cli.tools.redact import child_env, mask_any, mask_text
from butler_cli.tools.trusted import refusal

DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True)
class Hook:
    """One hook: ``argv`` to run, or ``url`` to POST to."""

    argv: tuple[str, ...] = ()
    url: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def parse(cls, text: str, timeout: float = DEFAULT_TIMEOUT, name: str = "on-park") -> Hook:
        """``http(s)://…`` is a URL; anything else is a command line split into an argv the
        way a shell would split it — but no shell ever runs it (no ``;``, ``|``, ``$(…)``)."""
        text = text.strip()
        if timeout <= 0:
            raise UsageError("the hook's timeout must be more than 0 seconds")
        if text.startswith(("http://", "https://")):
            return cls(url=text, timeout=timeout)
        try:
            argv = tuple(shlex.split(text))
        except ValueError as exc:
            raise UsageError(f"the {name} command cannot be read: {exc}") from exc
        if not argv:
            raise UsageError(f"the {name} hook is empty: give a command or an http(s):// URL")
        return cls(argv=argv, timeout=timeout)

    def to_json(self) -> str:
        return json.dumps({"argv": list(self.argv), "url": self.url, "timeout": self.timeout})

    @classmethod
    def from_json(cls, text: str | None) -> Hook | None:
        if not text:
            return None
        raw = json.loads(text)
        return cls(tuple(raw.get("argv") or ()), raw.get("url"), float(raw["timeout"]))

    def describe(self) -> str:
        return self.url or shlex.join(self.argv)


#: The ``[hooks]`` events, in the order a person meets them, and what each task outcome fires.
EVENTS = ("on_park", "on_done", "on_error")
EVENT_OF_STATUS = {"parked": "on_park", "done": "on_done", "limit": "on_done", "failed": "on_error"}
HOOKS_KEYS = (*EVENTS, "timeout_s")


@dataclass(frozen=True)
class Hooks:
    """The config file's ``[hooks]``: at most one hook per event, one timeout for all."""

    by_event: Mapping[str, Hook] = field(default_factory=dict)

    @classmethod
    def from_table(cls, table: Any) -> Hooks:
        """Check a ``[hooks]`` table. Each event takes an argv list (``["notify-send",
        "butler"]``), an ``http(s)://`` URL, or one command line (split, never a shell);
        ``timeout_s`` is seconds, more than 0. Anything else is a :class:`UsageError`."""
        if not isinstance(table, dict) or set(table) - set(HOOKS_KEYS):
            raise UsageError(
                f'[hooks] takes {", ".join(HOOKS_KEYS)}: on_park = ["notify-send", "butler"] '
                'or on_park = "http://127.0.0.1:8080/topic"'
            )
        timeout = table.get("timeout_s", DEFAULT_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise UsageError("hooks.timeout_s must be a number of seconds, more than 0")
        found: dict[str, Hook] = {}
        for event in EVENTS:
            value = table.get(event)
            if value is None:
                continue
            if isinstance(value, str):
                found[event] = Hook.parse(value, float(timeout), name=f"hooks.{event}")
            elif value and isinstance(value, list) and all(isinstance(a, str) for a in value):
                if not value[0].strip():
                    raise UsageError(f"hooks.{event}: the program to run is empty")
                found[event] = Hook(argv=tuple(value), timeout=float(timeout))
            else:
                raise UsageError(
                    f"hooks.{event} must be a command as a list of strings or an http(s):// URL"
                )
        return cls(found)

    def for_status(self, status: str) -> tuple[str, Hook] | None:
        """The event a task outcome fires and its hook, if one is configured."""
        event = EVENT_OF_STATUS.get(status)
        hook = self.by_event.get(event) if event is not None else None
        return (event, hook) if event is not None and hook is not None else None


def task_event(
    event: str,
    status: str,
    task: str,
    park_id: str | None,
    approval: Mapping[str, str | None] | None,
    conversation: str | None,
    schedule: str | None = None,
    actions: Sequence[Mapping[str, str | None]] = (),
) -> dict[str, Any]:
    """What every hook is told — a ``[hooks]`` one and a schedule's own ``--on-park`` alike:
    the event, the task's status and words, the conversation or the schedule it belongs to;
    for a park its id, tool and title (the first action; ``actions``: the tool and title of
    every one the round waits on, which ``--approve`` answers together) and the exact commands
    that decide it. Never an
    argument value beyond the title, never an error text, never a key."""
    body: dict[str, Any] = {"event": event, "status": status, "task": task}
    if park_id is not None and status == "parked":
        approval = approval or {}
        body.update(
            park_id=park_id,
            tool=approval.get("tool"),
            title=approval.get("title"),
            actions=[{"tool": a.get("tool"), "title": a.get("title")} for a in actions]
            or [{"tool": approval.get("tool"), "title": approval.get("title")}],
            approve=f"butler resume {park_id} --approve",
            deny=f"butler resume {park_id} --deny",
        )
    if conversation is not None:
        body["conversation"] = conversation
    if schedule is not None:
        body["schedule"] = schedule
    return body


def fire(
    hook: Hook,
    event: dict[str, Any],
    label: str = "on-park hook",
    task_folders: Sequence[Path] = (),
) -> str | None:
    """Run the hook once; None when it succeeded, else one line saying what went wrong
    (``label`` names the hook in it). A hook program inside the task's folder (this
    process's, and ``task_folders``: a schedule's) is refused: a sandboxed program may have
    written it. Both pass the one masking step here, whoever fires the
    hook: the event sent (a URL hook sends it off the machine) and the line, which may quote
    what the hook printed, are kept, stored and shown with every known secret ``****``."""
    body = json.dumps(mask_any(event), ensure_ascii=False).encode("utf-8")
    try:
        if hook.url:
            problem = _post(hook, body, label)
        else:
            problem = _run(hook, body, label, [Path.cwd(), *task_folders])
    except Exception as exc:  # a hook never breaks the caller, whatever it raises
        problem = f"{label} {hook.describe()} failed: {exc}"
    return mask_text(problem) if problem is not None else None


#: The variable every hook process carries (with a value new for each run): what it starts
#: inherits it, even a child that left the hook's session (``setsid``), so a timeout finds it.
HOOK_MARK = "BUTLER_HOOK_RUN"


def _run(hook: Hook, body: bytes, label: str, write_roots: Sequence[Path]) -> str | None:
    name = f"{label} {hook.describe()}"
    mark = secrets.token_hex(16)
    env = {**child_env(), HOOK_MARK: mark}
    found = shutil.which(hook.argv[0], path=env.get("PATH"))
    if found is None:
        return f"{name} could not start: {hook.argv[0]} was not found"
    program = os.path.abspath(found)  # what is checked is what runs
    # it runs outside the sandbox, with the person's rights: refused when someone else (a
    # sandboxed program in this task's folder, another user) could have changed it
    problem = refusal(program, write_roots, what=f"the {label}")
    if problem is not None:
        return problem
    try:
        proc = subprocess.Popen(
            [program, *hook.argv[1:]],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own session: a timeout kills everything it started
            close_fds=True,
        )
    except OSError as exc:
        return f"{name} could not start: {exc.strerror or exc}"
    try:
        _, err = proc.communicate(body, timeout=hook.timeout)
    except subprocess.TimeoutExpired:
        _kill_all(proc.pid, mark)
        proc.wait()
        return f"{name} timed out after {hook.timeout:g} s and was stopped"
    if proc.returncode != 0:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return f"{name} exited {proc.returncode}: {tail[0][:200]}"
    return None


def _kill_all(leader: int, mark: str) -> None:
    """SIGKILL the hook's process group, every process in its session, and every process
    carrying its mark (a child that called ``setsid`` or double-forked out of both), again
    until a sweep of ``/proc`` finds none: one started meanwhile is caught by the next."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGKILL)
    needle = f"{HOOK_MARK}={mark}".encode()
    for _ in range(20):
        found = [pid for pid in _pids() if pid != os.getpid() and _belongs(pid, leader, needle)]
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:  # no /proc: the process group above is all that can be done
        return []


def _belongs(pid: int, leader: int, needle: bytes) -> bool:
    """Whether ``pid`` is a live process of the hook's session or carries its mark."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        if fields[0] == b"Z":
            return False  # already dead, waiting for its parent
        if int(fields[3]) == leader:  # the session id
            return True
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return needle in fh.read().split(b"\0")
    except (OSError, IndexError, ValueError):
        return False  # gone, or not ours to read


def _post(hook: Hook, body: bytes, label: str) -> str | None:
    """POST on a thread of its own, waited for at most the timeout: a server that accepts and
    then trickles its answer (each read within the socket timeout) cannot hold the caller."""
    result: list[str | None] = []
    thread = threading.Thread(
        target=lambda: result.append(_post_now(hook, body, label)), name="hook-post", daemon=True
    )
    thread.start()
    thread.join(hook.timeout)
    if not result:  # still running: left behind, its socket timeout ends it
        return f"{label} {hook.url} timed out after {hook.timeout:g} s and was abandoned"
    return result[0]


def _post_now(hook: Hook, body: bytes, label: str) -> str | None:
    import urllib.request  # the network: a hook that runs a command opens none

    assert hook.url is not None
    request = urllib.request.Request(
        hook.url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "butler-hook"},
    )
    try:
        with urllib.request.urlopen(request, timeout=hook.timeout) as response:  # noqa: S310
            status = response.status
    except urllib.request.HTTPError as exc:
        return f"{label} {hook.url} answered HTTP {exc.code}"
    except OSError as exc:  # URLError is one
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):  # the socket's timeout may fire before the join's
            return f"{label} {hook.url} timed out after {hook.timeout:g} s"
        return f"{label} {hook.url} could not be reached: {reason}"
    except Exception as exc:  # the thread must always leave a line behind
        return f"{label} {hook.url} failed: {exc}"
    if not 200 <= status < 300:
        return f"{label} {hook.url} answered HTTP {status}"
    return None
