"""Policies through every loading path, X4 on resume, X5 unattended rules, X6 home refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import call, json_lines, tool_results

WRITE = call("write_file", "w1", path="out.txt", content="hi")

POLICY_FILE = """
from butler_cli import allow, approve, refuse

def allow_all(name, args):
    return allow()

def as_dict(name, args):
    return {"decision": "refuse", "reason": "dict says no"}

def broken(name, args):
    raise RuntimeError("rules are on fire")

def garbage(name, args):
    return 42

class Strict:
    def classify(self, name, args):
        return refuse("class policy says no")

not_a_policy = 7
"""


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_policy.py"
    path.write_text(POLICY_FILE)
    return path


def test_readonly_entry_point_refuses_and_nothing_runs(butler, script, workdir) -> None:
    r = butler(
        "run",
        "--model",
        script({"tool_calls": [WRITE]}, {"text": "ok"}),
        "w",
        "--policy",
        "readonly",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    [res] = tool_results(r.stdout)
    assert res["is_error"] and res["content"].startswith("Refused (not run): the readonly policy")
    assert not (workdir / "out.txt").exists()


def test_allow_parks_without_yes_safe_and_runs_with_it(
    butler, script, workdir, policy_file
) -> None:
    model = script({"tool_calls": [WRITE]}, {"text": "ok"})
    spec = f"{policy_file}:allow_all"
    r = butler("run", "--model", model, "w", "--policy", spec, "--json")
    assert r.returncode == 3
    assert "--yes-safe" in json_lines(r.stdout)[0]["approval"]["reason"]
    assert not (workdir / "out.txt").exists()
    r = butler("run", "--model", model, "w", "--policy", spec, "--yes-safe")
    assert r.returncode == 0 and (workdir / "out.txt").read_text() == "hi"


@pytest.mark.parametrize(
    "attr,expect",
    [
        ("as_dict", "Refused (not run): dict says no."),
        ("Strict", "Refused (not run): class policy says no."),
    ],
)
def test_file_policies_dict_and_class(butler, script, policy_file, attr, expect) -> None:
    r = butler(
        "run",
        "--model",
        script({"tool_calls": [WRITE]}, {"text": "ok"}),
        "w",
        "--policy",
        f"{policy_file}:{attr}",
        "--json",
    )
    assert tool_results(r.stdout)[0]["content"] == expect


@pytest.mark.parametrize("attr", ["broken", "garbage"])
def test_a_broken_policy_asks_a_person(butler, script, policy_file, workdir, attr) -> None:
    r = butler(
        "run",
        "--model",
        script({"tool_calls": [WRITE]}),
        "w",
        "--policy",
        f"{policy_file}:{attr}",
        "--yes-safe",
        "--json",
    )
    assert r.returncode == 3
    assert json_lines(r.stdout)[0]["approval"]["reason"].startswith("policy error:")
    assert not (workdir / "out.txt").exists()


def test_module_attr_policy(butler, script, policy_file) -> None:
    env = {"PYTHONPATH": str(policy_file.parent)}
    r = butler(
        "run",
        "--model",
        script({"tool_calls": [WRITE]}, {"text": "k"}),
        "w",
        "--policy",
        "my_policy:as_dict",
        "--json",
        env=env,
    )
    assert tool_results(r.stdout)[0]["content"] == "Refused (not run): dict says no."


@pytest.mark.parametrize(
    "spec,needle",
    [
        ("nosuch", "installed policies: ask, readonly"),
        ("no_such_module_xyz:p", "failed to import"),
        ("/no/such/file.py:p", "no such file"),
        ("{file}:missing", "has no 'missing'"),
        ("{file}:not_a_policy", "neither callable"),
    ],
)
def test_policy_load_errors_are_usage_errors(
    butler, script, policy_file, butler_home, spec, needle
) -> None:
    r = butler(
        "run", "--model", script({"text": "x"}), "w", "--policy", spec.format(file=policy_file)
    )
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert not butler_home.exists()


def test_policy_is_recorded_and_asked_again_on_resume(butler, script, workdir, policy_file) -> None:
    """X4: the park remembers its policy; a policy that refuses now wins over an approval."""
    r = butler("run", "--model", script({"tool_calls": [WRITE]}, {"text": "k"}), "w", "--json")
    park_id = json_lines(r.stdout)[0]["park_id"]
    shown = json.loads(butler("show", park_id, "--json").stdout)
    assert shown["context"]["policy"] == "ask"
    r = butler("resume", park_id, "--approve", "--policy", "readonly", "--json")
    assert r.returncode == 0
    assert tool_results(r.stdout)[-1]["content"].startswith(
        "Refused (not run): the readonly policy"
    )
    assert not (workdir / "out.txt").exists()


def test_file_policy_spec_is_recorded_absolute(butler, script, policy_file, workdir) -> None:
    rel = Path("..") / policy_file.name
    r = butler(
        "run",
        "--model",
        script({"tool_calls": [WRITE]}),
        "w",
        "--policy",
        f"{rel}:broken",
        "--json",
    )
    park_id = json_lines(r.stdout)[0]["park_id"]
    ctx = json.loads(butler("show", park_id, "--json").stdout)["context"]
    assert ctx["policy"] == f"{policy_file}:broken"
    assert ctx["model"].startswith("scripted:/")


@pytest.mark.parametrize(
    "target",
    [
        "{home}/parks/evil.json",
        "{home}/park.key",
        "{work}/../home/audit.jsonl",
        "{link}/x",
        "{home}",
    ],
)
@pytest.mark.parametrize("tool", ["write_file", "delete_file"])
def test_x6_file_tools_refuse_the_butler_home(
    butler, script, butler_home, workdir, policy_file, target, tool
) -> None:
    butler_home.mkdir(mode=0o700)
    (butler_home / "audit.jsonl").write_text("")
    (workdir / "link").symlink_to(butler_home)
    path = target.format(home=butler_home, work=workdir, link=workdir / "link")
    args = {"path": path, "content": "x"} if tool == "write_file" else {"path": path}
    turn = {"tool_calls": [{"id": "t1", "name": tool, "arguments": args}]}
    r = butler(
        "run",
        "--model",
        script(turn, {"text": "k"}),
        "w",
        "--policy",
        f"{policy_file}:allow_all",
        "--yes-safe",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    [res] = tool_results(r.stdout)
    assert res["is_error"] and "butler's own home" in res["content"]
    assert not (butler_home / "parks" / "evil.json").exists()
    assert (butler_home / "audit.jsonl").exists()


def test_read_file_cannot_read_the_key(butler, script, butler_home) -> None:
    butler("run", "--model", script({"tool_calls": [WRITE]}), "w")
    r = butler(
        "run",
        "--model",
        script(
            {"tool_calls": [call("read_file", path=str(butler_home / "park.key"))]}, {"text": "k"}
        ),
        "r",
        "--json",
    )
    [res] = tool_results(r.stdout)
    key = (butler_home / "park.key").read_text().strip()
    assert res["is_error"] and key not in r.stdout


def test_shipped_policies_are_entry_points() -> None:
    from butler_cli.policy.loader import installed_policies, load_policy

    names = {ep.name for ep in installed_policies()}
    assert {"ask", "readonly"} <= names
    loaded = load_policy("readonly")
    assert "entry point 'readonly'" in loaded.source
    assert loaded.classify("write_file", {}).decision == "refuse"
    assert load_policy("ask").classify("write_file", {}) is None
