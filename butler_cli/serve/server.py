"""`butler serve`: one long-running process — the scheduler on a thread, the inbox on uvicorn.

Start: parks a stopped server left decided but unfinished are continued (the journal makes
that exactly-once), runs it left ``running`` are marked ``interrupted``, and schedules missed
while nothing ran get one catch-up run each. Stop (SIGTERM, Ctrl-C): uvicorn stops taking
requests; a scheduled run or a decision in flight finishes (or parks) before the process
exits; nothing half-done is left behind, and a restart picks up from the files.
"""

from __future__ import annotations

import errno
import ipaddress
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import uvicorn

from butler_cli.app.config.config import load_config
from butler_cli.app.parks.door import Answer
from butler_cli.app.parks.parks import decided_parks
from butler_cli.app.run.session import Sessions
from butler_cli.app.views.keys import key_value
from butler_cli.core.errors import UsageError
from butler_cli.core.notices import notice
from butler_cli.schedule.runner import Finished, Scheduler
from butler_cli.schedule.store import ScheduleStore
from butler_cli.serve.app import Settings, create_app
from butler_cli.serve.decide import Decider, Told
from butler_cli.serve.matrix.settings import matrix_settings

if TYPE_CHECKING:
    from butler_cli.serve.matrix.channel import Channel


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        hint = ""
        if exc.errno == errno.EADDRINUSE:
            hint = (
                " (another program, perhaps another `butler serve`, has it); "
                "--port 0 takes any free port"
            )
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}{hint}") from exc
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def exposure_warning(host: str) -> str:
    return (
        f"WARNING — listening on {host}, not only on this machine. Anyone who can "
        "reach this address and has the token can read every parked action (its arguments "
        "whole, secrets masked) and approve or deny it. The connection is plain HTTP: the "
        "token crosses the network unencrypted."
    )


def serve(
    home: Path,
    host: str,
    port: int,
    *,
    expose: bool,
    scheduler: bool = True,
    say: Callable[[str], None],
) -> None:
    """Run until SIGTERM or Ctrl-C. ``say`` shows one line of the server's log (the command
    prints it on stdout, masked and neutralised); a warning is a notice (stderr)."""
    emit = say

    if not is_loopback(host) and not expose:
        raise UsageError(
            f"{host} is not a loopback address: the inbox would be reachable from other "
            "machines (every parked action, and approve/deny). Pass --expose to do that "
            "knowingly, or leave --host at 127.0.0.1"
        )
    sock = bind(host, port)
    settings = Settings(home, host, sock.getsockname()[1], exposed=not is_loopback(host))
    if settings.exposed:
        notice(exposure_warning(host))
    sessions = Sessions(home)  # one per recorded context, kept across clicks and ticks
    decider = Decider(home, sessions, say=emit)
    app = create_app(settings, decider)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, timeout_graceful_shutdown=5, lifespan="on"
    )
    server = _Server(config)

    stop = threading.Event()
    threads: list[threading.Thread] = []
    if scheduler:

        def finished(done: Finished) -> None:
            park = f" (park {done.park_id})" if done.park_id else ""
            why = f": {done.text}" if done.status == "skipped" else ""
            emit(f"schedule {done.job.id}: {done.status}{park} — {done.job.task}{why}")
            if done.hook_problem:
                emit(f"butler: {done.hook_problem}")

        sched = Scheduler(
            ScheduleStore(home),
            on_finished=finished,
            sessions=sessions,
            on_problem=lambda problem: emit(f"butler: {problem}"),
        )
        threads.append(threading.Thread(target=sched.serve, args=(stop,), name="scheduler"))
    channel = _matrix_channel(home, decider, emit)
    if channel is not None:
        threads.append(threading.Thread(target=channel.run, args=(stop,), name="matrix"))
    _recover(home, decider, emit)
    for t in threads:
        t.start()
    emit(f"butler inbox: {settings.url()}")
    emit("Ctrl-C or SIGTERM stops it; a run in flight finishes or parks first.")
    try:
        server.run(sockets=[sock])
    finally:
        stop.set()
        emit("butler serve: stopping — letting runs in flight finish or park…")
        previous = signal.signal(signal.SIGTERM, lambda *_: emit("still finishing a run…"))
        try:
            for t in threads:
                t.join()
            decider.join()
            sessions.close()
        finally:
            signal.signal(signal.SIGTERM, previous)
        sock.close()
        emit("butler serve: stopped")


class _Server(uvicorn.Server):
    """uvicorn re-raises the stopping signal once it has shut down, which would end the
    process before the runs in flight finish: here a signal only stops the serving."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        self.should_exit = True


def _matrix_channel(home: Path, decider: Decider, emit: Callable[[str], None]) -> Channel | None:
    """The Matrix room (``[matrix]`` in the config), or None when none is configured. Its
    decisions go through the inbox's one door, exactly as a click does (never "keep")."""
    ms = matrix_settings(load_config().sections.get("matrix", {}), key_value, Path.cwd())
    if ms is None:
        return None
    try:
        from butler_cli.serve.matrix.channel import Channel  # the client, only when configured
    except ImportError as exc:
        raise UsageError(
            f"[matrix] needs the Matrix client library ({exc.name}): pip install "
            "'butler-cli[matrix]'"
        ) from exc

    def door(park_id: str, answer: Answer) -> Told:
        return decider.submit(park_id, answer)

    return Channel(ms, home, door, emit)


def _recover(home: Path, decider: Decider, emit: Callable[[str], None]) -> None:
    """Parks decided but not finished (a server or a resume stopped mid-way) are continued
    under their recorded decision — on a thread, as a decision from the page is."""
    for park_id in decided_parks(home):
        emit(f"continuing park {park_id}, decided before a stop")
        decider.submit(park_id, Answer())
