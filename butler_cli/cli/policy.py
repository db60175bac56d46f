"""`butler policy …`: see, check and test the risk policy without running anything."""

from __future__ import annotations

from typing import Annotated

import typer

from butler_cli.cli.options import Json, Policy, PolicyFile
from butler_cli.core.errors import ExitCode

app = typer.Typer(
    name="policy",
    help="The risk policy: which are installed, what one says about a call, replay test cases.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
#: `policy check`'s exit code for each verdict, as the README gives them: 0, 3 (as a run that
#: parks), 4.
_CODES = {"allow": ExitCode.OK, "approve": ExitCode.PARKED, "refuse": ExitCode.LIMIT}


@app.command("list")
def list_(policy: Policy = None, json_out: Json = False) -> None:
    """Installed policies (the butler.policies entry points) and which one is active."""
    from dataclasses import asdict

    from butler_cli.app.policy_list import policy_list
    from butler_cli.cli import render

    found = policy_list(policy)
    if json_out:
        render.print_json(
            {"active": found.active, "installed": [asdict(p) for p in found.installed]}
        )
        return
    for p in found.installed:
        mark = "*" if p.active else " "
        print(f"{mark} {p.name:<12} {p.value:<40} from {p.package}")
    if not any(p.active for p in found.installed):
        print(f"* {found.active} (not an installed name: loaded as module:attr or file.py:attr)")


@app.command("check")
def check(
    tool: Annotated[str, typer.Argument(help="Tool name, e.g. write_file.")],
    args: Annotated[
        str, typer.Option("--args", help="The call's arguments as a JSON object.")
    ] = "{}",
    policy: Policy = None,
    policy_file: PolicyFile = None,
    json_out: Json = False,
) -> None:
    """The verdict for one call and the reason (the rule that decided), without running it.
    Exit 0 allow, 3 approve, 4 refuse."""
    from butler_cli.app.options import RunOptions
    from butler_cli.app.policy_check import Checker, parse_args_json
    from butler_cli.cli import render

    checker = Checker.build(RunOptions(policy=policy, policy_file=policy_file))
    verdict = checker.verdict(tool, parse_args_json(args))
    if verdict is None:
        out = {"tool": tool, "verdict": "benign", "reason": "benign tool: runs without a verdict"}
        code = ExitCode.OK
    else:
        out = {"tool": tool, "verdict": verdict.decision, "reason": verdict.reason}
        code = _CODES[verdict.decision]
    if json_out:
        render.print_json(out)
    else:
        print(f"{out['verdict']}: {out['reason']}")
    raise typer.Exit(code)


@app.command("test")
def test(
    cases_file: Annotated[
        str,
        typer.Argument(metavar="FILE", help="JSON array or JSON lines of {tool, args, expect}."),
    ],
    policy: Policy = None,
    policy_file: PolicyFile = None,
) -> None:
    """Replay cases against the policy and report every mismatch. Exit 0 when all pass, 1 when
    any does not."""
    from butler_cli.app.options import RunOptions
    from butler_cli.app.policy_check import Checker, read_cases
    from butler_cli.core.gate import default_title

    cases = read_cases(cases_file)
    checker = Checker.build(RunOptions(policy=policy, policy_file=policy_file))
    misses = 0
    for i, case in enumerate(cases, start=1):
        args = case.get("args", {})
        verdict = checker.verdict(case["tool"], args)
        got = "benign" if verdict is None else verdict.decision
        if got != case["expect"]:
            misses += 1
            why = f" ({verdict.reason})" if verdict is not None and verdict.reason else ""
            title = default_title(case["tool"], args)
            print(f"case {i}: {title}: expected {case['expect']}, got {got}{why}")
    print(f"{len(cases)} cases, {misses} mismatches — policy {checker.policy.spec}")
    raise typer.Exit(ExitCode.FAILED if misses else ExitCode.OK)
