"""Time from start to the chat's first prompt (`butler demo`, scripted model, in a real pty),
beside `python -c pass` measured in the same run. Target: under 300 ms.

Run: python bench/bench_chat.py  (needs pexpect: pip install -e '.[test]')
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import pexpect

sys.path.insert(0, os.path.dirname(__file__))
from common import BIN  # noqa: E402

RUNS = 15


def first_prompt(home: str) -> float:
    env = {**os.environ, "BUTLER_HOME": home, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
    start = time.perf_counter()
    child = pexpect.spawn(str(BIN / "butler"), ["demo"], env=env, encoding="utf-8", timeout=30)
    child.expect("you ›")
    took = time.perf_counter() - start
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    return took


def python_pass() -> float:
    start = time.perf_counter()
    subprocess.run([str(BIN / "python"), "-c", "pass"], check=True)
    return time.perf_counter() - start


def main() -> None:
    ours, base = [], []
    with tempfile.TemporaryDirectory() as home:
        for _ in range(RUNS):
            ours.append(first_prompt(home))
            base.append(python_pass())
    o, b = statistics.median(ours), statistics.median(base)
    print("| measure | median | baseline `python -c pass` (same run) | target |")
    print("|---|---|---|---|")
    print(
        f"| start to first chat prompt (`butler demo`) | {o * 1000:.0f} ms | {b * 1000:.0f} ms | < 300 ms {'✓' if o < 0.3 else '✗'} |"
    )


if __name__ == "__main__":
    main()
