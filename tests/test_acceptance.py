"""The loop's acceptance cases 1–15 (docs/rules.md), against real park files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import ForeverModel, Harness, ListModel, Recorder, say, tool_results, tools, use

from butler_cli.core.errors import ToolsetError
from butler_cli.core.gate import Gate
from butler_cli.core.messages import ToolUseBlock
from butler_cli.core.outcomes import NO_DECISION_NOTE, declined_message
from butler_cli.core.park import Decision
from butler_cli.core.toolsets import FunctionToolset, Toolbox, ToolSpec
from butler_cli.core.verdicts import allow, approve, refuse

DESTRUCTIVE = approve("destructive — deletes an agent")


def policy_of(**verdicts: Any):
    def classify(name: str, args: dict[str, Any]) -> Any:
        return verdicts.get(name)

    return classify


def test_case_1_benign_round_then_text(butler_home: Path) -> None:
    rec = Recorder()
    model = ListModel([tools(use("echo", "c1", msg="hi")), say("done")])
    h = Harness(butler_home, model, [rec.echo_toolset(), rec.gate()])
    out = h.run()
    assert (out.status, out.text) == ("done", "done")
    assert rec.ran == [("echo", {"msg": "hi"})]
    assert tool_results(out) == [
        {
            "type": "tool_result",
            "tool_use_id": "c1",
            "content": "echoed hi",
            "is_error": False,
            "outcome": "ran",
        }
    ]


def park_delete(butler_home: Path, rec: Recorder, after: str = "mailer is gone") -> Harness:
    model = ListModel([tools(use("delete_agent", "d1", handle="mailer")), say(after)])
    return Harness(
        butler_home,
        model,
        [rec.echo_toolset(), rec.gate(policy=policy_of(delete_agent=DESTRUCTIVE))],
    )


def test_case_2_approve_verdict_parks_before_any_side_effect(butler_home: Path) -> None:
    rec = Recorder()
    h = park_delete(butler_home, rec)
    out = h.run()
    assert out.status == "parked" and out.park_id
    state = h.store.load(out.park_id)
    assert [c.name for c in state.calls] == ["delete_agent"]
    assert state.approval.tool == "delete_agent"
    assert "destructive" in state.approval.reason
    assert state.approval.title == 'delete_agent({"handle":"mailer"})'
    assert rec.ran == []


def test_case_3_resume_approved_runs_exactly_once_after_resume(butler_home: Path) -> None:
    rec = Recorder()
    h = park_delete(butler_home, rec)
    park_id = h.run().park_id
    assert rec.ran == []
    out = h.resume(park_id, {"approved": True})
    assert (out.status, out.text) == ("done", "mailer is gone")
    assert rec.ran == [("delete_agent", {"handle": "mailer"})]
    assert h.store.load(park_id).status == "resolved"


def test_case_4_denied_with_note_model_sees_it(butler_home: Path) -> None:
    rec = Recorder()
    h = park_delete(butler_home, rec, after="ok, kept it")
    park_id = h.run().park_id
    out = h.resume(park_id, {"approved": False, "note": "too risky"})
    assert out.text == "ok, kept it"
    assert rec.ran == []
    [result] = tool_results(out)
    assert result["is_error"] is True
    assert result["content"] == (
        "Not executed — you declined this action (fail-closed): too risky."
    )


@pytest.mark.parametrize("raw", [None, {}, {"approved": "yes"}, "approve", {"approved": 1}])
def test_case_5_missing_or_malformed_decision_is_a_denial(butler_home: Path, raw: object) -> None:
    rec = Recorder()
    h = park_delete(butler_home, rec)
    out = h.resume(h.run().park_id, raw)
    assert rec.ran == []
    [result] = tool_results(out)
    assert "no decision recorded — failing closed" in result["content"]


def test_case_6_refuse_runs_nothing_and_does_not_park(butler_home: Path) -> None:
    rec = Recorder()
    model = ListModel([tools(use("delete_agent", "d1", handle="mailer")), say("understood")])
    gate = rec.gate(policy=policy_of(delete_agent=refuse("out of scope")))
    out = Harness(butler_home, model, [gate]).run()
    assert out.status == "done" and out.park_id is None
    assert rec.ran == []
    [result] = tool_results(out)
    assert result == {
        "type": "tool_result",
        "tool_use_id": "d1",
        "content": "Refused (not run): out of scope.",
        "is_error": True,
        "outcome": "refused",  # a field, never parsed back from the text
    }


def mixed_round(butler_home: Path, rec: Recorder) -> Harness:
    model = ListModel(
        [tools(use("echo", "e1", msg="before"), use("delete_agent", "d1", handle="x")), say("fin")]
    )
    gate = rec.gate(policy=policy_of(delete_agent=DESTRUCTIVE))
    return Harness(butler_home, model, [rec.echo_toolset(), gate])


def test_case_7_benign_sibling_is_deferred_and_then_runs(butler_home: Path) -> None:
    rec = Recorder()
    h = mixed_round(butler_home, rec)
    out = h.run()
    assert out.status == "parked" and rec.ran == []
    assert [c.name for c in h.store.load(out.park_id).calls] == ["echo", "delete_agent"]
    h.resume(out.park_id, {"approved": True})
    assert rec.names() == ["echo", "delete_agent"]


def test_case_7_denied_runs_the_benign_sibling_only(butler_home: Path) -> None:
    rec = Recorder()
    h = mixed_round(butler_home, rec)
    out = h.resume(h.run().park_id, {"approved": False})
    assert rec.names() == ["echo"]
    assert [r["is_error"] for r in tool_results(out)] == [False, True]


def test_case_8_the_owning_gate_titles_and_runs(butler_home: Path) -> None:
    ran: list[str] = []

    def gate(name: str, label: str) -> Gate:
        def execute(n: str, args: dict[str, Any]) -> str:
            ran.append(f"{label}:{n}")
            return "ok"

        return Gate(
            [ToolSpec(name, name, {"type": "object"})],
            execute,
            policy=lambda n, a: approve(f"{label} asks"),
            describer=lambda n, a: f"{label} wants {n}",
        )

    model = ListModel([tools(use("send_email", "s1", to="a@b.c")), say("sent")])
    h = Harness(butler_home, model, [gate("delete_agent", "A"), gate("send_email", "B")])
    out = h.run()
    state = h.store.load(out.park_id)
    assert (state.approval.title, state.approval.reason) == ("B wants send_email", "B asks")
    h.resume(out.park_id, {"approved": True})
    assert ran == ["B:send_email"]


def test_case_9_no_gate_never_parks(butler_home: Path) -> None:
    rec = Recorder()
    model = ListModel(
        [tools(use("echo", "e1", msg="a")), tools(use("echo", "e2", msg="b")), say("ok")]
    )
    out = Harness(butler_home, model, [rec.echo_toolset()]).run()
    assert out.status == "done" and rec.names() == ["echo", "echo"]
    assert not (butler_home / "parks").exists()


def test_case_10_no_tools_plain_answer(butler_home: Path) -> None:
    model = ListModel([say("hello")])
    out = Harness(butler_home, model, []).run()
    assert (out.status, out.text, out.rounds) == ("done", "hello", 0)
    assert model.requests[0].tools == []


def test_case_11_round_limit(butler_home: Path) -> None:
    rec = Recorder()
    model = ForeverModel(lambda n: use("echo", f"e{n}", msg=str(n)))
    out = Harness(butler_home, model, [rec.echo_toolset()], max_rounds=3).run()
    assert out.status == "limit"
    assert "aborted after 3 tool-use rounds" in out.text
    assert out.text.startswith("again 4")
    assert rec.names() == ["echo"] * 3
    # every tool_use in the conversation has its result (L7)
    uses = [b.id for m in out.messages for b in m.content if b.type == "tool_use"]
    assert uses == [r["tool_use_id"] for r in tool_results(out)]


def test_case_12_approving_a_sibling_never_launders_a_refusal(butler_home: Path) -> None:
    rec = Recorder()
    model = ListModel(
        [
            tools(use("delete_agent", "d1", handle="x"), use("send_email", "s1", to="a@b.c")),
            say("k"),
        ]
    )
    policy = policy_of(delete_agent=refuse("never"), send_email=approve("leaves this machine"))
    h = Harness(butler_home, model, [rec.gate(policy=policy)])
    out = h.run()
    assert h.store.load(out.park_id).approval.tool == "send_email"
    done = h.resume(out.park_id, {"approved": True})
    assert rec.names() == ["send_email"]
    assert tool_results(done)[0]["content"] == "Refused (not run): never."


def test_case_13_every_call_of_the_round_is_asked_and_only_approved_ones_run(
    butler_home: Path,
) -> None:
    """Issue 22: a round with two calls that need a person asks about both; each runs only
    if the person approved that call (here one yes, one no) — exactly once."""
    rec = Recorder()
    model = ListModel(
        [
            tools(use("send_email", "s1", to="a@b.c"), use("delete_agent", "d1", handle="x")),
            say("k"),
        ]
    )
    policy = policy_of(delete_agent=DESTRUCTIVE, send_email=approve("sends mail"))
    h = Harness(butler_home, model, [rec.gate(policy=policy)])
    out = h.run()
    state = h.store.load(out.park_id)
    assert [a.tool for a in state.approvals] == ["send_email", "delete_agent"]
    assert [a.tool for a in out.approvals] == ["send_email", "delete_agent"]
    send, delete = (a.call_id for a in state.approvals)
    state.status = "decided"
    state.decision = Decision(approved=True)
    state.decisions = {send: Decision(approved=True), delete: Decision(approved=False, note="no")}
    h.store.save(state)
    done = h.carry_on(out.park_id)
    assert rec.names() == ["send_email"]
    assert tool_results(done)[1]["content"] == declined_message("no")
    assert h.store.load(out.park_id).status == "resolved"


def test_case_13b_an_asked_call_with_no_decision_on_record_is_denied(butler_home: Path) -> None:
    """A park whose per-call record names only one of two asked calls: the other is denied
    (a missing decision never approves, R1)."""
    rec = Recorder()
    model = ListModel(
        [tools(use("send_email", "s1", to="a@b.c"), use("send_email", "s2", to="c@d.e")), say("k")]
    )
    h = Harness(butler_home, model, [rec.gate(policy=policy_of(send_email=approve("mail")))])
    out = h.run()
    state = h.store.load(out.park_id)
    first, second = (a.call_id for a in state.approvals)
    state.status, state.decision = "decided", Decision(approved=True)
    state.decisions = {first: Decision(approved=True)}
    h.store.save(state)
    done = h.carry_on(out.park_id)
    assert rec.ran == [("send_email", {"to": "a@b.c"})]
    assert tool_results(done)[1]["content"] == declined_message(NO_DECISION_NOTE)


class TestCase14Gate:
    def test_empty_gate(self) -> None:
        with pytest.raises(ToolsetError) as err:
            Gate([], lambda n, a: "")
        assert err.value.code == "no_governed_tools"

    def test_duplicate_tool(self) -> None:
        spec = ToolSpec("delete_agent", "", {})
        with pytest.raises(ToolsetError) as err:
            Gate([spec, spec], lambda n, a: "")
        assert err.value.code == "duplicate_governed_tool"

    def test_no_policy_no_default_asks(self) -> None:
        v = Recorder().gate().classify("delete_agent", {"handle": "m"})
        assert v.decision == "approve"
        assert v.reason == "'delete_agent' has no risk policy — asking you first"

    def test_default_refuse_used_without_policy(self) -> None:
        g = Recorder().gate(defaults={"delete_agent": refuse("default no")})
        assert g.classify("delete_agent", {}) == refuse("default no")

    def test_policy_wins_over_default(self) -> None:
        g = Recorder().gate(policy=lambda n, a: allow(), defaults={"delete_agent": refuse("d")})
        assert g.classify("delete_agent", {}).decision == "allow"

    def test_policy_no_opinion_falls_back_to_default(self) -> None:
        g = Recorder().gate(policy=lambda n, a: None, defaults={"delete_agent": refuse("d")})
        assert g.classify("delete_agent", {}) == refuse("d")

    def test_policy_dict_and_garbage(self) -> None:
        g = Recorder().gate(policy=lambda n, a: {"decision": "refuse", "reason": "dict"})
        assert g.classify("delete_agent", {}) == refuse("dict")
        g = Recorder().gate(policy=lambda n, a: 42)
        v = g.classify("delete_agent", {})
        assert v.decision == "approve" and v.reason.startswith("policy error:")

    def test_policy_that_raises_asks_a_person(self) -> None:
        def broken(name: str, args: dict[str, Any]) -> None:
            raise RuntimeError("rules file missing")

        v = Recorder().gate(policy=broken).classify("delete_agent", {})
        assert v.decision == "approve" and "RuntimeError" in v.reason
        assert "rules file missing" not in v.reason  # its text may quote arguments: not audited

    def test_policy_gets_a_copy_of_the_args(self) -> None:
        def meddle(name: str, args: dict[str, Any]) -> None:
            args["handle"] = "everyone"
            args["nested"]["x"] = 2

        args = {"handle": "mailer", "nested": {"x": 1}}
        Recorder().gate(policy=meddle).classify("delete_agent", args)
        assert args == {"handle": "mailer", "nested": {"x": 1}}

    def test_default_title(self) -> None:
        g = Recorder().gate()
        assert (
            g.describe("delete_agent", {"handle": "mailer"}) == 'delete_agent({"handle":"mailer"})'
        )
        assert g.describe("delete_agent", {"handle": "é"}) == 'delete_agent({"handle":"é"})'

    def test_long_args_are_cut(self) -> None:
        title = Recorder().gate().describe("delete_agent", {"handle": "x" * 400})
        assert len(title) < 140 and title.endswith("…)")

    def test_executor_error_stays_an_error(self) -> None:
        g = Recorder().gate(names=["explode"])
        result = g.run(ToolUseBlock(id="x", name="explode", input={}))
        assert result.is_error and "boom" in result.content

    def test_unknown_tool_is_an_error_and_runs_nothing(self) -> None:
        rec = Recorder()
        result = rec.gate().run(ToolUseBlock(id="x", name="nope", input={}))
        assert result.is_error and rec.ran == []


def test_g5_tool_names_unique_across_toolsets() -> None:
    rec = Recorder()
    clash = FunctionToolset([(ToolSpec("delete_agent", "", {}), lambda a: "")])
    with pytest.raises(ToolsetError) as err:
        Toolbox([clash, rec.gate()])
    assert err.value.code == "tool_name_collision"


class MemoryTools:
    """Case 15: a sensitive memory write is just another governed tool."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def facts(self) -> list[str]:
        return self.path.read_text().splitlines() if self.path.exists() else []

    def write(self, args: dict[str, Any]) -> str:
        with self.path.open("a") as fh:
            fh.write(args["text"] + "\n")
        return "remembered"

    def toolsets(self) -> list[Any]:
        benign = FunctionToolset([(ToolSpec("remember", "", {}), self.write)])
        gate = Gate(
            [ToolSpec("remember_secret", "", {}, approve("stores a credential"))],
            lambda n, a: self.write(a),
        )
        return [benign, gate]


@pytest.mark.parametrize(
    "decision,written", [({"approved": True}, 1), ({"approved": False}, 0), (None, 0)]
)
def test_case_15_sensitive_memory_write_is_governed(
    butler_home: Path, tmp_path: Path, decision: object, written: int
) -> None:
    mem = MemoryTools(tmp_path / "memory.txt")
    model = ListModel([tools(use("remember_secret", "m1", text="pin 1234")), say("noted")])
    h = Harness(butler_home, model, mem.toolsets())
    out = h.run()
    assert out.status == "parked" and mem.facts() == []
    h.resume(out.park_id, decision)
    assert mem.facts() == ["pin 1234"] * written


def test_case_15_ordinary_note_writes_inline(butler_home: Path, tmp_path: Path) -> None:
    mem = MemoryTools(tmp_path / "memory.txt")
    model = ListModel([tools(use("remember", "m1", text="likes tea")), say("noted")])
    out = Harness(butler_home, model, mem.toolsets()).run()
    assert out.status == "done" and mem.facts() == ["likes tea"]
