"""Conversations you can find again: every `run` task and every chat is saved, listed by
`butler log`, searched (CJK too), shown, continued with `chat -c` / `--conversation` /
`/continue`; a parked turn's outcome joins its conversation whoever decides it."""

from __future__ import annotations

import json
import sqlite3
import stat

import pexpect
from conftest import call, imported_before_prompt, spawn_butler

NOTE = "Groceries and errands for the week.\n" + "- oat milk, rye bread, lemons\n" * 120


def _notes(workdir, n: int = 3) -> None:
    for i in range(n):
        (workdir / f"note{i}.md").write_text(f"# Note {i}\n{NOTE}", encoding="utf-8")


def _reading_script(script, answer: str) -> str:
    """A realistic task: three files read (a few KiB each), then an answer."""
    return script(
        {"text": "Reading your notes.", "tool_calls": [call("read_file", path="note0.md")]},
        {"tool_calls": [call("read_file", path="note1.md"), call("read_file", path="note2.md")]},
        {"text": answer},
    )


def _log(butler, *args: str) -> list[dict]:
    done = butler("log", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _show(butler, cid: str) -> dict:
    done = butler("log", "show", cid, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_every_run_task_is_a_conversation_listed_latest_first(
    butler, script, workdir, butler_home
) -> None:
    _notes(workdir)
    for word in ("alpha", "bravo", "charlie"):
        done = butler("run", "--model", _reading_script(script, f"Summary {word}."), f"task {word}")
        assert done.returncode == 0, done.stderr
    listed = _log(butler)
    assert [c["title"] for c in listed] == ["task charlie", "task bravo", "task alpha"]
    first = listed[0]
    assert first["id"].startswith("c-") and len(first["id"]) == 8
    assert first["kind"] == "run" and first["status"] == "done" and first["turns"] == 1
    assert first["cwd"] == str(workdir) and first["policy"] == "ask"
    assert first["model"].startswith("scripted:")
    assert [c["title"] for c in _log(butler, "-n", "2")] == ["task charlie", "task bravo"]
    whole = _show(butler, first["id"][:5])  # a unique prefix is enough
    assert whole["id"] == first["id"]
    assert len(whole["messages"]) == 6  # task, 2 calls + results, answer
    results = [b for m in whole["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert len(results) == 3 and "oat milk" in results[0]["content"]
    text = butler("log", "show", first["id"]).stdout
    assert "you: task charlie" in text and "butler: Summary charlie." in text
    assert "→ read_file" in text
    db = butler_home / "conversations.db"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reading_commands_on_a_fresh_home_create_nothing(butler, butler_home) -> None:
    assert butler("log").stdout == "No conversations yet.\n"
    assert butler("log", "-q", "anything", "--json").stdout.strip() == "[]"
    missing = butler("log", "show", "c-abcdef")
    assert missing.returncode == 2 and "no conversation with id 'c-abcdef'" in missing.stderr
    assert not butler_home.exists()


def test_search_finds_words_and_cjk_inside_a_sentence(butler, script, workdir) -> None:
    _notes(workdir)
    tasks = {
        "我开了家卖奶茶的小店，帮我想想周末的菜单": "周末可以试试黑糖珍珠和桂花乌龙。",
        "Plan the garden: tomatoes and basil": "Plant the basil next to the tomatoes.",
        "東京の天気を教えて": "明日は晴れです。",
    }
    for task, answer in tasks.items():
        assert butler("run", "--model", _reading_script(script, answer), task).returncode == 0

    def titles(query: str) -> list[str]:
        return [c["title"] for c in _log(butler, "-q", query)]

    assert titles("奶茶") == [next(iter(tasks))]  # a word inside a run of Chinese
    assert titles("乌龙") == [next(iter(tasks))]  # found in the answer too
    assert titles("天気") == ["東京の天気を教えて"]
    assert titles("BASIL tomatoes") == ["Plan the garden: tomatoes and basil"]
    assert len(titles("oat milk")) == 3  # what the tools returned is searched too
    assert titles("咖啡") == [] and titles("basil 奶茶") == []
    assert "match" not in butler("log", "-q", '"unbalanced OR ( NEAR').stderr.lower()


def test_a_parked_run_links_its_park_and_the_decision_joins_it(butler, script) -> None:
    model = script(
        {"text": "Writing it.", "tool_calls": [call("write_file", path="plan.txt", content="x")]},
        {"text": "Your plan is written."},
    )
    assert butler("run", "--model", model, "write my plan").returncode == 3
    [conv] = _log(butler)
    park = conv["park"]
    assert conv["status"] == "parked" and park
    assert f"park {park}: waiting" in butler("log", "show", conv["id"]).stdout
    done = butler("resume", park, "--approve", "--output", "stream-json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert {e["conversation"] for e in events} == {conv["id"]}  # the stream names it
    whole = _show(butler, conv["id"])
    assert whole["status"] == "done" and whole["turns"] == 1
    assert whole["parks"] == [{"park": park, "base": 0, "decision": "approved", "outcome": "done"}]
    said = [b.get("text") for m in whole["messages"] for b in m["content"]]
    assert said[0] == "write my plan" and said[-1] == "Your plan is written."


def test_run_json_and_stream_name_the_conversation_log_lists(butler, script) -> None:
    done = butler("run", "--model", script({"text": "hi"}), "a", "--output", "json")
    assert json.loads(done.stdout)["conversation"] == _log(butler)[0]["id"]


def test_conversation_and_park_ids_never_clash(butler, script) -> None:
    model = script({"tool_calls": [call("write_file", path="p.txt", content="x")]})
    butler("run", "--model", model, "write")
    [conv] = _log(butler)
    wrong = butler("log", "show", conv["park"])
    assert wrong.returncode == 2 and "is not a conversation id" in wrong.stderr
    resumed = butler("resume", conv["id"], "--approve")
    assert resumed.returncode != 0 and "is a conversation id, not a park id" in resumed.stderr
    assert f"butler chat --conversation {conv['id']}" in resumed.stderr
    assert _log(butler)[0]["status"] == "parked"  # nothing was decided


def test_log_show_and_the_listing_neutralise_what_the_model_wrote(butler, script) -> None:
    hostile = "Done.\x1b]0;owned\x07\x1b[2J\u202eevil\r\nnext line"
    butler("run", "--model", script({"text": hostile}), "title\x1b[31mred\u200b")
    shown = butler("log", "show", _log(butler)[0]["id"]).stdout
    listing = butler("log").stdout
    for out in (shown, listing):
        assert "\x1b" not in out and "\u202e" not in out and "\u200b" not in out
    assert "\\u001b]0;owned\\u0007" in shown and "<U+202E>evil" in shown
    assert "title\\u001b[31mred<U+200B>" in listing


# -- the chat, on a real terminal -------------------------------------------------------------


def _chat(args, butler_home, workdir, model):
    child = spawn_butler(["chat", "--model", model, *args], butler_home, workdir)
    return child


def _leave(child) -> None:
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect("Goodbye")
    child.expect(pexpect.EOF)


def test_chat_continue_carries_on_the_folders_last_conversation(
    butler, script, workdir, butler_home, tmp_path
) -> None:
    model = script(
        {"text": "Noted: your sister is called Ana."},
        {"text": "Second answer, after one earlier turn."},
    )
    child = _chat([], butler_home, workdir, model)
    child.expect("you ›")
    child.sendline("my sister is Ana")
    child.expect("Noted: your sister")
    _leave(child)
    other = tmp_path / "elsewhere"
    other.mkdir()
    elsewhere = _chat([], butler_home, other, script({"text": "Other folder."}))
    elsewhere.expect("you ›")
    elsewhere.sendline("unrelated")
    elsewhere.expect("Other folder")
    _leave(elsewhere)

    child = _chat(["-c"], butler_home, workdir, model)
    child.expect("Continuing c-")
    child.expect("you: my sister is Ana")
    child.expect("butler: Noted: your sister is called Ana.")
    child.expect("you ›")
    child.sendline("who is Ana?")
    # the scripted model answers turn 2 only if the earlier turn was sent with this one
    child.expect("Second answer, after one earlier turn.")
    _leave(child)
    mine = [c for c in _log(butler) if c["cwd"] == str(workdir)]
    assert len(mine) == 1 and mine[0]["turns"] == 2 and mine[0]["kind"] == "chat"


def test_chat_continue_an_unknown_conversation_stops_before_the_prompt(
    butler_home, workdir, script
) -> None:
    child = _chat(["--conversation", "c-zzzzzz"], butler_home, workdir, script({"text": "x"}))
    child.expect("no conversation with id 'c-zzzzzz'")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 2


def test_chat_lists_and_continues_a_conversation_by_id(butler, script, workdir, butler_home):
    model = script({"text": "Ran the earlier task."})
    assert butler("run", "--model", model, "the earlier 任务").returncode == 0
    cid = _log(butler)[0]["id"]
    child = _chat([], butler_home, workdir, script({"text": "x"}, {"text": "Carried on."}))
    child.expect("you ›")
    child.sendline("/conversations")
    child.expect(cid)
    child.expect("the earlier 任务")
    child.expect("you ›")
    child.sendline(f"/continue {cid}")
    child.expect(f"Continuing {cid}")
    child.expect("butler: Ran the earlier task.")
    child.expect("you ›")
    child.sendline("and then?")
    child.expect("Carried on.")  # turn 2 of the script: the earlier turn was sent
    _leave(child)
    assert _log(butler)[0]["turns"] == 2 and len(_log(butler)) == 1


def test_the_recap_neutralises_what_the_model_wrote(butler, script, workdir, butler_home):
    butler("run", "--model", script({"text": "Hi\x1b]0;owned\x07\u202eevil"}), "greet me")
    child = _chat(["-c"], butler_home, workdir, script({"text": "x"}))
    child.expect("you ›")
    recap = child.before
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    assert "butler: Hi\\u001b]0;owned\\u0007<U+202E>evil" in recap
    assert "\x1b]0;owned" not in recap


def test_a_turn_left_parked_in_the_chat_joins_once_decided_elsewhere(
    butler, script, workdir, butler_home
) -> None:
    model = script(
        {"text": "Writing.", "tool_calls": [call("write_file", path="a.txt", content="x")]},
        {"text": "Written as you approved."},
    )
    child = _chat([], butler_home, workdir, model)
    child.expect("you ›")
    child.sendline("write a.txt")
    child.expect(r"Approve\?")
    child.sendline("l")
    _leave(child)
    [conv] = _log(butler)
    assert conv["status"] == "parked"
    assert butler("resume", conv["park"], "--approve").returncode == 0
    whole = _show(butler, conv["id"])
    assert whole["parks"][0]["decision"] == "approved" and whole["status"] == "done"
    said = [b.get("text") for m in whole["messages"] for b in m["content"]]
    assert said[0] == "write a.txt" and said[-1] == "Written as you approved."


def test_the_plain_chat_opens_no_conversation_store_before_its_first_prompt(
    butler_home, workdir, script
) -> None:
    child = spawn_butler(
        [], butler_home, workdir, PYTHONPROFILEIMPORTTIME="1", BUTLER_MODEL=script({"text": "x"})
    )
    imported = imported_before_prompt(child)
    assert "prompt_toolkit" in imported
    assert not imported & {"sqlite3", "butler_cli.store.conversations", "butler_cli.app.chat.chat"}


def test_a_turn_approved_inline_is_saved_once_and_carries_on(
    butler, script, workdir, butler_home
) -> None:
    """Decided in the chat itself: the outcome is appended once (not again by the turn), so
    the saved conversation is exactly what the model was sent, and `-c` goes on from it."""
    model = script(
        {"text": "Writing.", "tool_calls": [call("write_file", path="a.txt", content="x")]},
        {"text": "Written."},
        {"text": "Third turn: the whole conversation came back."},
    )
    child = _chat([], butler_home, workdir, model)
    child.expect("you ›")
    child.sendline("write a.txt")
    child.expect(r"Approve\?")
    child.sendline("y")
    child.expect("Written.")
    _leave(child)
    [conv] = _log(butler)
    whole = _show(butler, conv["id"])
    roles = [m["role"] for m in whole["messages"]]
    assert roles == ["user", "assistant", "user", "assistant"]  # once, in order
    assert whole["turns"] == 1 and whole["parks"][0]["decision"] == "approved"
    child = _chat(["-c"], butler_home, workdir, model)
    child.expect("you ›")
    child.sendline("and now?")
    child.expect("Third turn: the whole conversation came back.")
    _leave(child)
    assert len(_show(butler, conv["id"])["messages"]) == 6


def test_run_continue_carries_a_conversation_on_in_one_shot(butler, workdir, fake) -> None:
    """`butler run -c "…"` (llm -c, claude -c -p): the provider receives the earlier turns, the
    task joins that conversation; `--conversation ID` picks one from anywhere."""
    from fake_llm import Reply, openai_stream

    fake.replies = [Reply(events=openai_stream(f"answer {n}")) for n in range(1, 5)]
    args = ["--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
    env = {"OPENAI_API_KEY": "sk-test-123456789"}
    assert butler("run", *args, "my cat is Miso", env=env).returncode == 0
    [first] = _log(butler)
    r = butler("run", "-c", *args, "what is my cat called?", env=env)
    assert r.returncode == 0, r.stderr
    sent = [m["content"] for m in fake.requests[1]["body"]["messages"] if m["role"] != "system"]
    assert sent[0] == "my cat is Miso" and sent[-1] == "what is my cat called?"
    assert "answer 1" in json.dumps(sent)
    [listed] = _log(butler)  # the same conversation, one turn longer
    assert listed["id"] == first["id"] and listed["turns"] == 2
    elsewhere = workdir / "elsewhere"
    elsewhere.mkdir()
    r = butler(
        "run", "--conversation", first["id"][:5], *args, "and her age?", env=env, cwd=elsewhere
    )
    assert r.returncode == 0, r.stderr
    assert len([m for m in fake.requests[2]["body"]["messages"] if m["role"] == "user"]) == 3
    r = butler("run", "-c", *args, "fresh start", env=env, cwd=elsewhere)  # none in that folder
    assert r.returncode == 0 and "starts a new one" in r.stderr
    assert len(_log(butler)) == 2
    r = butler("run", "--conversation", "c-nosuch", *args, "x", env=env)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    r = butler("run", "-c", *args, "--each", "one", "two", env=env)
    assert r.returncode == 2 and "one task at a time" in r.stderr
