"""Recall finds what a person means, through the installed `butler`: stemmed words, stop words
left out, CJK inside a sentence, a memory's date, every match ranked (no window of the newest),
and stores made by an older butler re-indexed on first use without losing a row."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

from conftest import call, tool_results

from butler_cli.memory.entries import Entry
from butler_cli.memory.ranking import EXPAND_BUDGET, Ranker
from butler_cli.memory.store import open_memory
from butler_cli.memory.tools import MemoryTools

OLD = Path(__file__).parent / "old_stores"


def _import(butler, tmp_path: Path, entries: list[dict], profile: str = "default") -> None:
    path = tmp_path / f"import-{profile}.json"
    data = {"format": "butler-memory", "version": 1, "profile": profile, "entries": entries}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    done = butler("memory", "import", str(path), "--profile", profile)
    assert done.returncode == 0, done.stderr


def _entry(i: int, text: str, ts: str, kind: str = "semantic") -> dict:
    return {"id": f"m00test{i:06d}", "kind": kind, "text": text, "ts": ts, "meta": {}}


def _search(butler, query: str, *args: str) -> list[dict]:
    done = butler("memory", "search", query, "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _many(n: int, start: int = 0) -> list[dict]:
    """Realistic neighbours: a person's everyday facts, none about what the tests look for."""
    topics = ["the dentist moved to Tuesday", "rye bread and lemons from the market",
              "the train to Porto leaves at nine", "Mei's birthday dinner at the harbour",
              "the printer needs a new cartridge", "yoga class on Thursday evenings"]  # fmt: skip
    return [
        _entry(start + i, f"Note {i}: {topics[i % len(topics)]}", f"2026-03-{1 + i % 28:02d}T10:00:00+00:00")
        for i in range(n)
    ]  # fmt: skip


def test_a_stemmed_word_finds_its_other_forms(butler, tmp_path) -> None:
    _import(
        butler,
        tmp_path,
        [
            *_many(40),
            _entry(900, "Ana adopted two puppies from the shelter", "2025-06-01T09:00:00+00:00"),
        ],
    )
    found = _search(butler, "adopting a puppy")
    assert found and found[0]["text"] == "Ana adopted two puppies from the shelter"
    assert _search(butler, "peanut") == []
    butler("memory", "add", "Ana is allergic to peanuts")
    assert [e["text"] for e in _search(butler, "peanut allergy")][:1] == [
        "Ana is allergic to peanuts"
    ]


def test_stop_words_do_not_outrank_the_words_that_matter(butler, tmp_path) -> None:
    chatter = [
        _entry(i, "What did you do? What did you do all day?", f"2026-02-01T10:{i:02d}:00+00:00", "episodic")
        for i in range(3)
    ]  # fmt: skip
    evidence = _entry(
        900, "Caroline joined a pottery workshop last week", "2025-05-01T10:00:00+00:00"
    )
    _import(butler, tmp_path, [*chatter, evidence, *_many(50, 100)])
    found = _search(butler, "What did Caroline do at the workshop?", "-k", "3")
    assert found[0]["text"] == evidence["text"]
    butler("memory", "add", "The Who played at the harbour")
    assert _search(butler, "the who")[0]["text"] == "The Who played at the harbour"


def test_cjk_still_matches_inside_a_sentence_beside_stemmed_english(butler, tmp_path) -> None:
    shop = _entry(900, "我开了家卖奶茶的小店, three recipes so far", "2025-01-01T10:00:00+00:00")
    other = _entry(901, "recipe book", "2025-01-02T10:00:00+00:00")
    _import(butler, tmp_path, [*_many(20), shop, other])
    assert _search(butler, "奶茶")[0]["text"] == shop["text"]
    assert _search(butler, "奶茶 recipe")[0]["text"] == shop["text"]  # holds both, stemmed
    assert _search(butler, "火车") == []


def test_a_memory_is_found_by_its_date_and_shows_it(butler, tmp_path) -> None:
    _import(
        butler,
        tmp_path,
        [*_many(30), _entry(900, "Signed the lease for the flat", "2023-05-08T13:56:00+00:00")],
    )
    for query in ("May 2023", "what happened on 8 May 2023", "2023-05-08"):
        assert _search(butler, query, "-k", "3")[0]["text"] == "Signed the lease for the flat", (
            query
        )
    shown = butler("memory", "search", "lease").stdout
    assert "2023-05-08" in shown and "importance 3" in shown


def test_an_old_best_match_is_found_past_hundreds_of_newer_matches(butler, tmp_path) -> None:
    """Every match is ranked: the oldest memory holding the word, and the best match for it,
    is found behind 700 newer memories that also hold it (it was outside the 500 newest)."""
    best = _entry(0, "passport", "2020-01-01T00:00:00+00:00")
    newer = [
        _entry(1 + i, f"Reminder {i}: renew the passport photos, book the office, pay the fee and bring copies", f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00.{i:06d}+00:00")
        for i in range(700)
    ]  # fmt: skip
    _import(butler, tmp_path, [best, *newer])
    assert _search(butler, "passport", "-k", "1")[0]["id"] == best["id"]


def test_log_search_is_stemmed_and_ignores_stop_words(butler, script) -> None:
    answer = script({"text": "Plant the basil next to the tomatoes."})
    assert butler("run", "--model", answer, "Plan the garden: tomatoes and basil").returncode == 0
    answer = script({"text": "周末可以试试黑糖珍珠和桂花乌龙。"})
    assert butler("run", "--model", answer, "我开了家卖奶茶的小店 recipes").returncode == 0

    def titles(query: str) -> list[str]:
        done = butler("log", "-q", query, "--json")
        assert done.returncode == 0, done.stderr
        return [c["title"] for c in json.loads(done.stdout)]

    assert titles("what did we plant in the garden") == ["Plan the garden: tomatoes and basil"]
    assert titles("奶茶 recipe") == ["我开了家卖奶茶的小店 recipes"]
    assert titles("tomato planting") == ["Plan the garden: tomatoes and basil"]


def test_stores_made_by_an_older_butler_are_reindexed_and_lose_nothing(butler, butler_home) -> None:
    butler_home.mkdir(parents=True, exist_ok=True)
    for name in ("memory.db", "conversations.db"):
        shutil.copy(OLD / name, butler_home / name)
        (butler_home / name).chmod(0o600)
    listed = json.loads(butler("memory", "list", "--json").stdout)
    assert len(listed) == 8
    for entry in listed:  # every row is there, and found by its own words
        assert entry["id"] in [e["id"] for e in _search(butler, entry["text"], "-k", "3")]
    assert _search(butler, "adopt a puppy")[0]["id"] == "m00old0000"  # stemmed now
    assert _search(butler, "奶茶")[0]["id"] == "m00old0001"
    assert _search(butler, "May 2023")  # dated now
    work = json.loads(butler("memory", "list", "--json", "--profile", "work").stdout)
    assert [e["id"] for e in work] == ["m00oldw0001"]
    done = butler("log", "--json")
    assert len(json.loads(done.stdout)) == 3, done.stderr
    found = json.loads(butler("log", "-q", "adopting puppies", "--json").stdout)
    assert [c["title"] for c in found] == ["Which puppies did we adopt?"]
    assert json.loads(butler("log", "-q", "奶茶", "--json").stdout)
    again = json.loads(butler("memory", "list", "--json").stdout)  # a second open: same rows
    assert again == listed


def test_the_model_is_told_how_to_query_and_gets_dates_and_importance(butler, script) -> None:
    spec = next(t for t in MemoryTools(None).toolset().specs() if t.name == "recall")  # type: ignore[arg-type]
    assert "names" in spec.description and "dates" in spec.description
    assert "ignored" in spec.input_schema["properties"]["query"]["description"]
    butler("memory", "add", "Ana adopted two puppies from the shelter", "--importance", "high")
    model = script(
        {"tool_calls": [call("recall", query="When did Ana adopt the puppy?")]}, {"text": "ok"}
    )
    done = butler("run", "--model", model, "When did I adopt?", "--json")
    assert done.returncode == 0, done.stderr
    [result] = tool_results(done.stdout)
    text = str(result["content"])
    assert "Ana adopted two puppies" in text and "importance 4" in text
    assert datetime.now(UTC).strftime("%Y-%m-%d") in text


def test_an_irregular_form_or_a_family_word_finds_the_other(butler, tmp_path) -> None:
    """The Porter stemmer cannot tell ``buy`` from ``bought`` or ``kids`` from ``children``:
    a question in one form finds a memory in the other, ahead of shorter memories that only
    share the name."""
    about_ana = ["Ana likes bikes", "Ana cycles", "Ana has a cat", "Ana sings", "Ana reads"]
    _import(
        butler,
        tmp_path,
        [
            *_many(60),
            *(_entry(920 + i, t, "2025-06-05T09:00:00+00:00") for i, t in enumerate(about_ana)),
            _entry(901, "Ana bought a second-hand cargo bike for the school run with the twins",
                   "2025-06-01T09:00:00+00:00"),
            _entry(902, "Ana said both of her children start school in September this year",
                   "2025-06-02T09:00:00+00:00"),
        ],
    )  # fmt: skip
    found = _search(butler, "What did Ana buy?")
    assert found and found[0]["text"].startswith("Ana bought"), found[:3]
    found = _search(butler, "How many kids does Ana have?")
    assert found and found[0]["text"].startswith("Ana said both of her children"), found[:3]


def test_a_named_person_outranks_the_same_words_about_someone_else(butler, tmp_path) -> None:
    """A name in the question is who it is about: a memory naming that person comes before
    the same words said of another, even when the person is named in many memories."""
    carla = [_entry(940 + i, f"Carla note {i}", "2025-06-01T09:00:00+00:00") for i in range(20)]
    _import(
        butler,
        tmp_path,
        [
            *_many(60),
            *carla,
            _entry(910, "Bruno painted boats in the harbour", "2025-06-01T09:00:00+00:00"),
            _entry(930, "Carla painted boats", "2025-05-01T09:00:00+00:00"),
        ],
    )
    found = _search(butler, "What did Carla paint at the harbour?")
    assert found and found[0]["text"] == "Carla painted boats", found[:3]


def test_a_memory_that_begins_with_the_named_person_comes_before_one_that_mentions_them(
    butler, tmp_path
) -> None:
    """Who a question asks about is who a memory begins with: the turn Caroline said
    ("Caroline: …") or a fact about her ("Caroline painted …") comes before the same words in
    a newer memory that only mentions her."""
    _import(
        butler,
        tmp_path,
        [
            _entry(910, "Caroline painted a sunset over the lake", "2025-06-01T09:00:00+00:00"),
            *_many(60),
            _entry(920, "Melanie painted a sunset for Caroline", "2025-07-01T09:00:00+00:00"),
            *_many(60, 100),
            _entry(930, "Melanie: I saw Caroline painting the sunset", "2025-08-01T09:00:00+00:00"),
        ],
    )
    found = _search(butler, "What did Caroline paint?", "-k", "3")
    assert found and found[0]["text"] == "Caroline painted a sunset over the lake", found


def test_expansion_words_stay_within_their_budget_on_a_large_store(tmp_path) -> None:
    """Query expansion searches the best matches' shared words, but never so many memories
    that scoring them costs more than the query: on a store where each shared word is held
    by 400 memories, the words chosen together are held by at most EXPAND_BUDGET."""
    store = open_memory(tmp_path)
    shared = ["harbour", "lantern", "orchard", "violin", "meadow"]
    entries = [
        Entry(f"m{i:07d}", "semantic", f"note {i} about the {shared[i % 5]}", "2025-01-01T00:00:00+00:00", {})
        for i in range(2000)
    ]  # fmt: skip
    store.add_entries(entries)
    ranker = Ranker(store.reader, None, 2000)
    chosen = ranker.expansion(dict.fromkeys(shared, 2))
    assert chosen and sum(chosen.values()) <= EXPAND_BUDGET, chosen


def test_the_reply_to_the_best_match_is_found_past_hundreds_that_match_its_word_better(
    butler, tmp_path
) -> None:
    """A conversation's next turn shares its subject: Mei's reply after Ana's turn about the
    lantern festival is lifted by it, even when 300 other memories hold "lantern" more often
    (the 400 best by bm25 are fused and lifted, not 200)."""
    shop = [
        _entry(i, f"Ben: the lantern shop sold lantern number {i}", "2025-01-01T00:00:00+00:00", "episodic")
        for i in range(300)
    ]  # fmt: skip
    ana = "Ana: we went to the harbour lantern festival"
    mei = (
        "Mei: my favourite part was the paper boats we floated there, I kept one on my desk, "
        "lantern and all, and the fireworks after"
    )
    _import(
        butler,
        tmp_path,
        [
            *shop,
            _entry(900, ana, "2025-02-01T00:00:00+00:00", "episodic"),
            _entry(901, mei, "2025-02-01T00:00:01+00:00", "episodic"),
        ],
    )
    found = [e["text"] for e in _search(butler, "the harbour lantern festival", "-k", "5")]
    assert found[0] == ana and mei in found, found
