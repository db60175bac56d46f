"""The whole suite's CPU and where it goes (issue 34).

Runs pytest with the given arguments as a child subreaper (every process the suite starts,
orphans included, is reaped here), so the CPU printed is user + sys of the whole pytest
process tree. With ``tests/cpu_account.py`` loaded (``BUTLER_TESTS_CPU``, set here) each test's
CPU — its own processes included — is written per worker; this prints the files and tests that
spent most, and the fixtures they used.

Run: python bench/bench_suite.py [--top N] [-- PYTEST ARGS]  (default: -q -n 2)
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
ROOT = Path(__file__).resolve().parent.parent


def run_suite(args: list[str], folder: Path) -> tuple[float, float, float, int]:
    """(wall, user, sys, exit code) of pytest and every process below it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    env = {**os.environ, "BUTLER_TESTS_CPU": str(folder)}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=ROOT, env=env)
    code = proc.wait()
    wall = time.monotonic() - start
    deadline = time.monotonic() + 60  # orphans (a watchdog, a browser's helpers) end soon after
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.2)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, usage.ru_utime, usage.ru_stime, code


def report(folder: Path, top: int) -> None:
    records = [
        json.loads(line)
        for path in sorted(folder.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    if not records:
        return
    total = sum(r["cpu"] for r in records)
    by_file: dict[str, list[float]] = defaultdict(list)
    for r in records:
        by_file[r["test"].split("::")[0]].append(r["cpu"])
    own = sum(r["worker"] for r in records)
    reaped = sum(r["reaped"] for r in records)
    print(
        f"\n{len(records)} tests, {total:.1f} CPU-s counted per test: the workers' own "
        f"{own:.1f}, processes they reaped {reaped:.1f}, the rest {total - own - reaped:.1f}\n"
    )
    print("| file | tests | CPU-s | share |\n|---|---|---|---|")
    for name, cpus in sorted(by_file.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f"| {name} | {len(cpus)} | {sum(cpus):.1f} | {sum(cpus) / total:.0%} |")
    by_fixture: dict[str, list[float]] = defaultdict(list)
    for r in records:
        for name in r["fixtures"]:
            by_fixture[name].append(r["cpu"])
    print("\n| fixture | tests using it | their CPU-s |\n|---|---|---|")
    for name, cpus in sorted(by_fixture.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f"| {name} | {len(cpus)} | {sum(cpus):.1f} |")
    print(
        "\n| test | CPU-s | the worker's own | reaped by the worker | wall |\n|---|---|---|---|---|"
    )
    for r in sorted(records, key=lambda r: -r["cpu"])[:top]:
        print(f"| {r['test']} | {r['cpu']} | {r['worker']} | {r['reaped']} | {r['wall']} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--keep", help="a folder to keep the per-test records in")
    parser.add_argument("pytest_args", nargs="*")
    ns = parser.parse_args()
    folder = Path(ns.keep or tempfile.mkdtemp(prefix="suite-cpu"))
    wall, user, sys_, code = run_suite(ns.pytest_args or ["-q", "-n", "2"], folder)
    print(
        f"\npytest exit {code}; wall {wall:.1f} s; CPU {user + sys_:.1f} s "
        f"(user {user:.1f} + sys {sys_:.1f}); load average now {os.getloadavg()[0]:.1f}"
    )
    report(folder, ns.top)
    print(f"\nper-test records: {folder}")


if __name__ == "__main__":
    main()
