"""The `butler` fixture's side of the fork server (butler_zygote.py), without a launcher.

``butler_launch.py`` is a Python of its own started for every run: ~25 ms of CPU, more than
most forked `butler` runs cost themselves (a parked `run` ~35 ms, `pending` ~15 ms). For a run
whose streams are pipes (the ``butler`` fixture: ``subprocess.run`` with ``capture_output``)
the test's process speaks the launcher's protocol itself: it makes the three pipes, hands the
child's ends to the server and reads and writes its own, as ``subprocess.run`` does. The
child is the same real, separate process the launcher would have got; what the test sees is
the same ``CompletedProcess`` (exit code, or ``-N`` for a signal; text decoded and newlines
translated as ``text=True`` does) or ``TimeoutExpired`` with the child killed.
"""

from __future__ import annotations

import contextlib
import json
import locale
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


def _text(data: bytes, encoding: str) -> str:
    """What ``subprocess.run(text=True)`` makes of a stream's bytes."""
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


def run_forked(
    sock: str,
    command: Sequence[str],
    args: Sequence[str],
    *,
    input: str,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([*command, *args], input=input, capture_output=True, text=True, ...)``
    for ``command`` the launcher of the fork server at ``sock``, without starting it."""
    encoding = "utf-8" if sys.flags.utf8_mode else locale.getencoding()
    pending = input.encode(encoding)
    child_in, stdin = os.pipe()
    stdout, child_out = os.pipe()
    stderr, child_err = os.pipe()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(sock)
        request = {"argv": list(args), "cwd": str(cwd), "env": dict(env), "tty": False}
        socket.send_fds(
            conn, [json.dumps(request).encode() + b"\n"], [child_in, child_out, child_err]
        )
    finally:
        for fd in (child_in, child_out, child_err):
            os.close(fd)
    out, err, answers = bytearray(), bytearray(), bytearray()
    pid: int | None = None
    status: int | None = None
    sel = selectors.DefaultSelector()
    os.set_blocking(stdin, False)
    if pending:
        sel.register(stdin, selectors.EVENT_WRITE, "in")
    else:
        os.close(stdin)
    sel.register(stdout, selectors.EVENT_READ, out)
    sel.register(stderr, selectors.EVENT_READ, err)
    sel.register(conn, selectors.EVENT_READ, answers)
    deadline = time.monotonic() + timeout
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                if pid is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired(
                    [*command, *args], timeout, bytes(out) or None, bytes(err) or None
                )
            for key, _ in sel.select(left):
                if key.data == "in":
                    try:
                        sent = os.write(stdin, pending[:65536])
                    except BrokenPipeError:  # the child stopped reading, as communicate() allows
                        sent = len(pending)
                    pending = pending[sent:]
                    if not pending:
                        sel.unregister(stdin)
                        os.close(stdin)
                    continue
                chunk = os.read(key.fd, 65536) if key.fileobj is not conn else conn.recv(65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                key.data.extend(chunk)
                if key.fileobj is conn:
                    *lines, rest = answers.split(b"\n")
                    answers[:] = rest
                    for line in lines:
                        answer = json.loads(line)
                        pid = answer.get("pid", pid)
                        status = answer.get("status", status)
    finally:
        for fileobj in list(sel.get_map().values()):
            with contextlib.suppress(KeyError, ValueError):
                sel.unregister(fileobj.fileobj)
        sel.close()
        conn.close()
        for fd in (stdout, stderr):
            os.close(fd)
        if pending:
            os.close(stdin)
    if status is None:
        raise RuntimeError("the fork server went away before `butler` ended")
    return subprocess.CompletedProcess(
        [*command, *args],
        os.waitstatus_to_exitcode(status),
        _text(bytes(out), encoding),
        _text(bytes(err), encoding),
    )
