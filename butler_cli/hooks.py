"""The ``on_park`` hook: tell someone a task is waiting, without ever touching the task.

A hook is either a command (an argv list, run without a shell, the event as JSON on its
standard input, a scrubbed environment) or a URL the event is POSTed to as JSON. It runs after
the park is on disk, within a timeout; whatever it does — fail, hang, print — is reported as
one line and changes nothing about the park or the task.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
from dataclasses import dataclass
from typing import Any

from butler_cli.core.errors import UsageError

DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True)
class Hook:
    """One hook: ``argv`` to run, or ``url`` to POST to."""

    argv: tuple[str, ...] = ()
    url: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def parse(cls, text: str, timeout: float = DEFAULT_TIMEOUT) -> Hook:
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
            raise UsageError(f"the on-park command cannot be read: {exc}") from exc
        if not argv:
            raise UsageError("the on-park hook is empty: give a command or an http(s):// URL")
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


def park_event(
    park_id: str, task: str, approval: dict[str, str] | None, **extra: Any
) -> dict[str, Any]:
    """What a hook is told: the park's id, task, tool, title and reason — never the arguments
    (they may hold what only the inbox should show, masked)."""
    approval = approval or {}
    return {
        "event": "park",
        "park_id": park_id,
        "task": task,
        "tool": approval.get("tool"),
        "title": approval.get("title"),
        "reason": approval.get("reason"),
        "decide": f"butler resume {park_id} --approve | --deny",
        **extra,
    }


def fire(hook: Hook, event: dict[str, Any]) -> str | None:
    """Run the hook once; None when it succeeded, else one line saying what went wrong."""
    body = json.dumps(event, ensure_ascii=False).encode("utf-8")
    try:
        return _post(hook, body) if hook.url else _run(hook, body)
    except Exception as exc:  # a hook never breaks the caller, whatever it raises
        return f"on-park hook {hook.describe()} failed: {exc}"


def _run(hook: Hook, body: bytes) -> str | None:
    from butler_cli.tools.redact import child_env

    name = hook.describe()
    try:
        proc = subprocess.Popen(
            list(hook.argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=child_env(),
            start_new_session=True,  # its own group: a timeout kills everything it started
            close_fds=True,
        )
    except OSError as exc:
        return f"on-park hook {name} could not start: {exc.strerror or exc}"
    try:
        _, err = proc.communicate(body, timeout=hook.timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return f"on-park hook {name} timed out after {hook.timeout:g} s and was stopped"
    if proc.returncode != 0:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return f"on-park hook {name} exited {proc.returncode}: {tail[0][:200]}"
    return None


def _post(hook: Hook, body: bytes) -> str | None:
    import urllib.error
    import urllib.request

    assert hook.url is not None
    request = urllib.request.Request(
        hook.url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "butler-on-park"},
    )
    try:
        with urllib.request.urlopen(request, timeout=hook.timeout) as response:  # noqa: S310
            status = response.status
    except urllib.error.HTTPError as exc:
        return f"on-park hook {hook.url} answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"on-park hook {hook.url} could not be reached: {reason}"
    if not 200 <= status < 300:
        return f"on-park hook {hook.url} answered HTTP {status}"
    return None
