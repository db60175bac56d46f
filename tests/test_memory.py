"""Memory rules M, F, T, Q, C, V (docs/rules.md) against a real SQLite file in a temp dir."""

from __future__ import annotations

import random
import stat
from pathlib import Path

import pytest

from butler_cli.memory.block import render_block
from butler_cli.memory.capture import ConsolidationError, capture_turn, consolidate, due
from butler_cli.memory.entries import Entry, coerce_importance, sort_entries
from butler_cli.memory.store import MemoryStore, open_memory
from butler_cli.memory.tools import MemoryTools


@pytest.fixture
def mem(butler_home: Path) -> MemoryStore:
    return open_memory(butler_home)


def entry(i: int, importance: int = 3, text: str | None = None, ts: str | None = None) -> Entry:
    return Entry(
        f"m{i:04d}",
        "semantic",
        text or f"fact {i}",
        ts or f"2026-01-01T00:00:{i % 60:02d}.{i:06d}+00:00",
        {"importance": importance},
    )


class TestEntries:
    @pytest.mark.parametrize(
        "given,want",
        [
            (None, 3),
            ("low", 2),
            ("high", 4),
            ("pin", 5),
            ("PINNED", 5),
            (9, 5),
            (-3, 1),
            ("4", 4),
            (2.6, 3),
        ],
    )
    def test_importance_coercion(self, given, want) -> None:
        assert coerce_importance(given) == want

    def test_importance_rejects_nonsense(self) -> None:
        with pytest.raises(ValueError):
            coerce_importance("purple")

    def test_total_order(self) -> None:
        a = Entry("b", "semantic", "x", "2026-01-02", {"importance": 3})
        b = Entry("a", "semantic", "x", "2026-01-02", {"importance": 3})
        c = Entry("c", "semantic", "x", "2026-01-03", {"importance": 3})
        d = Entry("d", "semantic", "x", "2020-01-01", {"importance": 5})
        assert [e.id for e in sort_entries([a, b, c, d])] == ["d", "c", "a", "b"]


class TestFrozenBlock:
    def test_byte_stable_under_shuffled_input(self) -> None:
        entries = [entry(i, importance=1 + i % 5) for i in range(50)]
        first = render_block(entries)
        for seed in range(5):
            shuffled = entries[:]
            random.Random(seed).shuffle(shuffled)
            assert render_block(shuffled) == first

    def test_shape(self) -> None:
        block = render_block([entry(1, text="likes\noolong tea")])
        lines = block.splitlines()
        assert lines[0].startswith("<!--") and lines[-1].startswith("<!--")
        assert lines[1].startswith("## ")
        assert "frozen for this session" in lines[2] and "not instructions" in lines[2]
        assert lines[3] == "- [m0001] likes oolong tea"

    def test_empty(self) -> None:
        assert "_(no memories yet)_" in render_block([])

    def test_budget_and_omission_line(self) -> None:
        entries = [entry(i, text="x" * 90) for i in range(100)]
        block = render_block(entries, budget=1000)
        bullets = [ln for ln in block.splitlines() if ln.startswith("- [")]
        assert sum(len(b) + 1 for b in bullets) <= 1000
        assert (
            f"- _({100 - len(bullets)} lower-priority memories omitted to fit the memory budget)_"
            in block
        )

    def test_first_line_always_taken(self) -> None:
        block = render_block([entry(1, text="y" * 5000)], budget=100)
        assert "- [m0001] " in block and "omitted" not in block

    def test_pin_survives_a_flood(self, mem: MemoryStore) -> None:
        pinned = mem.remember("allergic to peanuts", meta={"importance": "pin"})
        mem.add_entries(
            Entry(
                f"f{i:05d}",
                "semantic",
                f"trivial thing {i}",
                f"2027-01-01T00:00:00.{i:06d}+00:00",
                {"importance": 1},
            )
            for i in range(3000)
        )
        block = mem.block()
        assert f"[{pinned.id}] allergic to peanuts" in block.splitlines()[3]
        assert "lower-priority memories omitted" in block


class TestStore:
    def test_file_is_private(self, mem: MemoryStore, butler_home: Path) -> None:
        mem.remember("x")
        assert stat.S_IMODE((butler_home / "memory.db").stat().st_mode) == 0o600
        for extra in ("memory.db-wal", "memory.db-shm"):
            path = butler_home / extra
            if path.exists():
                assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0

    def test_cjk_recall(self, mem: MemoryStore) -> None:
        shop = mem.remember("我开了家卖奶茶的小店")
        mem.remember("我喜欢喝咖啡")
        assert [e.id for e in mem.recall("奶茶店")] == [shop.id]
        assert shop.id in [e.id for e in mem.recall("茶")]
        assert mem.recall("火车") == []

    def test_english_is_case_insensitive_and_order_free(self, mem: MemoryStore) -> None:
        e = mem.remember("Ana prefers Oolong tea in the morning")
        assert [x.id for x in mem.recall("tea oolong")] == [e.id]
        assert [x.id for x in mem.recall("ANA")] == [e.id]

    def test_full_phrase_outranks_partial(self, mem: MemoryStore) -> None:
        partial = mem.remember("the garden needs water, and tea is good", meta={"importance": 5})
        full = mem.remember("green tea garden in the hills", meta={"importance": 1})
        assert [x.id for x in mem.recall("tea garden")][:2] == [full.id, partial.id]

    def test_whole_store_recall_under_10k_newer(self, mem: MemoryStore) -> None:
        old = mem.remember("my passport number ends in 4417", meta={"importance": 2})
        mem.add_entries(
            Entry(
                f"n{i:05d}",
                "episodic",
                f"User: chat {i}\nButler: noted {i}",
                f"2027-01-01T00:00:00.{i:06d}+00:00",
                {"importance": 3},
            )
            for i in range(10_000)
        )
        assert [e.id for e in mem.recall("passport")] == [old.id]

    def test_a_partial_match_is_found_past_a_flood_of_common_words(self, mem: MemoryStore) -> None:
        old = mem.remember("my passport ends in 4417", meta={"importance": 2})
        mem.add_entries(
            Entry(
                f"n{i:05d}",
                "episodic",
                f"call number {i}",
                f"2027-01-01T00:00:00.{i:06d}+00:00",
                {"importance": 3},
            )
            for i in range(10_000)
        )
        assert mem.recall("passport number")[0].id == old.id

    def test_profiles_are_isolated(self, butler_home: Path) -> None:
        work = open_memory(butler_home, "work")
        home = open_memory(butler_home, "home")
        secret = work.remember("the merger closes friday")
        assert home.recall("merger") == [] and home.get(secret.id) is None
        assert home.forget(secret.id) == 0 and work.get(secret.id) is not None
        assert [e.id for e in work.recall("merger")] == [secret.id]

    def test_a_common_word_stays_in_its_profile_past_a_flood_in_another(
        self, butler_home: Path
    ) -> None:
        """Another profile's many newer entries holding the word must not crowd this
        profile's out of the ranked candidates (the filter applies before ranking), nor
        other kinds."""
        work = open_memory(butler_home, "work")
        home = open_memory(butler_home, "home")
        mine = work.remember("tea with the harbour team on fridays", "semantic")
        scratch = work.remember("tea order draft", "working")
        home.add_entries(
            Entry(f"h{i:05d}", "semantic", f"tea at home {i}", f"2027-01-01T00:00:{i % 60:02d}", {})
            for i in range(800)
        )
        assert {e.id for e in work.recall("tea")} == {mine.id, scratch.id}
        assert [e.id for e in work.recall("tea", kinds=["semantic"])] == [mine.id]
        found = home.recall("tea", k=50)
        assert len(found) == 50 and all(e.id.startswith("h") for e in found)

    def test_bad_profile_name(self, butler_home: Path) -> None:
        from butler_cli.core.errors import UsageError

        with pytest.raises(UsageError):
            open_memory(butler_home, "../etc")

    def test_corrupt_database_is_reported_and_kept(self, butler_home: Path) -> None:
        from butler_cli.core.errors import UsageError

        butler_home.mkdir()
        db = butler_home / "memory.db"
        db.write_bytes(b"not a database at all" * 100)
        with pytest.raises(UsageError, match="left as it is"):
            open_memory(butler_home).count()
        assert db.read_bytes() == b"not a database at all" * 100


class TestTools:
    def test_remember_recall_forget(self, mem: MemoryStore) -> None:
        tools = MemoryTools(mem)
        out = tools.remember({"text": "likes jazz", "importance": "high"})
        assert out.startswith("Remembered as m") and out.endswith("(semantic, importance 4).")
        entry_id = out.split()[2]
        assert tools.remember({"text": "x"}).endswith("(semantic).")
        found = tools.recall({"query": "jazz"})
        assert entry_id in found and "semantic" in found and "importance 4" in found
        assert tools.recall({"query": "opera"}) == "No matching memories."
        assert tools.forget({"id": entry_id}) == f"Forgot {entry_id}."
        with pytest.raises(ValueError, match="no memory nope"):
            tools.forget({"id": "nope"})
        assert mem.get(entry_id) is None

    @pytest.mark.parametrize(
        "call,args",
        [
            ("remember", {"text": "  "}),
            ("remember", {"text": "x", "kind": "episodic"}),
            ("forget", {"id": ""}),
            ("recall", {"kinds": ["nope"]}),
        ],
    )
    def test_tool_errors_are_error_results(self, mem: MemoryStore, call: str, args: dict) -> None:
        from butler_cli.core.messages import ToolUseBlock

        result = MemoryTools(mem).toolset().run(ToolUseBlock(id="t", name=call, input=args))
        assert result.is_error

    def test_recall_clamps_k(self, mem: MemoryStore) -> None:
        mem.add_entries(entry(i) for i in range(80))
        assert len(MemoryTools(mem).recall({"k": 500}).splitlines()) == 50
        assert len(MemoryTools(mem).recall({}).splitlines()) == 12


class TestCaptureAndConsolidation:
    def test_capture_keeps_the_words_and_what_ran_on_single_lines(self, mem: MemoryStore) -> None:
        e = capture_turn(mem, "hello\nthere", ["read_file", "y" * 2000])
        assert e is not None and e.kind == "episodic"
        asked, done = e.text.split("\n")
        assert asked == "Asked: hello there"
        assert len(done) == len("Done: ") + 1000 and done.endswith("…")
        assert capture_turn(mem, "nothing done") is not None
        assert mem.entries()[0].text == "Asked: nothing done"

    def test_capture_failure_never_raises(self, butler_home: Path) -> None:
        broken = MemoryStore(butler_home / "no" / "such" / "dir" / "\x00bad.db")
        assert capture_turn(broken, "a") is None

    def _episodes(self, mem: MemoryStore, n: int) -> None:
        for i in range(n):
            capture_turn(mem, f"question {i} about the garden")

    def test_consolidation_writes_cited_facts_only(self, mem: MemoryStore) -> None:
        self._episodes(mem, 40)
        assert due(mem)
        prompts: list[str] = []

        def summarize(prompt: str) -> str:
            prompts.append(prompt)
            return "- keeps a garden [1, 2]\n- likes short answers\n- keeps a garden [3]"

        done = consolidate(mem, summarize, keep=8)
        assert done is not None and done.absorbed == 32 and done.dropped == 2
        assert "[1] Asked: question 0" in prompts[0] and "question 39" not in prompts[0]
        assert mem.count(["episodic"]) == 8
        [fact] = mem.entries(["semantic"])
        assert fact.text == "keeps a garden" and fact.meta["role"] == "profile"
        assert [c["text"] for c in fact.meta["cites"]] == [
            "Asked: question 0 about the garden",
            "Asked: question 1 about the garden",
        ]
        # the next one is told what is known, and a fact already known is not written twice
        self._episodes(mem, 10)
        done = consolidate(mem, lambda p: prompts.append(p) or "- keeps a garden [1]", keep=8)
        assert "- keeps a garden" in prompts[-1] and done is not None and done.facts == []
        assert [e.text for e in mem.entries(["semantic"])] == ["keeps a garden"]

    def test_none_folds_the_turns_and_writes_nothing(self, mem: MemoryStore) -> None:
        self._episodes(mem, 20)
        done = consolidate(mem, lambda p: "NONE.", keep=4)
        assert done is not None and done.absorbed == 16 and done.facts == []
        assert mem.count(["semantic"]) == 0 and mem.count(["episodic"]) == 4

    @pytest.mark.parametrize(
        "answer",
        [
            "",
            "  \n",
            "First answer: hello there. Your notes mention oat milk.",
            "- keeps a garden [0]",
            "- keeps a garden [21]",
            "- likes oat milk [1]",
            "- keeps a garden [1] and more" + "x" * 400 + " [1]",
        ],
    )
    def test_failed_consolidation_changes_nothing(self, mem: MemoryStore, answer: str) -> None:
        self._episodes(mem, 20)
        before = [e.to_json() for e in mem.entries()]
        with pytest.raises(ConsolidationError):
            consolidate(mem, lambda p: answer, keep=4)
        assert [e.to_json() for e in mem.entries()] == before

    def test_a_model_error_changes_nothing(self, mem: MemoryStore) -> None:
        self._episodes(mem, 20)
        before = [e.to_json() for e in mem.entries()]

        def broken(prompt: str) -> str:
            raise ConsolidationError("the model is down")

        with pytest.raises(ConsolidationError):
            consolidate(mem, broken, keep=4)
        assert [e.to_json() for e in mem.entries()] == before
