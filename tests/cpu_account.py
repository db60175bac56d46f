"""Where the suite's CPU goes, test by test: a pytest plugin the conftest loads when
``BUTLER_TESTS_CPU`` names a folder (``bench/bench_suite.py`` sets it).

Most of a test's CPU is spent in processes it starts (a forked or exec'd `butler`, bubblewrap,
Chromium, an MCP server, Synapse), not in the worker. Around each test this reads, from
``/proc``, the CPU of the worker and every live process below it, each with what its reaped
children spent (``cutime``/``cstime``): the difference is the test's own, whether its
processes were reaped by the worker, by the fork server or by one another. A long-lived helper
(the fork server, a shared browser) is counted in the tests that make it work. One JSON line a
test goes to ``<folder>/<worker>.jsonl``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator
from pathlib import Path

import pytest

TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int) -> tuple[float, float, float]:
    """(CPU of ``root`` itself, what its reaped children spent, CPU of ``root`` and every live
    descendant each with what its reaped children spent), in seconds."""
    parent: dict[int, int] = {}
    spent: dict[int, int] = {}
    own = (0, 0)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        spent[pid] = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        if pid == root:
            own = (int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14]))
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += spent.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return own[0] / TICK, own[1] / TICK, total / TICK


class CpuAccount:
    def __init__(self, folder: Path) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        folder.mkdir(parents=True, exist_ok=True)
        self.out = (folder / f"{worker}.jsonl").open("a", encoding="utf-8")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        own0, reaped0, tree0 = tree_cpu(os.getpid())
        wall0 = time.monotonic()
        yield
        own1, reaped1, tree1 = tree_cpu(os.getpid())
        record = {
            "test": item.nodeid,
            "wall": round(time.monotonic() - wall0, 3),
            "cpu": round(tree1 - tree0, 2),
            "worker": round(own1 - own0, 2),
            "reaped": round(reaped1 - reaped0, 2),
            "fixtures": sorted(getattr(item, "fixturenames", ())),
        }
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()


def pytest_configure(config: pytest.Config) -> None:
    folder = os.environ.get("BUTLER_TESTS_CPU")
    if folder:
        config.pluginmanager.register(CpuAccount(Path(folder)), "butler-cpu-account")
