"""A real Synapse homeserver on 127.0.0.1 for the Matrix channel's tests, started once per test
run and shared by every xdist worker.

Synapse lives in a venv of its own (``.ci/run`` installs it at ``.synapse/``; elsewhere
``BUTLER_TEST_SYNAPSE`` names its python). The first worker to need it takes a file lock,
generates a config (SQLite, one loopback listener on a free port, rate limits lifted so a
test's burst of messages is not throttled), starts it and writes its address; the others
read the address. A small watchdog stops it when the pytest run that started it ends.

Tests hold the server *shared* (``flock`` LOCK_SH) while they use it; the one test that
restarts it takes it *exclusively*, so no other test sees it go away.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SECRET = "butler-tests-registration-secret"
RATE = {"per_second": 10000, "burst_count": 10000}
WATCHDOG = """
import os, signal, sys, time
owner, child = int(sys.argv[1]), int(sys.argv[2])
while True:
    time.sleep(0.5)
    try:
        os.kill(owner, 0)
    except OSError:
        break
    try:
        os.kill(child, 0)
    except OSError:
        sys.exit(0)
try:
    os.kill(child, signal.SIGTERM)
except OSError:
    pass
"""


def synapse_python() -> str:
    given = os.environ.get("BUTLER_TEST_SYNAPSE")
    candidates = [given] if given else [str(REPO / ".synapse/bin/python")]
    for c in candidates:
        if c and Path(c).exists():
            return c
    pytest.fail(
        "Synapse is not installed for the Matrix tests: .ci/run installs it "
        "(python3 -m venv .synapse && .synapse/bin/pip install matrix-synapse), or set "
        "BUTLER_TEST_SYNAPSE to a python that has it"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Synapse:
    """The shared homeserver: its folder, URL, and how to (re)start it."""

    folder: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.folder / "pid"

    def start(self) -> None:
        log = open(self.folder / "synapse.out", "ab")  # noqa: SIM115 (the child keeps it)
        proc = subprocess.Popen(
            [synapse_python(), "-m", "synapse.app.homeserver", "-c", "hs.yaml"],
            cwd=self.folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.pid_file.write_text(str(proc.pid))
        owner = os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()
        subprocess.Popen(
            [sys.executable, "-c", WATCHDOG, str(owner), str(proc.pid)],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
        self.wait_ready()

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as res:
                    if res.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        out = (self.folder / "synapse.out").read_text(errors="replace")[-3000:]
        raise AssertionError(f"Synapse did not start within {timeout} s:\n{out}")

    def stop(self) -> None:
        pid = int(self.pid_file.read_text())
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        for _ in range(300):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)

    def restart(self) -> None:
        self.stop()
        self.start()

    def register(self, name: str, password: str) -> str:
        """A new user through the shared-secret admin API (what register_new_matrix_user
        does); returns the user id."""
        url = self.url + "/_synapse/admin/v1/register"
        with urllib.request.urlopen(url, timeout=10) as res:
            nonce = json.loads(res.read())["nonce"]
        body = {"nonce": nonce, "username": name, "password": password, "admin": False}
        body["mac"] = _mac(nonce, name, password)
        req = urllib.request.Request(
            url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=30) as res:
            return str(json.loads(res.read())["user_id"])


def _mac(nonce: str, name: str, password: str) -> str:
    mac = hmac.new(SECRET.encode(), digestmod=hashlib.sha1)
    mac.update(b"\x00".join(p.encode() for p in (nonce, name, password, "notadmin")))
    return mac.hexdigest()


def _configure(folder: Path, port: int) -> None:
    subprocess.run(
        [
            synapse_python(),
            "-m",
            "synapse.app.homeserver",
            "--server-name",
            "localhost",
            "--config-path",
            "hs.yaml",
            "--generate-config",
            "--report-stats=no",
        ],
        cwd=folder,
        check=True,
        capture_output=True,
    )
    # the generated file is YAML; what is appended overrides it (a later key wins in PyYAML)
    text = (folder / "hs.yaml").read_text()
    kept = []
    skip = False
    for line in text.splitlines():
        if line.startswith("listeners:"):
            skip = True
            continue
        if skip and (line.startswith(" ") or line.startswith("-")):
            continue
        skip = False
        if line.startswith("registration_shared_secret"):
            continue
        kept.append(line)
    extra = {
        "listeners": [
            {
                "port": port,
                "bind_addresses": ["127.0.0.1"],
                "type": "http",
                "tls": False,
                "x_forwarded": False,
                "resources": [{"names": ["client"], "compress": False}],
            }
        ],
        "registration_shared_secret": SECRET,
        "rc_message": RATE,
        "rc_login": {"address": RATE, "account": RATE, "failed_attempts": RATE},
        "rc_registration": RATE,
        "rc_joins": {"local": RATE, "remote": RATE},
        "rc_invites": {"per_room": RATE, "per_user": RATE, "per_sender": RATE},
        "rc_admin_redaction": RATE,
        "rc_3pid_validation": RATE,
        "rc_room_creation": RATE,
        "rc_presence": {"per_user": RATE},
        "rc_delayed_event_mgmt": RATE,
        "presence": {"enabled": False},
        "bcrypt_rounds": 4,  # the tests' passwords need no slow hashing
        "url_preview_enabled": False,
        "enable_metrics": False,
        "suppress_key_server_warning": True,
        "trusted_key_servers": [],
    }
    kept += [f"{k}: {json.dumps(v)}" for k, v in extra.items()]
    (folder / "hs.yaml").write_text("\n".join(kept) + "\n")
    log_config = folder / "localhost.log.config"
    if log_config.exists():
        log_config.write_text(log_config.read_text().replace("level: INFO", "level: WARNING"))


@contextmanager
def _locked(path: Path, how: int) -> Iterator[None]:
    with open(path, "a+") as fh:
        fcntl.flock(fh, how)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def shared_synapse(shared_dir: Path) -> Synapse:
    """The run's Synapse, started by whichever worker asks first."""
    owner = os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()
    folder = shared_dir / f"synapse-{owner}"
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / "start.lock", fcntl.LOCK_EX):
        address = folder / "port"
        if address.exists():
            server = Synapse(folder, int(address.read_text()))
            server.wait_ready()
            return server
        port = free_port()
        _configure(folder, port)
        server = Synapse(folder, port)
        server.start()
        address.write_text(str(port))
        return server


@contextmanager
def using(server: Synapse, exclusive: bool = False) -> Iterator[None]:
    """Hold the server for one test: shared, or alone (to restart it)."""
    with _locked(server.folder / "use.lock", fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH):
        server.wait_ready()
        yield
