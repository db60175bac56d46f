"""Time from start to the chat's first prompt (`butler demo`, scripted model, in a real pty),
beside the floor measured in the same run: a Python that imports prompt-toolkit and draws one
prompt in the same pty. Target: at most 1.1x the floor.

Run: python bench/bench_chat.py [--before DIR]  (needs pexpect: pip install -e '.[test]')

``--before DIR`` adds an interleaved row for the butler_cli found in DIR (a ``git worktree`` of
an older commit), put first on PYTHONPATH. The main row uses the caller's PYTHONPATH, so a clean
checkout of the commit being measured can be named the same way.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import pexpect

sys.path.insert(0, os.path.dirname(__file__))
from common import BIN  # noqa: E402

RUNS = 15
FLOOR = "from prompt_toolkit import PromptSession\nPromptSession().prompt('you › ')\n"


def first_prompt(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", timeout=30)
    child.expect("you ›")
    took = time.perf_counter() - start
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="a checkout whose butler_cli to time beside this one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "BUTLER_HOME": home, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
        runs: dict[str, tuple[list[str], dict[str, str]]] = {
            "floor": ([str(BIN / "python"), "-c", FLOOR], env),
            "demo": ([str(BIN / "butler"), "demo"], env),
        }
        if args.before:
            runs["before"] = ([str(BIN / "butler"), "demo"], {**env, "PYTHONPATH": args.before})
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(RUNS):
            for name, (argv, run_env) in runs.items():
                times[name].append(first_prompt(argv, run_env))
    med = {name: statistics.median(t) for name, t in times.items()}
    floor = med["floor"]
    print("| measure | median | ratio to the floor | target |")
    print("|---|---|---|---|")
    print(f"| floor: import prompt-toolkit, draw a prompt | {floor * 1000:.0f} ms | 1.00x | |")
    if "before" in med:
        b = med["before"]
        print(
            f"| `butler demo`, before (`{args.before}`) | {b * 1000:.0f} ms | {b / floor:.2f}x | |"
        )
    o = med["demo"]
    ok = "✓" if o / floor <= 1.1 else "✗"
    print(
        f"| `butler demo`, start to first prompt | {o * 1000:.0f} ms | {o / floor:.2f}x | ≤ 1.1x {ok} |"
    )


if __name__ == "__main__":
    main()
