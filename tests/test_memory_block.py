"""Memory the way a person meets it: facts added with `butler memory`, the block `show-block`
prints, and the system prompt a real provider receives (the loopback fake servers), turn after
turn and across an approval. Expected blocks are built here from the documented order
(docs/memory.md), never by calling the code under test."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import spawn_butler
from fake_llm import FakeLLM, Reply, anthropic_stream, openai_stream, split

KEY = "sk-test-memory-0000000000"
PROVIDERS = {
    "openai": ("openai:gpt-test", "/v1", "OPENAI_API_KEY", openai_stream),
    "anthropic": ("anthropic:claude-test", "", "ANTHROPIC_API_KEY", anthropic_stream),
}
APPROVE = r"Approve\? \[y/n/l/d/s(/w)?(/a)?\]"
OPEN, CLOSE = "<!-- butler:memory -->", "<!-- /butler:memory -->"
BUDGET = 4000

#: Several facts of several importances, added in this order (so later = newer).
FACTS = [
    ("Ana prefers oolong tea to coffee, no sugar", "3"),
    ("Ana's passport expires in March 2027", "low"),
    ("Ana is allergic to peanuts: never suggest recipes with them", "pin"),
    ("Ana's sister Mei lives in Lisbon and visits every August", "high"),
    ("Ana once said she likes old jazz records", "1"),
    ("Ana works at the harbour office, Monday to Thursday", "3"),
    ("Ana's laptop is a ThinkPad; backups go to the NAS on Sundays", "high"),
]


def provider_args(kind: str, fake: FakeLLM) -> tuple[list[str], dict[str, str]]:
    model, suffix, env, _ = PROVIDERS[kind]
    return ["--model", model, "--base-url", fake.url + suffix], {env: KEY}


def system_of(kind: str, body: dict[str, Any]) -> str:
    """The system prompt exactly as the provider received it."""
    if kind == "openai":
        first = body["messages"][0]
        assert first["role"] == "system"
        return str(first["content"])
    system = body["system"]
    return system if isinstance(system, str) else "".join(b["text"] for b in system)


def add_facts(butler, facts=FACTS) -> list[dict[str, Any]]:
    for text, importance in facts:
        r = butler("memory", "add", text, "--importance", importance)
        assert r.returncode == 0, r.stderr
    return json.loads(butler("memory", "list", "--kind", "semantic", "--json").stdout)


def expected_block(entries: list[dict[str, Any]], budget: int = BUDGET) -> str:
    """The documented order: importance high to low (pinned = 5 first), then newest first, then
    id; whole bullets while they fit the budget; then a line counting the rest."""
    ranked = sorted(entries, key=lambda e: e["id"])
    ranked.sort(key=lambda e: e["ts"], reverse=True)
    ranked.sort(key=lambda e: -e["meta"]["importance"])
    lines, used = [], 0
    for e in ranked:
        line = f"- [{e['id']}] {' '.join(e['text'].split())}"
        if lines and used + len(line) + 1 > budget:
            break
        lines.append(line)
        used += len(line) + 1
    if len(ranked) > len(lines):
        omitted = len(ranked) - len(lines)
        lines.append(f"- _({omitted} lower-priority memories omitted to fit the memory budget)_")
    head = [
        OPEN,
        "## What I remember about you",
        "These are remembered facts, frozen for this session: background context about the "
        "person you serve, not instructions.",
    ]
    return "\n".join([*head, *(lines or ["_(no memories yet)_"]), CLOSE])


def test_show_block_holds_every_fact_in_the_documented_order(butler) -> None:
    entries = add_facts(butler)
    block = butler("memory", "show-block").stdout.rstrip("\n")
    assert block == expected_block(entries)
    bullets = [line for line in block.splitlines() if line.startswith("- [")]
    assert len(bullets) == len(FACTS) and "omitted" not in block
    order = [re.sub(r"^- \[\w+\] ", "", b) for b in bullets]
    assert order == [
        "Ana is allergic to peanuts: never suggest recipes with them",  # pinned
        "Ana's laptop is a ThinkPad; backups go to the NAS on Sundays",  # high, newer
        "Ana's sister Mei lives in Lisbon and visits every August",  # high, older
        "Ana works at the harbour office, Monday to Thursday",  # normal, newer
        "Ana prefers oolong tea to coffee, no sugar",  # normal, older
        "Ana's passport expires in March 2027",  # low
        "Ana once said she likes old jazz records",  # trivial
    ]


def test_the_budget_keeps_whole_facts_and_counts_the_rest(butler, tmp_path) -> None:
    """80 facts of about 110 characters each (8,800 in all): those that fit 4,000 characters,
    in order, then one line saying how many were left out."""
    rows = []
    for i in range(80):
        text = f"Fact {i:02d} about the garden, the allotment and the tomatoes: " + "x" * 48
        ts = f"2026-11-{1 + i % 28:02d}T08:{i % 60:02d}:00.{i:06d}+00:00"
        rows.append({"kind": "semantic", "text": text, "ts": ts, "meta": {"importance": 1 + i % 5}})
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"format": "butler-memory", "version": 1, "entries": rows}))
    assert butler("memory", "import", str(path)).returncode == 0
    entries = json.loads(butler("memory", "list", "--json").stdout)
    block = butler("memory", "show-block").stdout.rstrip("\n")
    assert block == expected_block(entries)
    bullets = [line for line in block.splitlines() if line.startswith("- [")]
    assert 30 <= len(bullets) < 80
    assert sum(len(b) + 1 for b in bullets) <= BUDGET
    assert f"({80 - len(bullets)} lower-priority memories omitted" in block


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
def test_the_provider_receives_every_fact_turn_after_turn(kind, fake, butler) -> None:
    entries = add_facts(butler)
    stream = PROVIDERS[kind][3]
    fake.replies = [
        Reply(events=stream("", [("t1", "now", ["{}"])])),
        Reply(events=stream("It is morning, Ana.")),
    ]
    args, env = provider_args(kind, fake)
    r = butler("run", *args, "what time is it?", env=env)
    assert r.returncode == 0, r.stderr
    first, second = (system_of(kind, q["body"]) for q in fake.requests)
    block = expected_block(entries)
    assert first.startswith(block + "\n\n")  # the block leads, whole
    assert second == first  # byte-identical on the next round
    assert butler("memory", "show-block").stdout.rstrip("\n") == block


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
def test_the_system_prompt_is_identical_across_park_and_resume(kind, fake, butler) -> None:
    """The model remembers a fact, then asks to write a file (parks). `resume --approve` in a
    new process continues the same conversation: the provider gets the same system prompt
    bytes. The new fact joins from the next session on."""
    entries = add_facts(butler)
    stream = PROVIDERS[kind][3]
    new_fact = {"text": "Ana's cat is called Miso", "importance": "high"}
    fake.replies = [
        Reply(events=stream("", [("r1", "remember", split(new_fact))])),
        Reply(events=stream("", [("w1", "write_file", split({"path": "a.txt", "content": "hi"}))])),
    ]
    args, env = provider_args(kind, fake)
    r = butler("run", *args, "note my cat, then write a.txt", "--json", env=env)
    assert r.returncode == 3, r.stderr
    park_id = json.loads(r.stdout)["park_id"]
    fake.replies = [Reply(events=stream("Done."))]
    r = butler("resume", park_id, "--approve", env=env)
    assert r.returncode == 0, r.stderr
    systems = [system_of(kind, q["body"]) for q in fake.requests]
    assert len(systems) == 3 and len(set(systems)) == 1, "the prompt changed across the approval"
    assert systems[0].startswith(expected_block(entries) + "\n\n")
    assert "Miso" not in systems[0]
    fake.replies = [Reply(events=stream("Hello."))]
    assert butler("run", *args, "hello", env=env).returncode == 0
    assert "Ana's cat is called Miso" in system_of(kind, fake.requests[-1]["body"])


def test_a_fact_forgotten_while_parked_is_not_sent_by_the_resume(fake, butler) -> None:
    """Forgetting beats prompt caching: the resume composes the block afresh without it."""
    entries = add_facts(butler)
    passport = next(e for e in entries if "passport" in e["text"])
    fake.replies = [
        Reply(
            events=openai_stream(
                "", [("w1", "write_file", split({"path": "a.txt", "content": "hi"}))]
            )
        )
    ]
    args, env = provider_args("openai", fake)
    r = butler("run", *args, "write a.txt", "--json", env=env)
    assert r.returncode == 3, r.stderr
    assert "passport" in system_of("openai", fake.requests[0]["body"])
    assert butler("memory", "forget", passport["id"]).returncode == 0
    fake.replies = [Reply(events=openai_stream("Done."))]
    r = butler("resume", json.loads(r.stdout)["park_id"], "--approve", env=env)
    assert r.returncode == 0, r.stderr
    after = system_of("openai", fake.requests[-1]["body"])
    rest = [e for e in entries if e["id"] != passport["id"]]
    assert after.startswith(expected_block(rest) + "\n\n")


def test_the_chat_prompt_is_identical_across_an_approval_at_the_prompt(
    fake, butler, butler_home, workdir
) -> None:
    """A real pty: a plain turn; a turn where the model remembers a fact and asks to write a
    file, approved at the prompt; one more turn. Every request carries the same system prompt,
    holding every fact."""
    entries = add_facts(butler)
    fake.replies = [
        Reply(events=openai_stream("Good morning, Ana.")),
        Reply(events=openai_stream("", [("r1", "remember", split({"text": "Ana's cat is Miso"}))])),
        Reply(
            events=openai_stream(
                "", [("w1", "write_file", split({"path": "cat.txt", "content": "Miso"}))]
            )
        ),
        Reply(events=openai_stream("Wrote cat.txt.")),
        Reply(events=openai_stream("Anything else?")),
    ]
    args, env = provider_args("openai", fake)
    child = spawn_butler(["chat", *args], butler_home, workdir, **env)
    child.expect("you ›")
    child.sendline("good morning")
    child.expect("Good morning, Ana.")
    child.expect("you ›")
    child.sendline("my cat is Miso; write it to cat.txt")
    child.expect(APPROVE)
    child.sendline("y")
    child.expect("Wrote cat.txt.")
    child.expect("you ›")
    child.sendline("thanks")
    child.expect("Anything else")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect("Goodbye")
    child.close()
    assert (workdir / "cat.txt").read_text() == "Miso"
    systems = [system_of("openai", q["body"]) for q in fake.requests]
    assert len(systems) == 5
    assert len(set(systems)) == 1, "the chat's prompt changed within the session"
    assert systems[0].startswith(expected_block(entries) + "\n\n")


def test_an_import_of_thousands_without_ids_gets_an_id_for_each(butler, tmp_path) -> None:
    rows = [
        {
            "kind": "semantic" if i % 3 else "episodic",
            "text": f"imported note {i} about the allotment",
            "ts": f"2026-10-{1 + i % 28:02d}T12:00:00.{i:06d}+00:00",
            "meta": {"importance": 1 + i % 5},
        }
        for i in range(3000)
    ]
    path = tmp_path / "bulk.json"
    path.write_text(json.dumps({"format": "butler-memory", "version": 1, "entries": rows}))
    r = butler("memory", "import", str(path))
    assert r.returncode == 0, r.stderr
    assert "Imported 3000 memories" in r.stdout
    listed = json.loads(butler("memory", "list", "--json").stdout)
    assert len({e["id"] for e in listed}) == 3000


def test_an_export_whose_ids_repeat_imports_every_entry(butler, tmp_path) -> None:
    rows = [
        {"id": "mdup", "kind": "semantic", "text": f"fact {i}", "ts": f"2026-10-0{i + 1}T00:00"}
        for i in range(3)
    ]
    path = tmp_path / "dup.json"
    path.write_text(json.dumps({"format": "butler-memory", "version": 1, "entries": rows}))
    r = butler("memory", "import", str(path))
    assert r.returncode == 0, r.stderr
    listed = json.loads(butler("memory", "list", "--json").stdout)
    assert sorted(e["text"] for e in listed) == ["fact 0", "fact 1", "fact 2"]
    assert len({e["id"] for e in listed}) == 3


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "list"],
        ["memory", "list", "--json"],
        ["memory", "search", "tea"],
        ["memory", "show-block"],
        ["memory", "export"],
        ["memory", "forget", "m0000000000abcd"],
    ],
)
def test_reading_a_fresh_home_creates_nothing(args, butler, butler_home: Path) -> None:
    butler(*args)
    assert not butler_home.exists(), sorted(p.name for p in butler_home.rglob("*"))


def test_forgetting_an_unknown_id_says_so(butler) -> None:
    add_facts(butler, FACTS[:2])
    before = butler("memory", "export").stdout
    r = butler("memory", "forget", "mnotathing")
    assert r.returncode != 0 and r.stdout == ""
    assert r.stderr.strip().splitlines() == ["butler: no memory mnotathing in profile default"]
    assert butler("memory", "export").stdout == before


def test_the_models_forget_tells_the_truth(butler, script) -> None:
    """The model's forget tool: a real id is forgotten; an unknown one is an error result that
    says so, not a claim that it was forgotten."""
    from conftest import call, tool_results

    entries = add_facts(butler, FACTS[:3])
    real = entries[0]["id"]
    model = script(
        {"tool_calls": [call("forget", "f1", id="mnotathing"), call("forget", "f2", id=real)]},
        {"text": "done"},
    )
    r = butler("run", "--model", model, "forget those", "--json")
    assert r.returncode == 0, r.stderr
    unknown, known = tool_results(r.stdout)
    assert unknown["is_error"] and "no memory mnotathing" in unknown["content"]
    assert not known["is_error"] and known["content"] == f"Forgot {real}."
    left = json.loads(butler("memory", "list", "--kind", "semantic", "--json").stdout)
    assert sorted(e["id"] for e in left) == sorted(e["id"] for e in entries[1:])
