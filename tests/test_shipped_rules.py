"""The rules `tiered` ships (default_rules.toml) are safe by construction: nothing on the safe
list can write, delete, run what a repository configures, or read outside the task's folder.

Every dangerous variant is replayed through the installed `butler policy test`; the attacks of
issue 12 run end to end through `butler run --yes-safe` and are checked on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import call, json_lines, tool_results

TIERED = ["--policy", "tiered"]

# Harmless forms: these stay allowed (run without asking under --yes-safe).
HARMLESS: list[dict[str, Any]] = [
    {"argv": ["pwd"]},
    {"argv": ["pwd", "-P"]},
    {"argv": ["pwd", "-L"]},
    {"argv": ["whoami"]},
    {"argv": ["date"]},
    {"argv": ["date", "+%Y-%m-%d"]},
    {"argv": ["date", "+%s"]},
    {"argv": ["date", "-u"]},
    {"argv": ["date", "-u", "+%H:%M"]},
    {"argv": ["uname"]},
    {"argv": ["uname", "-a"]},
    {"argv": ["uname", "-sr"]},
    {"argv": ["uname", "-s", "-m"]},
    {"argv": ["ls"]},
    {"argv": ["ls", "-l"]},
    {"argv": ["ls", "-la"]},
    {"argv": ["ls", "-1"]},
    {"argv": ["ls", "-lhS"]},
    {"argv": ["ls", "-a", "-l", "-t", "-r"]},
    {"argv": ["ls", "-AF"]},
    {"argv": ["ls"], "timeout_s": 5},
    {"argv": ["ls"], "cwd": None},  # no working directory: the task's folder
]

_KEYS = "/tmp/butler-home/park.key"
# Every one of these must not be allowed: the policy asks (or a guard refuses).
DANGEROUS: list[dict[str, Any]] = [
    # ls: recursion leaks the names of a whole tree; any operand may leave the folder
    {"argv": ["ls", "-R"]},
    {"argv": ["ls", "-lR"]},
    {"argv": ["ls", "-Rla"]},
    {"argv": ["ls", "-la", "-R"]},
    {"argv": ["ls", "--recursive"]},
    {"argv": ["ls", ".."]},
    {"argv": ["ls", "-la", ".."]},
    {"argv": ["ls", "/"]},
    {"argv": ["ls", "/etc"]},
    {"argv": ["ls", "~"]},
    {"argv": ["ls", "-la", "~/.ssh"]},
    {"argv": ["ls", "home"]},  # a plain name: may be a symlink, or the butler's home itself
    {"argv": ["ls", "sub/../.."]},
    {"argv": ["ls", "-L"]},
    {"argv": ["ls", "-lL", "link"]},
    {"argv": ["ls", "--dired"]},
    {"argv": ["ls", "-I", "x"]},
    {"argv": ["ls", "--hide=x"]},
    {"argv": ["ls", "--", "-R"]},
    {"argv": ["ls", "-l", "-", "-R"]},
    {"argv": ["ls", ""]},
    {"argv": ["ls", "-la\n"]},
    {"argv": ["ls", "-la", "\n/etc"]},
    {"argv": ["ls", "-l\t/etc"]},
    {"argv": ["ls", ";", "rm", "-rf", "."]},
    {"argv": ["ls", "-l;rm"]},
    {"argv": ["ls", "$(rm)"]},
    {"argv": ["ls", "`rm`"]},
    # ... and any named working directory: a rule cannot see where it resolves
    {"argv": ["ls"], "cwd": "."},
    {"argv": ["ls", "-l"], "cwd": ""},
    {"argv": ["ls"], "cwd": []},
    {"argv": ["ls"], "cwd": "/"},
    {"argv": ["ls"], "cwd": ".."},
    {"argv": ["ls", "-la"], "cwd": "~"},
    {"argv": ["ls"], "cwd": "sub"},
    {"argv": ["pwd"], "cwd": "/tmp"},
    {"argv": ["date"], "cwd": "./sub"},
    # date sets the clock with -s/--set or a bare operand; -f/-r read files
    {"argv": ["date", "-s", "2001-01-01"]},
    {"argv": ["date", "-s2001-01-01"]},
    {"argv": ["date", "-us", "2001-01-01"]},
    {"argv": ["date", "--set=2001-01-01"]},
    {"argv": ["date", "--set", "2001-01-01"]},
    {"argv": ["date", "--se=2001-01-01"]},
    {"argv": ["date", "010112002001"]},
    {"argv": ["date", "-u", "010112002001"]},
    {"argv": ["date", "+%Y", "010112002001"]},
    {"argv": ["date", "+%Y", "-s", "2001-01-01"]},
    {"argv": ["date", "+%Y\n-s"]},
    {"argv": ["date", "-f", _KEYS]},
    {"argv": ["date", f"-f{_KEYS}"]},
    {"argv": ["date", f"--file={_KEYS}"]},
    {"argv": ["date", "-r", _KEYS]},
    {"argv": ["date", f"--reference={_KEYS}"]},
    {"argv": ["date", "-d", "@0", "-s", "x"]},
    # pwd, whoami, uname take almost nothing
    {"argv": ["pwd", "x"]},
    {"argv": ["pwd", "-P", "/"]},
    {"argv": ["whoami", "x"]},
    {"argv": ["whoami\n"]},
    {"argv": ["uname", "-a", "x"]},
    {"argv": ["uname", "-a;id"]},
    {"argv": ["uname", "--all", "/"]},
    # git runs what the repository's .git/config names (fsmonitor, filters, diff and textconv
    # drivers, pagers), so no git command is on the safe list
    {"argv": ["git", "status"]},
    {"argv": ["git", "status", "-uall"]},
    {"argv": ["git", "log"]},
    {"argv": ["git", "log", "-p"]},
    {"argv": ["git", "log", "--ext-diff", "-p"]},
    {"argv": ["git", "log", "--textconv", "-p"]},
    {"argv": ["git", "log", "--output=/tmp/x"]},
    {"argv": ["git", "log", "-o/tmp/x"]},
    {"argv": ["git", "diff"]},
    {"argv": ["git", "diff", "--no-index", "butler", "other"]},
    {"argv": ["git", "diff", "--no-index", "--output=/etc/passwd", "a", "b"]},
    {"argv": ["git", "diff", "--output", "/tmp/x"]},
    {"argv": ["git", "diff", "--ext-diff"]},
    {"argv": ["git", "-c", "core.pager=sh -c id", "log"]},
    {"argv": ["git", "-c", "core.fsmonitor=touch x", "status"]},
    {"argv": ["git", "-ccore.fsmonitor=x", "status"]},
    {"argv": ["git", "-C", "/", "status"]},
    {"argv": ["git", "-C/", "status"]},
    {"argv": ["git", "--git-dir=/tmp/x/.git", "log"]},
    {"argv": ["git", "--git-dir", "/tmp/x/.git", "log"]},
    {"argv": ["git", "--work-tree=/", "status"]},
    {"argv": ["git", "--exec-path=/tmp", "status"]},
    {"argv": ["git", "-P", "log"]},
    {"argv": ["git", "-p", "log"]},
    {"argv": ["git", "--paginate", "log"]},
    {"argv": ["git", "branch"]},
    {"argv": ["git", "branch", "-D", "main"]},
    {"argv": ["git", "branch", "-Dmain"]},
    {"argv": ["git", "branch", "-d", "x"]},
    {"argv": ["git", "branch", "--delete", "--force", "x"]},
    {"argv": ["git", "branch", "-m", "a", "b"]},
    {"argv": ["git", "branch", "-f", "x", "HEAD~3"]},
    {"argv": ["git", "branch", "new"]},
    {"argv": ["git", "push", "--force"]},
    {"argv": ["git", "reset", "--hard"]},
    {"argv": ["git", "clean", "-fdx"]},
    # lookalikes and everything else
    {"argv": ["lsof"]},
    {"argv": ["lsblk"]},
    {"argv": ["dates"]},
    {"argv": ["pwdx", "1"]},
    {"argv": ["/bin/ls", "-R", "/"]},
    {"argv": [" ls"]},
    {"argv": ["LS"]},
    {"argv": ["ls -R"]},
    {"argv": ["sudo", "ls"]},
    {"argv": ["rm", "-rf", "/"]},
    {"argv": ["/bin/rm", "x"]},
    {"argv": ["env", "rm", "x"]},
    {"argv": ["find", ".", "-exec", "rm", "{}", ";"]},
    {"argv": ["find", ".", "-delete"]},
    {"argv": ["sh", "-c", "ls"]},
    {"argv": ["python3", "-c", "print(1)"]},
    {"argv": ["curl", "-o", "/tmp/x", "http://127.0.0.1/"]},
    {"argv": ["make"]},
]


def _replay(butler, tmp_path: Path, arg_sets: list[dict[str, Any]], expect: str) -> list[str]:
    cases = tmp_path / f"{expect}.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"tool": "run_command", "args": a, "expect": expect}) + "\n"
            for a in arg_sets
        ),
        encoding="utf-8",
    )
    r = butler("policy", "test", str(cases), *TIERED)
    assert f"{len(arg_sets)} cases" in r.stdout, r.stdout + r.stderr
    return [ln for ln in r.stdout.splitlines() if ln.startswith("case ")]


def test_no_dangerous_variant_is_allowed(butler, tmp_path) -> None:
    """Each variant asks or is refused; "got allow" (or benign) is a hole in the safe list."""
    misses = _replay(butler, tmp_path, DANGEROUS, "approve")
    holes = [m for m in misses if ", got allow" in m or ", got benign" in m]
    assert not holes, "\n".join(holes)


def test_the_harmless_forms_stay_allowed(butler, tmp_path) -> None:
    misses = _replay(butler, tmp_path, HARMLESS, "allow")
    assert not misses, "\n".join(misses)


def test_the_reasons_name_the_rule(butler) -> None:
    def check(argv: list[str]) -> dict[str, Any]:
        r = butler("policy", "check", "run_command", "--args", json.dumps({"argv": argv}), *TIERED)
        return {"code": r.returncode, "out": r.stdout}

    got = check(["whoami"])
    assert got["code"] == 0 and "looking around" in got["out"], got
    for argv in (["sudo", "ls"], ["/usr/bin/rm", "x"], ["env", "shutdown", "now"]):
        got = check(argv)
        assert got["code"] == 3 and "privileged or destructive" in got["out"], got
    for argv in (["git", "branch", "-Dx"], ["git", "-C", "w", "reset", "--hard"]):
        got = check(argv)
        assert got["code"] == 3 and "discards work" in got["out"], got
    got = check(["git", "push"])
    assert got["code"] == 3 and "cross_boundary" in got["out"], got


# ----- end to end: the attacks of issue 12 through `butler run --yes-safe` -----


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    out = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return out.stdout


@pytest.fixture
def repo(workdir: Path) -> Path:
    """A real git repository in the task's folder: one commit on main, a branch `feature`."""
    _git(workdir, "init", "-q", "-b", "main")
    (workdir / "a.txt").write_text("one\n")
    (workdir / "b.txt").write_text("two\n")
    _git(workdir, "add", ".")
    _git(workdir, "commit", "-qm", "first")
    _git(workdir, "branch", "feature")
    return workdir


def _yes_safe(butler, script, argv: list[str], *, cwd: Path | None = None, **env: str) -> Any:
    model = script({"tool_calls": [call("run_command", "c1", argv=argv)]}, {"text": "done"})
    return butler(
        "run", "--model", model, "look", *TIERED, "--yes-safe", "--json", cwd=cwd, env=env
    )


def _parked(r: Any) -> bool:
    return r.returncode == 3 and json_lines(r.stdout)[0]["status"] == "parked"


@pytest.fixture
def parked_home(butler, script, butler_home: Path) -> tuple[str, str]:
    """The butler's home after one real park: (the key's text, the park's id)."""
    model = script({"tool_calls": [call("write_file", "w", path="x.txt", content="x")]})
    r = butler("run", "--model", model, "write", *TIERED, "--json")
    assert _parked(r), r.stdout + r.stderr
    key = (butler_home / "park.key").read_text().strip()
    return key, json_lines(r.stdout)[0]["park_id"]


def test_git_diff_no_index_cannot_print_the_key(butler, script, tmp_path, parked_home) -> None:
    key, park_id = parked_home
    (tmp_path / "other").mkdir()
    # run from the folder that holds the butler's home (the home is tmp_path/"home")
    r = _yes_safe(butler, script, ["git", "diff", "--no-index", "home", "other"], cwd=tmp_path)
    assert key not in r.stdout + r.stderr and park_id not in r.stdout
    assert _parked(r), r.stdout + r.stderr


def test_ls_R_cannot_list_the_parks(butler, script, tmp_path, parked_home) -> None:
    _, park_id = parked_home
    r = _yes_safe(butler, script, ["ls", "-R"], cwd=tmp_path)
    assert park_id not in r.stdout + r.stderr and "park.key" not in r.stdout
    assert _parked(r), r.stdout + r.stderr


@pytest.mark.parametrize("where", ["outside", "work"])
def test_git_diff_output_cannot_overwrite_a_file(butler, script, repo, tmp_path, where) -> None:
    """Outside the allowed roots (the issue) and in the task's folder (a sandbox, if any,
    leaves that writable: only the rules stand between the model and the file)."""
    victim = tmp_path / where / "victim.txt"
    victim.parent.mkdir(exist_ok=True)
    victim.write_text("precious\n")
    argv = ["git", "diff", "--no-index", f"--output={victim}", "a.txt", "b.txt"]
    r = _yes_safe(butler, script, argv)
    assert victim.read_text() == "precious\n"
    assert _parked(r), r.stdout + r.stderr


def test_git_branch_D_keeps_the_branch(butler, script, repo) -> None:
    r = _yes_safe(butler, script, ["git", "branch", "-D", "feature"])
    assert "feature" in _git(repo, "branch", "--list", "feature")
    assert _parked(r), r.stdout + r.stderr


def test_git_status_does_not_run_the_repositorys_hook(butler, script, repo) -> None:
    """core.fsmonitor in .git/config is a command `git status` runs: git is never safe."""
    marker = repo / "fsmonitor-ran"  # in the task's folder: writable even in a sandbox
    _git(repo, "config", "core.fsmonitor", f"touch {marker}; false")
    r = _yes_safe(butler, script, ["git", "status"])
    assert not marker.exists()
    assert _parked(r), r.stdout + r.stderr


@pytest.fixture
def fake_date(workdir: Path) -> tuple[dict[str, str], Path]:
    """A `date` first on PATH that only records its arguments (the real clock is never set).
    It lives in the task's folder, which a sandbox (if any) shows to the program."""
    bin_dir = workdir / "bin"
    bin_dir.mkdir()
    log = workdir / "date-args.txt"
    exe = bin_dir / "date"
    exe.write_text(f'#!/bin/sh\necho "$*" >> {log}\necho fake-date\n')
    exe.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, log


def test_date_s_does_not_run(butler, script, fake_date) -> None:
    env, log = fake_date
    r = _yes_safe(butler, script, ["date", "+%Y"], **env)  # control: the fake is the one run
    assert r.returncode == 0 and "fake-date" in tool_results(r.stdout)[0]["content"]
    assert log.read_text() == "+%Y\n"
    for argv in (["date", "-s", "2001-01-01"], ["date", "--set=2001-01-01"], ["date", "0101"]):
        r = _yes_safe(butler, script, argv, **env)
        assert _parked(r), r.stdout + r.stderr
    assert log.read_text() == "+%Y\n"


def test_looking_around_runs_without_asking(butler, script, repo) -> None:
    calls = [
        call("run_command", f"c{i}", argv=argv)
        for i, argv in enumerate([["ls", "-la"], ["pwd"], ["whoami"], ["uname", "-s"]])
    ]
    model = script({"tool_calls": calls}, {"text": "done"})
    r = butler("run", "--model", model, "look", *TIERED, "--yes-safe", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    results = tool_results(r.stdout)
    assert all(not res["is_error"] for res in results), results
    assert "a.txt" in results[0]["content"] and str(repo) in results[1]["content"]
