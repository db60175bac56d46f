"""Hands: run_command, move_path, search_files — each side effect behind the gate."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from conftest import call, json_lines, sleepers, tool_results


def test_run_command_parks_with_the_exact_argv_and_cwd(butler, script, workdir) -> None:
    model = script(
        {"tool_calls": [call("run_command", "r", argv=["touch", "made by the butler"])]},
        {"text": "k"},
    )
    r = butler("run", "--model", model, "go", "--json")
    assert r.returncode == 3
    approval = json_lines(r.stdout)[0]["approval"]
    assert approval["title"] == f"run_command: touch 'made by the butler' (in {workdir})"
    assert not (workdir / "made by the butler").exists()
    park_id = json_lines(r.stdout)[0]["park_id"]
    assert butler("resume", park_id, "--approve").returncode == 0
    assert (workdir / "made by the butler").exists()  # one argv item, no shell splitting


def test_run_command_output_exit_status_and_cap(butler, script, allow_all) -> None:
    argv = [sys.executable, "-c", "import sys; print('x' * 40000); sys.exit(3)"]
    r = butler(
        "run",
        "--model",
        script({"tool_calls": [call("run_command", "r", argv=argv)]}, {"text": "k"}),
        "go",
        "--json",
        *allow_all,
    )
    assert r.returncode == 0, r.stderr
    out = tool_results(r.stdout)[0]["content"]
    assert out.startswith("exit status 3\n") and "bytes of output cut here" in out
    assert len(out) < 20_000


def test_run_command_timeout_kills_the_process_group(butler, script, allow_all, tmp_path) -> None:
    marker = f"{time.time_ns() % 10**9}.25"  # this test's own sleep, found by its argument
    code = (
        "import subprocess, time; "
        f"subprocess.Popen(['sh', '-c', 'exec sleep {marker}']); time.sleep(30)"
    )
    model = script(
        {"tool_calls": [call("run_command", "r", argv=[sys.executable, "-c", code], timeout_s=1)]},
        {"text": "k"},
    )
    start = time.monotonic()
    r = butler("run", "--model", model, "go", "--json", *allow_all)
    assert r.returncode == 0 and time.monotonic() - start < 15
    assert tool_results(r.stdout)[0]["content"].startswith("killed after 1 s (timeout)")
    deadline = time.monotonic() + 10  # the kill is immediate; a bound, not a wait
    while sleepers(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleepers(f"sleep {marker}") == []  # the grandchild died with its group


@pytest.mark.parametrize(
    "args,needle",
    [
        ({"argv": "rm -rf /"}, "list of strings"),
        ({"argv": []}, "list of strings"),
        ({"argv": ["ls"], "cwd": "{home}"}, "butler's own home"),
        ({"argv": ["ls"], "timeout_s": 0}, "timeout_s"),
    ],
)
def test_run_command_refuses_bad_calls_whatever_the_policy(
    args, needle, butler, script, allow_all, butler_home
) -> None:
    butler_home.mkdir()
    args = {k: (v.format(home=butler_home) if isinstance(v, str) else v) for k, v in args.items()}
    r = butler(
        "run",
        "--model",
        script({"tool_calls": [call("run_command", "r", **args)]}, {"text": "k"}),
        "go",
        "--json",
        *allow_all,
    )
    res = tool_results(r.stdout)[0]
    assert res["is_error"] and needle in res["content"]


def test_move_path(butler, script, allow_all, workdir, butler_home) -> None:
    (workdir / "a.txt").write_text("a")
    (workdir / "b.txt").write_text("b")
    model = script(
        {
            "tool_calls": [
                call("move_path", "m1", src="a.txt", dst="sub-a.txt"),
                call("move_path", "m2", src="b.txt", dst="sub-a.txt"),
                call("move_path", "m3", src="sub-a.txt", dst=str(butler_home / "stolen.txt")),
            ]
        },
        {"text": "k"},
    )
    r = butler("run", "--model", model, "go", "--json", *allow_all)
    res = tool_results(r.stdout)
    assert not res[0]["is_error"] and (workdir / "sub-a.txt").read_text() == "a"
    assert res[1]["is_error"] and "never overwrites" in res[1]["content"]
    assert res[2]["is_error"] and "butler's own home" in res[2]["content"]
    assert (workdir / "b.txt").exists() and not (butler_home / "stolen.txt").exists()


def test_search_files_is_benign_and_skips_the_home(butler, script, workdir, butler_home) -> None:
    (workdir / "notes").mkdir()
    (workdir / "notes" / "a.md").write_text("x")
    (workdir / "notes" / "b.txt").write_text("x")
    (workdir / "home-link").symlink_to(butler_home, target_is_directory=True)
    butler("memory", "add", "so the home has files")
    model = script(
        {
            "tool_calls": [
                call("search_files", "s", pattern="**/*.md"),
                call("search_files", "t", pattern="**/*", root="home-link"),
            ]
        },
        {"text": "k"},
    )
    r = butler("run", "--model", model, "go", "--json")
    assert r.returncode == 0, r.stderr
    res = tool_results(r.stdout)
    assert res[0]["content"] == str(Path("notes") / "a.md")
    assert res[1]["is_error"] and "butler's own home" in res[1]["content"]


def test_policy_check_knows_the_new_tools(butler) -> None:
    r = butler("policy", "check", "run_command", "--args", json.dumps({"argv": ["ls"]}), "--json")
    assert r.returncode == 3 and "runs a program" in json.loads(r.stdout)["reason"]
    assert butler("policy", "check", "search_files", "--args", '{"pattern": "*"}').returncode == 0


def test_file_tools_stay_inside_the_allowed_roots(butler, script, tmp_path, workdir) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s3cret")
    model = script(
        {"tool_calls": [call("read_file", "r", path=str(outside / "secret.txt"))]}, {"text": "k"}
    )
    r = butler("run", "--model", model, "go", "--json")
    res = tool_results(r.stdout)[0]
    assert res["is_error"] and "outside the allowed folders" in res["content"]
    assert "s3cret" not in r.stdout
    assert butler("config", "set", "allowed_roots", f"{workdir},{outside}").returncode == 0
    r = butler("run", "--model", model, "go", "--json")
    assert tool_results(r.stdout)[0]["content"] == "s3cret"


@pytest.mark.parametrize(
    "tool,args,verdict",
    [
        ("run_command", {"argv": ["ls", "-l"]}, 0),
        ("run_command", {"argv": ["git", "status"]}, 3),  # runs .git/config hooks: asks
        ("run_command", {"argv": ["ls", ";", "rm"]}, 3),
        ("run_command", {"argv": ["sudo", "ls"]}, 3),
        ("run_command", {"argv": ["make"]}, 3),
        ("send_email", {"to": "a@b.c", "subject": "s", "body": "b"}, 3),
        ("http_request", {"method": "GET", "url": "https://example.com"}, 3),
        ("move_path", {"src": "a", "dst": "b"}, 3),
    ],
)
def test_tiered_ships_sensible_rules(tool, args, verdict, butler) -> None:
    if tool == "send_email":  # offered only with an SMTP server
        assert butler("policy", "check", tool, "--args", json.dumps(args)).returncode == 2
        assert butler("config", "set", "smtp.host", "127.0.0.1").returncode == 0
    r = butler("policy", "check", tool, "--args", json.dumps(args), "--policy", "tiered", "--json")
    assert r.returncode == verdict, r.stdout + r.stderr
    if tool in ("send_email", "http_request"):
        assert json.loads(r.stdout)["reason"].startswith("cross_boundary")


def test_run_command_cannot_point_into_the_home(butler, script, allow_all, butler_home) -> None:
    butler_home.mkdir()
    (butler_home / "park.key").write_text("k" * 64)
    model = script(
        {"tool_calls": [call("run_command", "r", argv=["ls", str(butler_home / "park.key")])]},
        {"text": "k"},
    )
    res = tool_results(butler("run", "--model", model, "go", "--json", *allow_all).stdout)[0]
    assert res["is_error"] and "butler's own home" in res["content"]


def test_file_tools_get_human_titles_with_the_resolved_path_first(butler, script, workdir) -> None:
    """run_command and http_request had human titles and the file tools raw JSON: now each
    names what it acts on first — the path as judged (resolved) — and what it does to it."""
    (workdir / "notes").mkdir()
    (workdir / "old.txt").write_text("x")
    calls = [
        call("write_file", "w", path="notes/../plan.txt", content="tea\nmilk\n"),
        call("delete_file", "d", path="./old.txt"),
        call("move_path", "m", src="old.txt", dst="notes/kept.txt"),
    ]
    titles = []
    for one in calls:
        r = butler("run", "--model", script({"tool_calls": [one]}), "go", "--json")
        assert r.returncode == 3, r.stderr
        titles.append(json.loads(r.stdout)["approval"]["title"])
    assert titles == [
        f"write_file: {workdir / 'plan.txt'} (9 characters, 2 lines)",
        f"delete_file: {workdir / 'old.txt'}",
        f"move_path: {workdir / 'old.txt'} → {workdir / 'notes' / 'kept.txt'}",
    ]
    assert f"write_file: {workdir / 'plan.txt'}" in butler("pending").stdout
