"""Helpers shared by the benchmarks: timing, interleaved command runs, a sample park."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from butler_cli.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from butler_cli.core.park import Approval, ParkState, RunContext

BIN = Path(sys.executable).parent


def compile_checkouts(*folders: str | Path) -> None:
    """Write the bytecode of every module under ``folders`` (and of this checkout's butler_cli)
    before timing: with PYTHONDONTWRITEBYTECODE set, a checkout never run before would compile
    every module on every run, and a module edited since its .pyc on every run too."""
    import compileall

    import butler_cli

    for folder in (Path(butler_cli.__file__).parent.parent, *folders):
        for sub in ("butler_cli", "policies"):
            if (Path(folder) / sub).is_dir():
                compileall.compile_dir(Path(folder) / sub, quiet=1)


def before_option(args: list[str]) -> tuple[list[str], str | None]:
    """``args`` without ``--before DIR``, and DIR (a checkout of an older commit) or None."""
    if "--before" not in args:
        return args, None
    at = args.index("--before")
    return args[:at] + args[at + 2 :], args[at + 1]


def per_call(fn: Callable[[], object], repeat: int, number: int) -> float:
    """Best-of-``repeat`` mean seconds per call over ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def median_runs(
    commands: dict[str, Sequence[str]], runs: int, env: dict[str, str]
) -> dict[str, float]:
    """Median wall seconds of each command, runs interleaved so machine noise hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    full_env = {**os.environ, **env}
    for _ in range(runs):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(
                argv, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
            )
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def sample_state(park_id: str, n_messages: int) -> ParkState:
    """A park whose conversation has ``n_messages`` messages of realistic size."""
    messages: list[Message] = [Message.user_text("Tidy my notes folder and write a summary")]
    i = 0
    while len(messages) < n_messages - 1:
        call = ToolUseBlock(id=f"c{i}", name="read_file", input={"path": f"notes/{i}.md"})
        messages.append(
            Message(role="assistant", content=[TextBlock(text="Reading the next note."), call])
        )
        messages.append(
            Message(
                role="user",
                content=[ToolResultBlock(tool_use_id=f"c{i}", content="line of a note\n" * 20)],
            )
        )
        i += 1
    final = ToolUseBlock(
        id="w", name="write_file", input={"path": "summary.md", "content": "summary\n" * 10}
    )
    messages.append(Message(role="assistant", content=[final]))
    return ParkState(
        id=park_id,
        created_at="2026-12-03T00:00:00+00:00",
        context=RunContext(task="Tidy my notes", model="scripted:/x.json", policy="ask"),
        messages=messages,
        calls=[final],
        approval=Approval(
            call_id="w", tool="write_file", title='write_file({"path":"summary.md"})', reason="asks"
        ),
        verdicts={"w": {"decision": "approve", "reason": "asks"}},
    )
