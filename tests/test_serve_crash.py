"""`butler serve` killed (SIGKILL: no cleanup, no flush) at each step of an inbox decision,
then started again: the action ran at most once, the decision is on record once, and the park
is finished by the restart's recovery or refused cleanly — never run twice. And a power cut
(the round's writes after the decision lost, the boot changed): an approved call without a
result is "outcome unknown", never run again (``store/boot.py``)."""

from __future__ import annotations

import contextlib
import json
import signal
import urllib.error
from pathlib import Path
from typing import Any

import pytest
from serve_support import (  # noqa: F401 (a fixture)
    eventually,
    park_writing,
    served_fixture,
    start_serve,
)

from butler_cli.store.faults import CRASH_ENV
from butler_cli.store.parks import ParkStore

MARK = "changed by the test after the crash"

# step → (out.txt after the crash, out.txt after the restart's recovery)
STEPS = {
    "decision-written": (None, "v1"),  # recovery runs it, once
    "action-started": (None, None),  # may have run: outcome unknown, never run again
    "action-ran": ("v1", MARK),
    "round-resolved": ("v1", MARK),
    "park-retired": ("v1", MARK),
}


def parked_write(butler: Any, script: Any) -> str:
    return park_writing(butler, script, "out.txt", content="v1")


def killed_while_deciding(home: Path, workdir: Path, park_id: str, step: str) -> None:
    """Approve ``park_id`` in a `serve` that kills itself at ``step``."""
    s = start_serve(home, workdir, "--no-scheduler", **{CRASH_ENV: step})
    with contextlib.suppress(urllib.error.URLError, ConnectionError):
        s.decide(park_id, "approve")  # the server dies while answering
    s.proc.wait(timeout=60)
    assert s.proc.returncode == -signal.SIGKILL, "".join(s.lines)


def decisions_audited(home: Path, park_id: str) -> int:
    lines = (home / "audit.jsonl").read_text().splitlines()
    return sum(1 for x in lines if '"event":"decision"' in x and park_id in x)


def status_of(butler: Any, park_id: str) -> str:
    return str(json.loads(butler("show", park_id, "--json").stdout)["status"])


def restart_and_settle(home: Path, workdir: Path, butler: Any, park_id: str) -> Any:
    """Start `serve` again: its recovery continues a park left decided; wait until the park
    is finished, then try to decide it once more from the page (refused)."""
    s = start_serve(home, workdir, "--no-scheduler")
    try:
        eventually(lambda: status_of(butler, park_id) == "resolved")
        status, answer = s.decide(park_id, "approve")
        assert status == 409 and "already decided" in answer["message"], answer
    finally:
        s.stop()
    return s


@pytest.mark.parametrize("step", sorted(STEPS))
def test_serve_killed_at_each_step_of_a_decision(
    step: str, butler: Any, script: Any, workdir: Path, butler_home: Path
) -> None:
    after_crash, after_recovery = STEPS[step]
    park_id = parked_write(butler, script)
    killed_while_deciding(butler_home, workdir, park_id, step)
    out = workdir / "out.txt"
    assert (out.read_text() if out.exists() else None) == after_crash
    if out.exists():
        out.write_text(MARK)  # any second run of the action would overwrite this
    restart_and_settle(butler_home, workdir, butler, park_id)
    assert (out.read_text() if out.exists() else None) == after_recovery
    assert decisions_audited(butler_home, park_id) == 1
    ledger = (butler_home / "decided.jsonl").read_text()
    assert ledger.count(f'"park":"{park_id}","event":"decided"') == 1
    assert not list((butler_home / "parks").glob(f".{park_id}.json.*.tmp"))


def test_a_power_cut_after_the_decision_never_runs_the_call_again(
    butler: Any, script: Any, workdir: Path, butler_home: Path
) -> None:
    """The round's writes after the decision are not fsynced. A power cut could lose them
    all: the park reads as the decision left it — no call started, no result — though the
    action ran. Simulated: serve killed once the write ran, then the park put back as the
    decision wrote it, in another boot. The restart must not write again."""
    park_id = parked_write(butler, script)
    killed_while_deciding(butler_home, workdir, park_id, "action-ran")
    out = workdir / "out.txt"
    assert out.read_text() == "v1"
    out.write_text(MARK)
    store = ParkStore(butler_home)
    state = store.load(park_id)
    assert state.status == "decided" and state.boot, "the decision records its boot"
    state.started, state.results = [], {}  # what the decision's own write held
    state.boot = "00000000-0000-0000-0000-000000000000"  # ...read after a reboot
    store.save(state)
    restart_and_settle(butler_home, workdir, butler, park_id)
    assert out.read_text() == MARK  # it did not run twice
    shown = json.loads(butler("show", park_id, "--json").stdout)
    assert "Outcome unknown" in json.dumps(shown["results"])
