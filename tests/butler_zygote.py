"""A fork server for the test suite: `butler` started by fork instead of exec.

Most of the suite's time went to starting `butler` in a subprocess over a thousand times, each
one importing typer, rich, pydantic and butler's own modules again. This server imports them
once and forks a child per request; the child is a real, separate process that takes the
caller's argv, environment, working folder and standard streams (passed as file descriptors),
runs the same ``butler_cli.cli.entry.main`` the installed console script runs, and exits with
its code. ``butler_launch.py`` is the caller's side: a tiny process that stands in for
``butler`` under ``subprocess.run``, so the test sees the same exit code, pipes and timeouts.

The ``butler`` fixture and ``spawn_butler`` (a real pseudo-terminal, tests/conftest.py) use it;
tests about what starting the real script imports and the scripts that call ``butler`` from a
shell still exec the installed script. ``BUTLER_TESTS_EXEC=1`` makes both exec it everywhere.
On a terminal, the child becomes the leader of a new session with the terminal as its
controlling one (``tty`` in the request): Ctrl-C and SIGWINCH reach it as after exec.

Protocol, one connection a run: the launcher sends one JSON line (argv, cwd, env) with its fds
0, 1, 2 attached (SCM_RIGHTS); the server forks, and answers ``{"pid"}`` then, when the child
ends, ``{"status"}`` (a wait status). If the launcher goes away first (a test's timeout killed
it), the child is killed. The server is single-threaded (a selector over the connections and
each child's pidfd), so forking is safe.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import io
import json
import os
import selectors
import signal
import socket
import sys
import termios
import threading
import traceback
from typing import Any

PRELOAD = (
    "butler_cli.cli.entry",
    "butler_cli.cli.main",
    "butler_cli.app.run.butler",
    "butler_cli.core.loop",
    "butler_cli.core.park",  # the loop no longer loads it (nor pydantic) until a round parks
    "butler_cli.providers.scripted",
    "butler_cli.tools.files",
    "butler_cli.tools.command",
    "rich.console",
    "rich.markdown",
    # the remote models' adapters and their HTTP client: a test against the fake OpenAI or
    # Anthropic server would import them in every run (they read no key at import)
    "butler_cli.providers.remote.openai_chat",
    "butler_cli.providers.remote.anthropic_messages",
)


def main() -> None:
    path = sys.argv[1]
    bin_dir = sys.argv[2]
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    with contextlib.suppress(ImportError):  # every command's module (they load lazily)
        from butler_cli.cli.commands import COMMANDS

        for entry in COMMANDS.values():
            __import__(entry.module)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    sel = selectors.DefaultSelector()
    sel.register(server, selectors.EVENT_READ, ("accept", None))
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        for key, _ in sel.select():
            kind, data = key.data
            if kind == "accept":
                conn, _ = server.accept()
                try:
                    child = _start(conn, server, sel, bin_dir)
                except Exception:  # a broken request ends that connection, not the server
                    conn.close()
                    continue
                pidfd = os.pidfd_open(child)
                sel.register(conn, selectors.EVENT_READ, ("gone", (child, pidfd)))
                sel.register(pidfd, selectors.EVENT_READ, ("exit", (child, conn)))
            elif kind == "gone":  # the launcher closed its end: kill the child
                child, _pidfd = data
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)
                sel.unregister(key.fileobj)
            elif kind == "exit":
                child, conn = data
                _, status = os.waitpid(child, 0)
                sel.unregister(key.fileobj)
                os.close(key.fd)
                with contextlib.suppress(KeyError, ValueError):
                    sel.unregister(conn)
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps({"status": status}).encode() + b"\n")
                conn.close()


def _start(conn: socket.socket, server: socket.socket, sel: Any, bin_dir: str) -> int:
    buf = b""
    fds: list[int] = []
    while not buf.endswith(b"\n"):
        data, got, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
        if not data:
            raise ConnectionError("the launcher went away")
        buf += data
        fds += got
    request = json.loads(buf)
    if len(fds) != 3:
        raise ValueError("three file descriptors expected")
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        sel.close()
        server.close()
        conn.close()
        _run_child(request, fds, bin_dir)
    for fd in fds:
        os.close(fd)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return pid


def _run_child(request: dict[str, Any], fds: list[int], bin_dir: str) -> None:
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        # as after exec: nothing but the three streams (not the other runs' connections and
        # pidfds the server holds, which a sibling would otherwise keep open)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        if request.get("tty"):  # the launcher gave its terminal up: a session of our own
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        for sig in (signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as CPython sets it at start
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:] = [bin_dir, *extra, *[p for p in sys.path[1:] if p not in extra]]
        sys.argv = [os.path.join(bin_dir, "butler"), *request["argv"]]
        _fresh_streams()
        code = _call_main()
    except BaseException:  # noqa: BLE001 - the child must always exit here
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        os._exit(code)


def _fresh_streams() -> None:
    """Standard streams as CPython makes them at start, on the fds just received."""

    def wrap(fd: int, mode: str, errors: str) -> io.TextIOWrapper:
        tty = os.isatty(fd)
        raw = io.FileIO(fd, mode, closefd=False)
        buffered: Any = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
        return io.TextIOWrapper(
            buffered,
            encoding="utf-8",
            errors=errors,
            line_buffering=tty or fd == 2,
            write_through=fd == 2,
        )

    sys.stdin = sys.__stdin__ = wrap(0, "r", "strict")
    sys.stdout = sys.__stdout__ = wrap(1, "w", "strict")
    sys.stderr = sys.__stderr__ = wrap(2, "w", "backslashreplace")


def _call_main() -> int:
    from butler_cli.cli.entry import main as butler_main

    code = 0
    try:
        butler_main()
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = 130
    except BaseException:  # noqa: BLE001 - as the interpreter would: a traceback and 1
        traceback.print_exc()
        code = 1
    # the interpreter's own shutdown: wait for threads, then the exit handlers
    with contextlib.suppress(Exception):
        threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return code


if __name__ == "__main__":
    main()
