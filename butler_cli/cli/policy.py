"""`butler policy …`: see, check and test the risk policy without running anything."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

import typer

from butler_cli.app.config.options import RunOptions
from butler_cli.app.views.policy_list import policy_list
from butler_cli.cli import render
from butler_cli.cli.options import Json, Policy, PolicyFile
from butler_cli.core.errors import ExitCode

app = typer.Typer(
    name="policy",
    help="The risk policy: which are installed, what one says about a call, replay test cases.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
#: `policy check`'s exit code for each verdict, as the README gives them: 0 (a benign tool too),
#: 3 (as a run that parks), 4.
_CODES = {
    "benign": ExitCode.OK,
    "allow": ExitCode.OK,
    "approve": ExitCode.PARKED,
    "refuse": ExitCode.LIMIT,
}


@app.command("list")
def list_(policy: Policy = None, json_out: Json = False) -> None:
    """Installed policies (the butler.policies entry points) and which one is active."""
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
    from butler_cli.app.views.policy_check import check_call

    found = check_call(tool, args, RunOptions(policy=policy, policy_file=policy_file))
    out = {"tool": found.tool, "verdict": found.verdict, "reason": found.reason}
    if json_out:
        render.print_json(out)
    else:
        print(f"{found.verdict}: {found.reason}")
    raise typer.Exit(_CODES[found.verdict])


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
    from butler_cli.app.views.policy_check import replay

    done = replay(cases_file, RunOptions(policy=policy, policy_file=policy_file))
    for miss in done.misses:
        why = f" ({miss.reason})" if miss.reason else ""
        print(f"case {miss.number}: {miss.title}: expected {miss.expected}, got {miss.got}{why}")
    print(f"{done.cases} cases, {len(done.misses)} mismatches — policy {done.policy}")
    raise typer.Exit(ExitCode.FAILED if done.misses else ExitCode.OK)
