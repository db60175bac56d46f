"""Time from start to the chat's first prompt (`butler demo`, and plain `butler` with a config
file naming the same scripted model, in a real pty), beside the floor measured in the same run:
a Python that imports prompt-toolkit and draws one prompt in the same pty. Target: at most 1.1x
the floor.

Run: python bench/bench_chat.py [--before DIR]  (needs pexpect: pip install -e '.[test]')

``--before DIR`` adds an interleaved row for the butler_cli found in DIR (a ``git worktree`` of
an older commit), put first on PYTHONPATH. The main row uses the caller's PYTHONPATH, so a clean
checkout of the commit being measured can be named the same way. ``--runs N``: how many
interleaved rounds (25), each in a shuffled order.

Every checkout is byte-compiled first (``compile_checkouts``) and every command runs once
untimed, as an installed butler is run (pip compiles at install) and as the floor's
prompt-toolkit is: with PYTHONDONTWRITEBYTECODE set, as on this project's machines, each start
compiled the butler's own modules from source (8-20 ms) while the floor's came from bytecode.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time

import pexpect

sys.path.insert(0, os.path.dirname(__file__))
from common import BIN, compile_checkouts  # noqa: E402

RUNS = 25
FLOOR = "from prompt_toolkit import PromptSession\nPromptSession().prompt('you › ')\n"


TICK = os.sysconf("SC_CLK_TCK")


def first_prompt(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds from the start to the first prompt on the screen (the CPU read from
    /proc when the prompt is seen: the chat's build starts after it, on a thread)."""
    start = time.perf_counter()
    child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", timeout=30)
    child.expect("you ›")
    took = time.perf_counter() - start
    with open(f"/proc/{child.pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    return took, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="a checkout whose butler_cli to time beside this one")
    parser.add_argument("--runs", type=int, default=RUNS, help="interleaved rounds")
    args = parser.parse_args()
    compile_checkouts(*([args.before] if args.before else []))
    with (
        tempfile.TemporaryDirectory() as home,
        tempfile.TemporaryDirectory() as configured,
        tempfile.TemporaryDirectory() as before_home,
        tempfile.TemporaryDirectory() as before_configured,
        tempfile.TemporaryDirectory() as before_options,
    ):
        env = {**os.environ, "BUTLER_HOME": home, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
        # plain `butler` as a person who set it up runs it: the model and a provider in a
        # config file (read before the first line), the same scripted demo model
        demo = os.path.join(os.path.dirname(__file__), "..", "butler_cli", "demo", "demo.json")
        for folder in (configured, before_configured):
            with open(os.path.join(folder, "config.toml"), "w", encoding="utf-8") as f:
                f.write(
                    f'model = "scripted:{os.path.abspath(demo)}"\npolicy = "ask"\n'
                    '[providers.openai]\napi_key_env = "MY_OPENAI_KEY"\n'
                )
        plain_env = {**env, "BUTLER_HOME": configured}
        rows: list[tuple[str, list[str], dict[str, str]]] = [
            (
                "floor: import prompt-toolkit, draw a prompt",
                [str(BIN / "python"), "-c", FLOOR],
                env,
            ),
            ("`butler demo`", [str(BIN / "butler"), "demo"], env),
            ("`butler` with a config file", [str(BIN / "butler")], plain_env),
            (
                "`butler chat --model X --policy ask`",
                [str(BIN / "butler"), "chat", "--model", f"scripted:{os.path.abspath(demo)}"]
                + ["--policy", "ask"],
                env,
            ),
        ]
        if args.before:
            # homes of their own: the entry-point scan is kept in the home under a fingerprint
            # of sys.path, so two checkouts sharing one would each miss the other's copy
            rows += [
                (
                    f"{name}, before (`{args.before}`)",
                    argv,
                    {**run_env, "PYTHONPATH": args.before, "BUTLER_HOME": own},
                )
                for (name, argv, run_env), own in zip(
                    rows[1:], (before_home, before_configured, before_options), strict=True
                )
            ]
        for _, argv, run_env in rows:  # untimed: bytecode cached, files in the OS cache
            first_prompt(argv, run_env)
        times: dict[str, list[float]] = {name: [] for name, _, _ in rows}
        cpus: dict[str, list[float]] = {name: [] for name, _, _ in rows}
        order = list(range(len(rows)))
        shuffled = random.Random(14)  # each round in a new order, the same on every run
        for _ in range(args.runs):
            shuffled.shuffle(order)  # no row always runs right after another
            for i in order:
                name, argv, run_env = rows[i]
                took, cpu = first_prompt(argv, run_env)
                times[name].append(took)
                cpus[name].append(cpu)
    med = {name: statistics.median(t) for name, t in times.items()}
    floor = med[rows[0][0]]
    # the least as well: on a shared machine the median moves with the neighbours' load
    low = {name: min(t) for name, t in times.items()}
    base = rows[0][0]

    def paired(series: dict[str, list[float]], name: str) -> float:
        """The median of each round's ratio to the floor's run in the same round."""
        return statistics.median(a / b for a, b in zip(series[name], series[base], strict=True))

    print(
        "| start to first prompt | median | ratio to the floor | least | ratio "
        "| CPU, median | CPU ÷ floor, pair by pair | wall ÷ floor, pair by pair | target |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, took in med.items():
        ratio = took / floor
        target = "" if "floor" in name or "before" in name else "≤ 1.1x " + "✓✗"[ratio > 1.1]
        least = f"{low[name] * 1000:.0f} ms | {low[name] / low[base]:.2f}x"
        cpu = f"{statistics.median(cpus[name]) * 1000:.0f} ms | {paired(cpus, name):.2f}x"
        print(
            f"| {name} | {took * 1000:.0f} ms | {ratio:.2f}x | {least} | {cpu} "
            f"| {paired(times, name):.2f}x | {target} |"
        )


if __name__ == "__main__":
    main()
