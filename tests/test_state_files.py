"""State files are checked before they are read, and a full disk is one line, not a traceback.

Through the installed `butler`: a FIFO where a park, the key, the config or a rule file should
be; a symlink in place of a park's lock; a disk that fills up during a decision (a real 192 KiB
tmpfs made by bubblewrap). Nothing hangs, nothing is lost, the files are left as they are.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from conftest import butler_exe, call

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def parked(butler, script, workdir) -> str:
    (workdir / "victim.txt").write_text("keep")
    model = script({"tool_calls": [call("delete_file", "d1", path="victim.txt")]}, {"text": "ok"})
    assert butler("run", "--model", model, "tidy").returncode == 3
    [park] = json.loads(butler("pending", "--json").stdout)
    return park["id"]


def test_a_fifo_named_like_a_park_is_named_and_skipped(butler, script, workdir, butler_home):
    real = parked(butler, script, workdir)
    fifo = butler_home / "parks" / "zzzzzzzz.json"
    os.mkfifo(fifo)
    r = butler("pending", "--json", timeout=20)  # used to block forever on open()
    assert r.returncode == 0, r.stderr
    assert [p["id"] for p in json.loads(r.stdout)] == [real]
    assert "zzzzzzzz.json" in r.stderr and "not a regular file" in r.stderr
    r = butler("resume", "zzzzzzzz", "--approve", timeout=20)
    assert r.returncode == 5 and "not a regular file" in r.stderr
    assert "Traceback" not in r.stderr
    assert fifo.exists() and (workdir / "victim.txt").read_text() == "keep"


@pytest.mark.parametrize("which", ["park.key", "config.toml", "policy.toml"])
def test_a_fifo_in_place_of_a_state_file_does_not_hang(which, butler, script, workdir, butler_home):
    butler_home.mkdir(parents=True, exist_ok=True)
    os.mkfifo(butler_home / which)
    model = script({"tool_calls": [call("delete_file", "d1", path="x.txt")]}, {"text": "ok"})
    r = butler("run", "--model", model, "--policy", "tiered", "tidy", timeout=20)
    assert r.returncode in (1, 2, 5), (r.returncode, r.stderr)
    assert "not a regular file" in r.stderr and which in r.stderr
    assert "Traceback" not in r.stderr
    assert (butler_home / which).exists()


def test_a_symlinked_lock_is_refused_in_one_line(butler, script, workdir, butler_home, tmp_path):
    park = parked(butler, script, workdir)
    target = tmp_path / "elsewhere.lock"
    target.write_text("")
    (butler_home / "parks" / f"{park}.lock").symlink_to(target)
    r = butler("resume", park, "--approve")
    assert r.returncode == 5, r.stderr
    assert "lock" in r.stderr and "symlink" in r.stderr and "Traceback" not in r.stderr
    assert (workdir / "victim.txt").read_text() == "keep"
    assert json.loads(butler("pending", "--json").stdout)[0]["id"] == park


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (see README)")
def test_a_full_disk_during_a_decision_loses_nothing(script, tmp_path) -> None:
    """The home lives on a real 192 KiB tmpfs; the disk is filled after the park is written."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "victim.txt").write_text("keep")
    model = script({"tool_calls": [call("delete_file", "d1", path="victim.txt")]}, {"text": "ok"})
    small = "/tmp/butler-small-disk"
    inner = f"""
set -u
export BUTLER_HOME={small}/home NO_COLOR=1
cd {work}
{butler_exe()} run --model {model.split(":", 1)[0]}:{model.split(":", 1)[1]} tidy >/dev/null 2>&1
echo "run=$?"
id=$(ls {small}/home/parks | sed -n 's/\\.json$//p')
cp {small}/home/parks/$id.json {tmp_path}/before.json
dd if=/dev/zero of={small}/filler bs=4k 2>/dev/null
{butler_exe()} resume $id --approve 2>{tmp_path}/stderr.txt
echo "resume=$?"
ls -a {small}/home/parks > {tmp_path}/listing.txt
cp {small}/home/parks/$id.json {tmp_path}/after.json
"""
    r = subprocess.run(
        ["bwrap", "--dev-bind", "/", "/", "--size", str(192 * 1024), "--tmpfs", small]
        + ["bash", "-c", inner],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "run=3" in r.stdout, (r.stdout, r.stderr)
    stderr = (tmp_path / "stderr.txt").read_text()
    assert "resume=1" in r.stdout, (r.stdout, stderr)
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert "No space left on device" in stderr
    assert (tmp_path / "after.json").read_bytes() == (tmp_path / "before.json").read_bytes()
    assert ".tmp" not in (tmp_path / "listing.txt").read_text()  # the temp file was removed
    assert (work / "victim.txt").read_text() == "keep"
