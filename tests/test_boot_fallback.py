"""Red team on the inbox decision's durability (issue 34, store/boot.py): where this boot's
id cannot be read, a decided round must take the fully fsynced path — no boot recorded in the
park (so no later reader takes its unsynced writes for exact), every write of the round
synced. Through the installed `butler`, under real bubblewrap (the boot id hidden by a tmpfs
over /proc/sys/kernel/random) and strace counting the syncs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import butler_exe, call

pytestmark = pytest.mark.skipif(
    not (shutil.which("strace") and os.path.exists("/usr/bin/bwrap")), reason="strace, bwrap"
)
HIDE_BOOT = ["/usr/bin/bwrap", "--dev-bind", "/", "/", "--tmpfs", "/proc/sys/kernel/random"]


def resumed_syncs(home: Path, workdir: Path, script, tmp_path: Path, hide: bool) -> tuple[int, str]:
    """Park a write, approve it (the boot id hidden or not) under strace: the fsync and
    fdatasync calls made on the park and the ledger, and the finished park file's text."""
    env = {**os.environ, "BUTLER_HOME": str(home), "NO_COLOR": "1"}
    model = script(
        {"tool_calls": [call("write_file", "w1", path="out.txt", content="v1")]}, {"text": "k"}
    )
    ran = subprocess.run(
        [butler_exe(), "run", "--model", model, "write", "--json"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ran.returncode == 3, ran.stdout + ran.stderr
    pid = json.loads(ran.stdout.splitlines()[0])["park_id"]
    trace = tmp_path / f"trace-{pid}"
    strace = ["strace", "-f", "-qq", "-y", "-e", "trace=fsync,fdatasync", "-o", str(trace)]
    done = subprocess.run(
        [*(HIDE_BOOT if hide else []), *strace, butler_exe(), "resume", pid, "--approve"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = trace.read_text().splitlines()
    # the park's and the ledger's (the databases' are SQLite's own business)
    syncs = sum(1 for line in lines if "sync(" in line and ("/parks" in line or "decided" in line))
    return syncs, (home / "parks" / "done" / f"{pid}.json").read_text()


def test_without_a_boot_id_every_write_of_the_round_is_synced(
    butler_home: Path, workdir: Path, script, tmp_path: Path
) -> None:
    hidden = subprocess.run([*HIDE_BOOT, "cat", "/proc/sys/kernel/random/boot_id"])
    assert hidden.returncode != 0, "the boot id is still readable under bwrap"
    plain, plain_park = resumed_syncs(butler_home, workdir, script, tmp_path, hide=False)
    masked, masked_park = resumed_syncs(butler_home, workdir, script, tmp_path, hide=True)
    assert '"boot"' in plain_park  # the fast path: the decision names its boot
    assert '"boot"' not in masked_park  # no boot to name: nothing may rely on one
    # the round's later writes (started, result, resolved, the ledger's line) synced too
    assert masked >= plain + 4, (plain, masked)
