"""Stand in for `butler` under subprocess: ask the fork server (butler_zygote.py) to run it.

Usage: python -I -S butler_launch.py SOCKET [ARG ...]. The server's child gets this process's
standard streams, working folder and environment; this process exits as the child did (the
same code, or killed by the same signal). Killed itself, it closes the connection and the
server kills the child.

On a pseudo-terminal (pexpect makes this process the leader of a session whose controlling
terminal it is) this process gives the terminal up and the child takes it, in a session of
its own: Ctrl-C, a hang-up and a resize then reach the child's process group from the
terminal, as they reach an exec'd `butler`. A signal sent to this process (pexpect's
``kill``/``terminate``, a test's SIGTERM to `butler serve`) is passed on to the child.
"""

import fcntl
import json
import os
import signal
import socket
import sys
import termios

PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCONT)


def main() -> None:
    path, args = sys.argv[1], sys.argv[2:]
    tty = os.isatty(0) and os.getsid(0) == os.getpid()
    if tty:  # give the terminal up (its foreground group, this one, is sent SIGHUP: ignored)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        fcntl.ioctl(0, termios.TIOCNOTTY)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = {"argv": args, "cwd": os.getcwd(), "env": dict(os.environ), "tty": tty}
    socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
    reader = conn.makefile("rb")
    status = None
    for line in reader:
        answer = json.loads(line)
        if "pid" in answer:
            child = answer["pid"]
            for sig in PASSED_ON:
                signal.signal(sig, lambda s, _f, c=child: os.kill(c, s))
        if "status" in answer:
            status = answer["status"]
            break
    if status is None:
        sys.stderr.write("butler_launch: the fork server went away\n")
        os._exit(70)
    if os.WIFSIGNALED(status):
        for sig in PASSED_ON:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status))


main()
