"""Options resolved once: for the model, the policy, max_rounds and the system prompt, a flag
wins over the environment, which wins over the config file, which wins over the default — on
`butler run`, `butler resume` and the chat alike. A resume puts what the park recorded between
the flags and the rest: the environment and the file never change a parked task's model.

What each surface used is read back from the park it makes (`butler show ID --json`: the
context a park records), so the table checks the winner, not only the exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pexpect
import pytest
from conftest import call, spawn_butler

OPTIONS = ("model", "policy", "max_rounds", "system")
FLAG = {
    "model": "--model",
    "policy": "--policy",
    "max_rounds": "--max-rounds",
    "system": "--system",
}
ENV = {
    "model": "BUTLER_MODEL",
    "policy": "BUTLER_POLICY",
    "max_rounds": "BUTLER_MAX_ROUNDS",
    "system": "BUTLER_SYSTEM",
}
PRECEDENCE = ("flag", "env", "file")
#: Every combination of sources: each option meets each of them across the table.
SUBSETS: list[tuple[str, ...]] = [
    (),
    ("file",),
    ("env",),
    ("env", "file"),
    ("flag",),
    ("flag", "file"),
    ("flag", "env"),
    ("flag", "env", "file"),
]
SHIFT = {"model": 0, "policy": 3, "max_rounds": 5, "system": 6}
DEFAULTS = {"policy": "ask", "max_rounds": 8, "system": ""}
ROUNDS = {"flag": 5, "env": 6, "file": 7, "park": 4}
APPROVE = r"Approve\? \[y/n/l/d/s"


def write(cid: str, name: str) -> dict[str, Any]:
    return {"tool_calls": [call("write_file", cid, path=name, content=cid)]}


#: Two writes: a run parks on the first; a resume runs it and parks on the second, so the
#: second park shows what the resume used.
TURNS = [write("a", "a.txt"), write("b", "b.txt"), {"text": "done"}]


class Sources:
    """One value per option and source, each telling where it came from when read back."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path / "sources"
        self.dir.mkdir()
        self.models: dict[str, str] = {}
        self.policies: dict[str, str] = {}
        for source in (*PRECEDENCE, "park"):
            script = self.dir / f"model_{source}.json"
            script.write_text(json.dumps({"turns": TURNS}), encoding="utf-8")
            self.models[source] = f"scripted:{script}"
            policy = self.dir / f"policy_{source}.py"
            policy.write_text(
                "from butler_cli.api import approve\n\n"
                f"def classify(name, args):\n    return approve('policy from {source}')\n",
                encoding="utf-8",
            )
            self.policies[source] = f"{policy}:classify"

    def value(self, option: str, source: str) -> Any:
        if option == "model":
            return self.models[source]
        if option == "policy":
            return self.policies[source]
        if option == "max_rounds":
            return ROUNDS[source]
        return f"system prompt from {source}"

    def recorded(self, option: str, source: str) -> Any:
        """What a park records when ``source`` won for ``option``."""
        if source == "default":
            return DEFAULTS[option]
        return self.value(option, source)

    def apply(
        self, case: dict[str, tuple[str, ...]], home: Path
    ) -> tuple[list[str], dict[str, str]]:
        """The flags and environment of ``case``; its file entries go into the config file."""
        flags: list[str] = []
        env = {name: "" for name in ENV.values()}  # the test's own environment never leaks in
        lines = []
        for option, sources in case.items():
            if "flag" in sources:
                flags += [FLAG[option], str(self.value(option, "flag"))]
            if "env" in sources:
                env[ENV[option]] = str(self.value(option, "env"))
            if "file" in sources:
                lines.append(f"{option} = {json.dumps(self.value(option, 'file'))}")
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return flags, env


def winner(sources: tuple[str, ...], between: str = "default") -> str:
    """The source that must win: a flag, else ``between`` when it is a park, else env, file."""
    if "flag" in sources:
        return "flag"
    if between == "park":
        return "park"
    return next((s for s in PRECEDENCE if s in sources), "default")


def table(size: int) -> list[dict[str, tuple[str, ...]]]:
    cases = []
    for k in range(size):
        case = {o: SUBSETS[(k * (8 // size) + SHIFT[o]) % 8] for o in OPTIONS}
        if not case["model"]:  # there is no default model: that is a usage error of its own
            case["model"] = ("file",)
        cases.append(case)
    return cases


def park_context(butler: Any, park_id: str) -> dict[str, Any]:
    shown = butler("show", park_id, "--json")
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout)["context"])


def check(sources: Sources, context: dict[str, Any], expected: dict[str, str]) -> None:
    got = {option: context[option] for option in OPTIONS}
    want = {option: sources.recorded(option, source) for option, source in expected.items()}
    assert got == want, expected


def describe(case: dict[str, tuple[str, ...]]) -> str:
    return " ".join(f"{o}={'+'.join(s) or '-'}" for o, s in case.items())


@pytest.mark.parametrize("case", table(8), ids=describe)
def test_run_uses_flag_then_env_then_file_then_default(case, butler, butler_home, tmp_path):
    sources = Sources(tmp_path)
    flags, env = sources.apply(case, butler_home)
    r = butler("run", *flags, "write it", "--json", env=env)
    assert r.returncode == 3, r.stderr
    context = park_context(butler, json.loads(r.stdout)["park_id"])
    check(sources, context, {o: winner(s) for o, s in case.items()})


@pytest.mark.parametrize("case", table(4), ids=describe)
def test_resume_uses_flag_then_the_parks_record(case, butler, butler_home, tmp_path):
    """The park recorded all four; the environment and the file, though set, never win."""
    sources = Sources(tmp_path)
    made = [a for o in OPTIONS for a in (FLAG[o], str(sources.value(o, "park")))]
    first = butler("run", *made, "write it", "--json", env={n: "" for n in ENV.values()})
    assert first.returncode == 3, first.stderr
    flags, env = sources.apply(case, butler_home)
    park = json.loads(first.stdout)["park_id"]
    r = butler("resume", park, "--approve", *flags, "--json", env=env)
    assert r.returncode == 3, r.stderr  # the second write parks: its park shows what was used
    context = park_context(butler, json.loads(r.stdout)["park_id"])
    check(sources, context, {o: winner(s, "park") for o, s in case.items()})


def chat_park(home: Path, workdir: Path, flags: list[str], env: dict[str, str]) -> str:
    """A chat turn that parks, left for later; the park's id."""
    child = spawn_butler(["chat", *flags], home, workdir, **env)
    child.expect("you ›")
    child.sendline("write it")
    child.expect(APPROVE)
    child.sendline("l")
    child.expect("you ›")
    child.sendeof()
    child.expect(pexpect.EOF, timeout=30)
    parks = sorted((home / "parks").glob("*.json"), key=lambda p: p.stat().st_mtime)
    return parks[-1].stem


@pytest.mark.parametrize("case", table(2), ids=describe)
def test_the_chat_uses_flag_then_env_then_file_then_default(
    case, butler, butler_home, workdir, tmp_path
):
    sources = Sources(tmp_path)
    flags, env = sources.apply(case, butler_home)
    park = chat_park(butler_home, workdir, flags, env)
    check(sources, park_context(butler, park), {o: winner(s) for o, s in case.items()})


def test_the_chat_resumes_a_runs_park_with_the_parks_model_not_its_own(
    butler, butler_home, workdir, tmp_path
):
    """`/resume ID` in a chat whose model and policy came from the environment and the file:
    the parked task goes on with what its park recorded, as `butler resume ID` would (the
    chat's own resolved options are not flags)."""
    sources = Sources(tmp_path)
    made = [a for o in OPTIONS for a in (FLAG[o], str(sources.value(o, "park")))]
    first = butler("run", *made, "write it", "--json", env={n: "" for n in ENV.values()})
    assert first.returncode == 3, first.stderr
    park = json.loads(first.stdout)["park_id"]
    case = {o: ("env", "file") for o in OPTIONS}
    flags, env = sources.apply(case, butler_home)
    child = spawn_butler(["chat", *flags], butler_home, workdir, **env)
    child.expect("you ›")
    child.sendline(f"/resume {park}")
    child.expect(APPROVE)
    child.sendline("y")  # the first write runs; the second parks
    child.expect(APPROVE)
    child.sendline("l")
    child.expect("you ›")
    child.sendeof()
    child.expect(pexpect.EOF, timeout=30)
    assert (workdir / "a.txt").read_text() == "a"
    parks = [p.stem for p in (butler_home / "parks").glob("*.json") if p.stem != park]
    assert len(parks) == 1
    check(sources, park_context(butler, parks[0]), {o: "park" for o in OPTIONS})


@pytest.mark.parametrize("case", table(4), ids=describe)
def test_config_get_names_the_winner_a_run_uses(case, butler, butler_home, tmp_path):
    """`butler config get KEY` with the same flags, variables and file: the value and the
    source `run` took (it asks the same resolver)."""
    sources = Sources(tmp_path)
    flags, env = sources.apply(case, butler_home)
    for option in OPTIONS:
        given = [
            a
            for f, v in zip(flags[::2], flags[1::2], strict=True)
            if f == FLAG[option]
            for a in (f, v)
        ]
        r = butler("config", "get", option, *given, "--json", env=env)
        assert r.returncode == 0, r.stderr
        found = json.loads(r.stdout)
        source = winner(case[option])
        where = {
            "env": f"env {ENV[option]}",
            "file": f"file {butler_home / 'config.toml'}",
        }.get(source, source)
        assert (found["value"], found["source"]) == (sources.recorded(option, source), where)


@pytest.mark.parametrize("case", table(4), ids=describe)
def test_a_schedule_fixes_model_and_policy_as_run_would_and_its_run_resolves_the_rest(
    case, butler, butler_home, workdir, tmp_path
):
    """`schedule add` resolves the model and the policy when the schedule is made (it takes no
    flag for the rest); its run resolves max_rounds and the system prompt the same way."""
    sources = Sources(tmp_path)
    flags, env = sources.apply(case, butler_home)
    made = [a for f, v in zip(flags[::2], flags[1::2], strict=True) if f in ("--model", "--policy")
            for a in (f, v)]  # fmt: skip
    added = butler(
        "schedule", "add", "@daily", "write it", *made, "--folder", str(workdir), env=env
    )
    assert added.returncode == 0, added.stderr
    expected = {o: winner(s) for o, s in case.items()}
    expected |= {
        o: winner(tuple(x for x in case[o] if x != "flag")) for o in ("max_rounds", "system")
    }
    listed = json.loads(butler("schedule", "list", "--json", env=env).stdout)[0]
    assert listed["model"] == sources.recorded("model", expected["model"])
    assert listed["policy"] == sources.recorded("policy", expected["policy"])
    ran = butler("schedule", "run", listed["id"], "--json", env=env)
    assert ran.returncode == 3, ran.stderr
    check(sources, park_context(butler, json.loads(ran.stdout)["park_id"]), expected)
