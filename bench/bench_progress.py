"""A tool round with the progress shown on a real terminal (a pty), beside the same loop with no
progress (what `--json` runs) and the baseline of bench_loop (the tool called and its result
block made), in the same run. Target: the butler's own time on a terminal ≤ 0.1 ms a round.

`cat` drains the pty in another process, as a terminal would, so reading costs this process
nothing. The scripted model answers at once, so a round is all butler: the spinner shown and
erased around each model call, one line per tool call.

Also (issue 34) a round in a real `run` on a terminal: the session's own toolbox (masking, the
gate's watch over the folders of a real home, config and keys; ``open_session``) calling a
built-in read-only tool (``now``: no watch after it) and a benign tool the butler cannot vouch
for (``tick`` given the session's watch: the watch runs after it, as after any plug-in's,
server's or moving tool).

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
import tempfile
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


def ticking() -> Toolbox:
    return Toolbox([FunctionToolset([(ToolSpec("tick", "tick", {"type": "object"}), tick)])])


def session_toolboxes(root: Path) -> tuple[Toolbox, Toolbox]:
    """The toolbox a real `run` builds (``open_session``: the built-ins, masking, the gate's
    watch), and a masking toolbox of ``tick`` under that same watch, run after every call."""
    from butler_cli.app.config.options import RunOptions
    from butler_cli.app.run.session import open_session
    from butler_cli.tools.masking import MaskingToolbox

    (root / "home").mkdir()
    (root / "plan.json").write_text('{"turns": [{"text": "done"}]}')
    model = f"scripted:{root / 'plan.json'}"
    session = open_session(RunOptions(model=model), cwd=root, home=root / "home")
    real = session.toolbox
    watched = MaskingToolbox(ticking().toolsets)
    if hasattr(real, "watch"):  # issue 34: the watch runs after calls not declared ours + read-only
        watched.watch = real.watch
    else:  # before: after every call
        watched.after = real.after  # type: ignore[attr-defined]
    return real, watched


def round_cost(observer_for: Any, toolbox: Toolbox | None = None, name: str = "tick") -> float:
    turns = [{"tool_calls": [{"name": name, "arguments": {}}]} for i in range(ROUNDS)]
    script = Script.from_dict({"turns": [*turns, {"text": "done"}]})
    toolbox = toolbox or ticking()
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
    tmp = tempfile.TemporaryDirectory()
    try:
        console = Console(file=file, highlight=False, soft_wrap=True)
        assert console.is_terminal
        real, watched = session_toolboxes(Path(tmp.name))
        found = [
            ("baseline: the tool and its result block", baseline_round_cost(ROUNDS)),
            ("loop, no progress (as with --json)", round_cost(lambda: None)),
            ("loop + run's progress on a pty", round_cost(lambda: Progress(console))),
            ("loop + the chat's progress on a pty", round_cost(lambda: ChatProgress(console))),
            (
                "a real run's round on a pty: `now` through the session's toolbox",
                round_cost(lambda: Progress(console), real, "now"),
            ),
            (
                "a real run's round on a pty: a tool under the session's gate watch",
                round_cost(lambda: Progress(console), watched),
            ),
        ]
    finally:
        file.close()
        drain.wait()
        tmp.cleanup()
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
