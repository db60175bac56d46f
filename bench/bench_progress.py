"""A tool round with the progress shown on a real terminal (a pty), beside the same loop with no
progress (what `--json` runs) and the baseline of bench_loop (the tool called and its result
block made), in the same run. Target: the butler's own time on a terminal ≤ 0.1 ms a round.

`cat` drains the pty in another process, as a terminal would, so reading costs this process
nothing. The scripted model answers at once, so a round is all butler: the spinner shown and
erased around each model call, one line per tool call.

Run: python bench/bench_progress.py [--before DIR]

``--before DIR`` also runs this file against the butler_cli in DIR (a ``git worktree`` of an
older commit, first on PYTHONPATH), just after, and prints its rows too.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_loop import _no_park, baseline_round_cost, tick  # noqa: E402
from common import per_call  # noqa: E402

from butler_cli.core.loop import LoopConfig, LoopObserver, run_loop  # noqa: E402
from butler_cli.core.messages import Message  # noqa: E402
from butler_cli.core.toolsets import FunctionToolset, Toolbox, ToolSpec  # noqa: E402
from butler_cli.providers.scripted import Script, ScriptedProvider  # noqa: E402

ROUNDS = 64


def terminal() -> tuple[io.TextIOWrapper, subprocess.Popen[bytes]]:
    """The writing end of a pty (80x24, xterm), and the `cat` that drains it."""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    drain = subprocess.Popen(
        ["cat"], stdin=master, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    os.close(master)
    return open(slave, "w", encoding="utf-8"), drain  # noqa: SIM115


def round_cost(observer_for: Any) -> float:
    turns = [{"tool_calls": [{"name": "tick", "arguments": {"i": i}}]} for i in range(ROUNDS)]
    script = Script.from_dict({"turns": [*turns, {"text": "done"}]})
    toolbox = Toolbox([FunctionToolset([(ToolSpec("tick", "tick", {"type": "object"}), tick)])])
    config = LoopConfig(max_rounds=ROUNDS)

    def once() -> None:
        provider = ScriptedProvider(Path("bench.json"), script)
        observer: LoopObserver | None = observer_for()
        out = run_loop(provider, toolbox, [Message.user_text("go")], config, _no_park, observer)
        assert out.status == "done" and out.rounds == ROUNDS
        if observer is not None:
            observer.stop()  # type: ignore[attr-defined]  # the turn ends, as the chat does

    return per_call(once, repeat=15, number=8) / ROUNDS


def rows() -> list[tuple[str, float]]:
    os.environ["TERM"] = "xterm-256color"
    os.environ.pop("NO_COLOR", None)
    from rich.console import Console

    from butler_cli.repl.progress import ChatProgress
    from butler_cli.ui.progress import Progress

    file, drain = terminal()
    try:
        console = Console(file=file, highlight=False, soft_wrap=True)
        assert console.is_terminal
        found = [
            ("baseline: the tool and its result block", baseline_round_cost(ROUNDS)),
            ("loop, no progress (as with --json)", round_cost(lambda: None)),
            ("loop + run's progress on a pty", round_cost(lambda: Progress(console))),
            ("loop + the chat's progress on a pty", round_cost(lambda: ChatProgress(console))),
        ]
    finally:
        file.close()
        drain.wait()
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="a checkout whose butler_cli to time too")
    parser.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    found = rows()
    if args.raw:
        for name, seconds in found:
            print(f"{name}\t{seconds}")
        return
    runs = [("now", found)]
    if args.before:
        env = {**os.environ, "PYTHONPATH": args.before}
        out = subprocess.run(
            [sys.executable, __file__, "--raw"], env=env, capture_output=True, text=True, check=True
        ).stdout
        before = [(n, float(s)) for n, s in (line.split("\t") for line in out.splitlines())]
        runs.insert(0, (f"before ({args.before})", before))
    print(f"{ROUNDS} rounds a turn; per round, best of 15.")
    print()
    print("| code | measure | per round | butler's own (minus baseline) | target |")
    print("|---|---|---|---|---|")
    for code, measures in runs:
        base = measures[0][1]
        for name, seconds in measures:
            own = "" if seconds is base else f"{(seconds - base) * 1000:.3f} ms"
            target = ""
            if "pty" in name:
                target = "≤ 0.1 ms " + ("✓" if seconds - base <= 0.0001 else "✗")
            print(f"| {code} | {name} | {seconds * 1000:.3f} ms | {own} | {target} |")


if __name__ == "__main__":
    main()
