"""A real `butler serve` in a subprocess on 127.0.0.1 (a free port), and plain HTTP to it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import butler_command, call
from fake_llm import POLL


@dataclass
class Served:
    proc: subprocess.Popen[str]
    url: str  # the printed URL, token included
    port: int
    token: str
    lines: list[str]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(
        self,
        path: str,
        *,
        data: dict[str, str] | None = None,
        token: str | None = "",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, str]:
        """(status, body). ``token`` "" means this server's; None sends none."""
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token or self.token}"
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        req = urllib.request.Request(self.base + path, data=body, headers=sent)
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                return res.status, res.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def csrf(self) -> str:
        _, page = self.request("/")
        found = re.search(r"name='csrf-token' content='([^']+)'", page)
        assert found, page[:500]
        return found.group(1)

    def decide(self, park_id: str, decision: str, note: str = "") -> tuple[int, dict[str, Any]]:
        status, body = self.request(
            f"/park/{park_id}/decide",
            data={"decision": decision, "note": note},
            headers={"X-CSRF-Token": self.csrf()},
        )
        return status, json.loads(body)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> str:
        """Signal the server and wait for it; the rest of its output."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        out, _ = self.proc.communicate(timeout=timeout)
        return out


def park_writing(
    butler: Any,
    script: Any,
    name: str,
    answer: str = "written",
    *,
    content: str = "hello",
    task: str | None = None,
) -> str:
    """A park whose one action writes ``content`` to ``name`` in the work folder; the task
    (``write NAME`` unless given) answers ``answer``."""
    turns = [
        {"tool_calls": [call("write_file", "c1", path=name, content=content)]},
        {"text": answer},
    ]
    ran = butler("run", "--model", script(*turns), task or f"write {name}", "--json")
    assert ran.returncode == 3, ran.stderr
    return str(json.loads(ran.stdout.splitlines()[0])["park_id"])


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that keeps the test's output clean."""

    def log_message(self, *args: object) -> None:
        pass


def loopback_server(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """A real HTTP server on a free 127.0.0.1 port, serving on a thread of its own (stop it
    with ``shutdown()`` then ``server_close()``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(POLL,), daemon=True).start()
    return server


def eventually(check: Callable[[], bool], timeout: float = 30) -> None:
    """Wait for ``check`` (a decision's task may still be running on the server's thread)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s: {check}")
        time.sleep(0.05)


def start_serve(home: Path, cwd: Path, *args: str, **env: str) -> Served:
    proc = subprocess.Popen(
        [*butler_command(), "serve", "--port", "0", *args],
        cwd=cwd,
        env={**os.environ, "BUTLER_HOME": str(home), "NO_COLOR": "1", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        found = re.search(r"(http://[^/\s]+:(\d+)/\?token=(\S+))", line)
        if found:
            return Served(proc, found.group(1), int(found.group(2)), found.group(3), lines)
    proc.wait(timeout=10)
    raise AssertionError(f"butler serve printed no URL: {''.join(lines)}")


@pytest.fixture(name="served")
def served_fixture(butler_home: Path, workdir: Path) -> Any:
    """The ``served`` fixture (import ``served_fixture`` into a test module): start `butler serve` on this test's home and work folder (``served(*args)``); every
    server started is killed at the end if it still runs."""
    started: list[Served] = []

    def start(*args: str) -> Served:
        s = start_serve(butler_home, workdir, *args)
        started.append(s)
        return s

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.communicate(timeout=10)
