"""The chat's renderer alone: the 2,000-token answer of bench_stream.py fed to the chat's
progress (``ChatProgress.model_text``) on a real pty, a piece every 0.1 ms (about the pace of a
raw read of the stream), then the turn's end — CPU of this process (every thread: rich's
refresh thread before, the frame timer now), beside rich rendering the whole answer's Markdown
once (the floor: what any Markdown screen of this answer costs), in the same run.

    python bench/bench_render.py [RUNS] [--before DIR]

``--before DIR`` runs the same in a process whose butler_cli is DIR's (first on PYTHONPATH).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_progress import terminal  # noqa: E402
from bench_stream import answer_tokens  # noqa: E402
from common import before_option  # noqa: E402

PACE_S = 0.0001


def measure(runs: int) -> dict[str, float]:
    os.environ["TERM"] = "xterm-256color"
    os.environ.pop("NO_COLOR", None)
    from rich.console import Console

    from butler_cli.repl.progress import ChatProgress
    from butler_cli.ui.markup import markdown

    tokens = answer_tokens()
    file, drain = terminal()
    found: dict[str, list[float]] = {"floor": [], "chat": []}
    try:
        console = Console(file=file, highlight=False, soft_wrap=True, emoji=False)
        for _ in range(runs):
            began = time.process_time()
            console.print(markdown("".join(tokens)))
            found["floor"].append(time.process_time() - began)
            progress = ChatProgress(console)
            began = time.process_time()
            progress.model_started()
            for token in tokens:
                progress.model_text(token)
                until = time.perf_counter() + PACE_S
                while time.perf_counter() < until:  # the pace, without sleeping's slack
                    pass
            progress.stop()
            busy = len(tokens) * PACE_S  # the pacing loop's own CPU, about
            found["chat"].append(time.process_time() - began - busy)
    finally:
        file.close()
        drain.wait()
    return {k: statistics.median(v) for k, v in found.items()}


def main() -> None:
    args, before = before_option(sys.argv[1:])
    runs = int(args[0]) if args else 5
    if args[1:2] == ["--raw"]:
        m = measure(runs)
        print(m["floor"], m["chat"])
        return
    rows = []
    for name, path in [("now", None), *([("before", before)] if before else [])]:
        env = {**os.environ, **({"PYTHONPATH": path} if path else {})}
        out = subprocess.run(
            [sys.executable, __file__, str(runs), "--raw"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd="/",
        ).stdout.split()
        rows.append((name if path is None else f"before (`{path}`)", *map(float, out)))
    print(f"load {os.getloadavg()[0]:.1f}, {runs} runs, medians, CPU of the process\n")
    print(
        "| code | rich renders the whole answer once (floor) | the chat's renderer, streamed | ÷ floor |"
    )
    print("|---|---|---|---|")
    for name, floor, chat in rows:
        print(f"| {name} | {floor * 1000:.0f} ms | {chat * 1000:.0f} ms | {chat / floor:.2f}x |")


if __name__ == "__main__":
    main()
