"""The cost of the command sandbox: `true` started through run_command's real code path
(CommandTool.execute) with bubblewrap, beside the same tool with no sandbox, and beside a bare
subprocess — all in the same run. Then the bounds, once each: how long a call with an escaped
grandchild (`setsid sleep 30 &`, timeout 1 s) takes, and the peak memory of the process
reading 300 MB of output.

Run: python bench/bench_sandbox.py  (prints a Markdown table; see BENCHMARKS.md)
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from butler_cli.tools.command import CommandTool
from butler_cli.tools.sandbox import Sandbox, detect_sandbox

RUNS = 200


def median_ms(fn: Callable[[], object], runs: int = RUNS) -> float:
    fn()  # warm
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    sandbox = detect_sandbox()
    if not sandbox.active:
        sys.exit(f"no sandbox here: {sandbox.problem}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        work, home = root / "work", root / "home"
        work.mkdir()
        home.mkdir()
        args = {"argv": ["true"]}
        boxed = CommandTool(work, home, [work], sandbox=sandbox)
        bare = CommandTool(work, home, [work], sandbox=Sandbox("none", None, "benchmark"))
        rows = [
            ("subprocess.run(['true'])", median_ms(lambda: subprocess.run(["true"], check=True))),
            ("run_command, not sandboxed", median_ms(lambda: bare.execute("run_command", args))),
            (f"run_command, {sandbox.kind}", median_ms(lambda: boxed.execute("run_command", args))),
        ]
        escaped = {"argv": ["sh", "-c", "setsid sleep 30 & echo started"], "timeout_s": 1}
        bounds = [
            (f"escaped grandchild, timeout 1 s, {sandbox.kind}", wall(boxed, escaped)),
            ("escaped grandchild, timeout 1 s, not sandboxed", wall(bare, escaped)),
        ]
        kill_escaped("sleep 30")
    base = rows[1][1]
    print("| how `true` starts | median | beside run_command unsandboxed |")
    print("|---|---|---|")
    for name, ms in rows:
        print(f"| {name} | {ms:.2f} ms | {ms - base:+.2f} ms |")
    print()
    print("| bound | measured |")
    print("|---|---|")
    for name, seconds in bounds:
        print(f"| {name} | {seconds:.2f} s |")
    print(f"| peak RSS reading 300 MB of output | {peak_rss_mb():.0f} MB |")
    print(f"| http_request to a server dripping a byte every 0.5 s, timeout 2 s | {drip():.2f} s |")


def drip() -> float:
    """Wall time of http_request against a loopback server that never finishes its body."""
    import socket
    import threading

    from butler_cli.tools.http import execute

    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n")
        try:
            for _ in range(100):
                conn.sendall(b"x")
                time.sleep(0.5)
        except OSError:
            pass
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/"
    start = time.perf_counter()
    with contextlib.suppress(ConnectionError):
        execute("http_request", {"method": "GET", "url": url, "timeout_s": 2})
    took = time.perf_counter() - start
    server.close()
    return took


def kill_escaped(command: str) -> None:
    """Kill what escaped the unsandboxed run (read from /proc: no procps needed)."""
    import os
    import signal

    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        except OSError:
            continue
        if entry.name.isdigit() and b" ".join(args) == command.encode():
            os.kill(int(entry.name), signal.SIGKILL)


def wall(tool: CommandTool, args: dict[str, object]) -> float:
    start = time.perf_counter()
    tool.execute("run_command", args)
    return time.perf_counter() - start


def peak_rss_mb() -> float:
    """Max RSS of a fresh process running run_command on `head -c 300000000 /dev/zero`."""
    import os

    code = (
        "import pathlib, tempfile; from butler_cli.tools.command import CommandTool; "
        "d = pathlib.Path(tempfile.mkdtemp()); "
        "CommandTool(d, d / 'home', [d]).execute("
        "'run_command', {'argv': ['head', '-c', '300000000', '/dev/zero']})"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_maxrss / 1024


if __name__ == "__main__":
    main()
