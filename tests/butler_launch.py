"""Stand in for `butler` under subprocess: ask the fork server (butler_zygote.py) to run it.

Usage: python -I -S butler_launch.py SOCKET [ARG ...]. The server's child gets this process's
standard streams, working folder and environment; this process exits as the child did (the
same code, or killed by the same signal). Killed itself, it closes the connection and the
server kills the child.
"""

import json
import os
import socket
import sys


def main() -> None:
    path, args = sys.argv[1], sys.argv[2:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = {"argv": args, "cwd": os.getcwd(), "env": dict(os.environ)}
    socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
    reader = conn.makefile("rb")
    status = None
    for line in reader:
        answer = json.loads(line)
        if "status" in answer:
            status = answer["status"]
            break
    if status is None:
        sys.stderr.write("butler_launch: the fork server went away\n")
        os._exit(70)
    if os.WIFSIGNALED(status):
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status))


main()
