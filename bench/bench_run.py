"""`butler run` of one tool round (scripted model: `now`, then an answer) beside the import floor
of our own dependencies (typer, rich.console, pydantic, platformdirs), medians of interleaved
runs in the same run. Target: at most 1.5x the floor.

Run: python bench/bench_run.py [--before DIR]

``--before DIR`` adds an interleaved row for the butler_cli found in DIR (a ``git worktree`` of
an older commit), put first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import BIN, median_runs  # noqa: E402

RUNS = 15
ONE_ROUND = {"turns": [{"tool_calls": [{"name": "now", "arguments": {}}]}, {"text": "done"}]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="a checkout whose butler_cli to time beside this one")
    args = parser.parse_args()
    py, butler = str(BIN / "python"), str(BIN / "butler")
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "one.json"
        script.write_text(json.dumps(ONE_ROUND), encoding="utf-8")
        run = [butler, "run", "--model", f"scripted:{script}", "what time is it?"]
        commands = {
            "floor": [py, "-c", "import typer, rich.console, pydantic, platformdirs"],
            "run": run,
        }
        env = {"BUTLER_HOME": str(Path(tmp) / "home")}
        if args.before:
            # PYTHONPATH is set for every command then: the floor does not import butler_cli,
            # and the current code is reached through a wrapper that drops it first.
            wrapper = (
                "import os, sys; sys.path = [p for p in sys.path if p != os.environ['PYTHONPATH']];"
                "sys.argv = ['butler', *sys.argv[1:]]; from butler_cli.cli.entry import main; main()"
            )
            commands["run"] = [py, "-P", "-c", wrapper, *run[1:]]
            before = (
                "import sys; sys.argv = ['butler', *sys.argv[1:]];"
                "from butler_cli.cli.entry import main; main()"
            )
            commands["before"] = [py, "-P", "-c", before, *run[1:]]
            env["PYTHONPATH"] = args.before
        med = median_runs(commands, RUNS, env)
    floor = med["floor"]
    print("| measure | median | ratio to the floor | target |")
    print("|---|---|---|---|")
    print(
        f"| floor: import typer, rich.console, pydantic, platformdirs | {floor * 1000:.0f} ms | 1.00x | |"
    )
    if "before" in med:
        b = med["before"]
        print(
            f"| `butler run`, one round, before (`{args.before}`) | {b * 1000:.0f} ms | {b / floor:.2f}x | |"
        )
    r = med["run"]
    ok = "✓" if r / floor <= 1.5 else "✗"
    print(f"| `butler run`, one round | {r * 1000:.0f} ms | {r / floor:.2f}x | ≤ 1.5x {ok} |")


if __name__ == "__main__":
    main()
