"""Loop and resume rules beyond the acceptance cases: L2, L6, X2 recovery, X4, X5."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support import Harness, ListModel, Recorder, say, tool_results, tools, use

from butler_cli.core.loop import LoopConfig
from butler_cli.core.outcomes import OUTCOME_UNKNOWN
from butler_cli.core.provider import ModelResponse
from butler_cli.core.toolsets import FunctionToolset, ToolSpec
from butler_cli.core.verdicts import allow, approve, refuse


def test_l2_calls_without_tool_use_stop_are_the_final_answer(butler_home: Path) -> None:
    rec = Recorder()
    odd = ModelResponse(
        text="final", tool_calls=[use("echo", "e1", msg="x")], stop_reason="end_turn"
    )
    out = Harness(butler_home, ListModel([odd]), [rec.echo_toolset()]).run()
    assert (out.status, out.text, rec.ran) == ("done", "final", [])


def test_l6_a_raising_tool_becomes_an_error_result(butler_home: Path) -> None:
    def flaky(args: dict[str, Any]) -> str:
        raise OSError("disk on fire")

    model = ListModel([tools(use("flaky", "f1")), say("handled")])
    out = Harness(butler_home, model, [FunctionToolset([(ToolSpec("flaky", "", {}), flaky)])]).run()
    assert out.text == "handled"
    assert tool_results(out)[0]["content"] == "disk on fire"
    assert tool_results(out)[0]["is_error"]


def test_unknown_tool_from_the_model_is_an_error_result(butler_home: Path) -> None:
    rec = Recorder()
    model = ListModel([tools(use("rm_rf", "x1")), say("sorry")])
    out = Harness(butler_home, model, [rec.echo_toolset(), rec.gate()]).run()
    assert out.status == "done" and rec.ran == []
    assert "Unknown tool 'rm_rf'" in tool_results(out)[0]["content"]


def test_x5_unattended_allow_parks_with_a_reason(butler_home: Path) -> None:
    rec = Recorder()
    model = ListModel([tools(use("send_email", "s1", to="me@x.y")), say("sent")])
    gate = rec.gate(policy=lambda n, a: allow())
    out = Harness(butler_home, model, [gate], allow_runs=False).run()
    assert out.status == "parked" and rec.ran == []
    assert "--yes-safe" in out.approval.reason
    out = Harness(butler_home, ListModel(model.responses), [gate], allow_runs=True).run()
    assert out.status == "done" and rec.names() == ["send_email"]


def test_x4_policy_is_asked_again_on_resume(butler_home: Path) -> None:
    rec = Recorder()
    answers = {"send_email": approve("sends mail")}
    gate = rec.gate(policy=lambda n, a: answers[n])
    h = Harness(butler_home, ListModel([tools(use("send_email", "s1", to="a")), say("k")]), [gate])
    park_id = h.run().park_id
    answers["send_email"] = refuse("mail is off today")
    out = h.resume(park_id, {"approved": True})
    assert rec.ran == []
    assert tool_results(out)[0]["content"] == "Refused (not run): mail is off today."


def test_l3_each_governed_call_is_classified_exactly_once(butler_home: Path) -> None:
    rec = Recorder()
    asked: list[str] = []

    def policy(name: str, args: dict[str, Any]) -> Any:
        asked.append(args.get("to") or args.get("handle"))
        return allow()

    model = ListModel(
        [
            tools(
                use("echo", "e", msg="m"),
                use("send_email", "s", to="a"),
                use("delete_agent", "d", handle="b"),
            ),
            say("k"),
        ]
    )
    Harness(butler_home, model, [rec.echo_toolset(), rec.gate(policy=policy)]).run()
    assert asked == ["a", "b"]


def test_x2_started_without_result_is_reported_unknown_never_rerun(butler_home: Path) -> None:
    rec = Recorder()
    model = ListModel(
        [tools(use("echo", "e1", msg="a"), use("delete_agent", "d1", handle="m")), say("k")]
    )
    h = Harness(butler_home, model, [rec.echo_toolset(), rec.gate()])
    park_id = h.run().park_id
    state = h.decide(park_id, {"approved": True})
    # the process died after echo's result and while delete_agent was running
    state.started.extend(["e1", "d1"])
    from butler_cli.core.messages import ToolResultBlock

    state.results["e1"] = ToolResultBlock(tool_use_id="e1", content="echoed a")
    h.store.save(state)
    out = h.carry_on(park_id)
    assert rec.ran == []  # neither ran again
    assert [r["content"] for r in tool_results(out)] == ["echoed a", OUTCOME_UNKNOWN]
    assert h.store.load(park_id).status == "resolved"


def test_x2_decided_but_never_started_runs_once_on_recovery(butler_home: Path) -> None:
    rec = Recorder()
    model = ListModel([tools(use("delete_agent", "d1", handle="m")), say("k")])
    h = Harness(butler_home, model, [rec.gate()])
    park_id = h.run().park_id
    h.decide(park_id, {"approved": True})
    h.carry_on(park_id)
    assert rec.names() == ["delete_agent"]
    state = h.store.load(park_id)
    assert state.started == ["d1"] and state.results["d1"].content == "deleted m"


def test_r3_continued_loop_may_park_again_with_a_parent(butler_home: Path) -> None:
    rec = Recorder()
    model = ListModel(
        [
            tools(use("delete_agent", "d1", handle="a")),
            tools(use("delete_agent", "d2", handle="b")),
            say("k"),
        ]
    )
    h = Harness(butler_home, model, [rec.gate()], max_rounds=1)
    first = h.run().park_id
    second = h.resume(first, {"approved": True})
    assert second.status == "parked" and second.park_id != first
    assert h.store.load(second.park_id).parent == first
    assert rec.names() == ["delete_agent"]
    assert h.resume(second.park_id, {"approved": True}).text == "k"
    assert rec.names() == ["delete_agent", "delete_agent"]


def test_config_is_plain_data() -> None:
    assert LoopConfig().max_rounds == 8


def test_exit_code_priority() -> None:
    from butler_cli.app.run.report import TaskReport, exit_code_for

    def codes(*statuses: str) -> int:
        return int(exit_code_for([TaskReport(task="t", status=s) for s in statuses]))

    assert codes() == 0 and codes("done") == 0
    assert codes("done", "parked") == 3
    assert codes("parked", "limit") == 4
    assert codes("parked", "limit", "failed", "done") == 1


def test_park_ids_are_short_and_unambiguous(butler_home: Path) -> None:
    import re

    from butler_cli.store.parks import ParkStore

    ids = {ParkStore(butler_home).new_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"[a-hjkmnp-z2-9]{8}", i) for i in ids)


def test_a_malformed_call_in_a_parked_round_never_runs(butler_home: Path) -> None:
    rec = Recorder()
    deep: dict[str, Any] = {"x": 1}
    for _ in range(100):
        deep = {"x": deep}
    model = ListModel(
        [
            tools(use("echo", "e1", msg="a", junk=deep), use("delete_agent", "d1", handle="m")),
            say("k"),
        ]
    )
    h = Harness(butler_home, model, [rec.echo_toolset(), rec.gate()])
    out = h.run()
    assert out.status == "parked"
    state = h.store.load(out.park_id)
    assert state.calls[0].input == {} and "malformed" in state.results["e1"].content
    done = h.resume(out.park_id, {"approved": True})
    assert rec.names() == ["delete_agent"]
    assert "nested deeper than 64 levels" in tool_results(done)[0]["content"]
