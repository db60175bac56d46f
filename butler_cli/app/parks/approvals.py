"""Kept approvals ("always allow this here"), as every surface reaches them.

A person keeps an approval at a decision they were shown: the exact call (its arguments and
the files they resolved to), or — only where the policy offered to widen it — the patterns
shown with it; scoped to the task's folder (resolved). Never for a call the policy marks
``ask_always`` (sending, deleting, spending: see docs/rules.md). Every task, whatever the
surface, is classified with the approvals kept for its folder (``core/loop.py``
``classify_call``); each use is audited as ``kept approval N``. An unattended run still needs
``--yes-safe`` to act on one, as on any allow. A ``run_command`` approval kept while the
sandbox was active records so (``sandboxed``) and answers only while one is: without a
sandbox every command asks (its approve is ``ask_always``).
"""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import TYPE_CHECKING

from butler_cli.core.errors import UsageError
from butler_cli.core.notices import notice
from butler_cli.store import approvals as store
from butler_cli.tools.paths import resolve

if TYPE_CHECKING:
    from butler_cli.core.grants import Grant, KeptApproval, KeptApprovals
    from butler_cli.core.park import ParkState


#: The tools whose kept approval names the file they change, whatever they put in it.
FILE_CHANGES = ("write_file", "edit_file")
#: The tool whose programs run in the sandbox (tools/command.py).
SANDBOXED_TOOL = "run_command"


def folder_key(cwd: Path | str) -> str:
    """The folder a kept approval is scoped to: the task's folder, resolved."""
    return os.path.realpath(cwd)


def keepable(state: ParkState, call_id: str | None = None) -> bool:
    """Whether a person may keep an approval of one asked call of the park (the first when
    none is named): its verdict is an approve the policy does not ask about every time
    (``ask_always``)."""
    verdict = state.verdicts.get(call_id or state.approval.call_id)
    return verdict is not None and verdict.keepable


def exact_grant(state: ParkState, call_id: str | None = None) -> Grant:
    """One asked call of the park (the first when none is named) with exactly the arguments
    shown (a session grant or a kept one)."""
    from butler_cli.core.grants import Grant, canonical

    cid = call_id or state.approval.call_id
    tool = next((a.tool for a in state.approvals if a.call_id == cid), state.approval.tool)
    return Grant(tool, exact=canonical(state.arguments_of(cid)))


def kept_grant(state: ParkState, call_id: str) -> Grant:
    """What "always allow this here" keeps for one asked call, as the person is shown it: a
    file write or edit for the file it changes (its resolved path, whatever the content: the
    next write — or edit — of that file by that tool runs), anything else exactly as shown."""
    from butler_cli.core.grants import Grant

    tool = next((a.tool for a in state.approvals if a.call_id == call_id), "")
    path = state.arguments_of(call_id).get("path")
    if tool in FILE_CHANGES and isinstance(path, str):
        try:
            target = resolve(Path(state.context.cwd), path)
        except (ValueError, OSError):
            return exact_grant(state, call_id)
        return Grant(tool, patterns=(("path", "glob:" + glob.escape(str(target))),))
    return exact_grant(state, call_id)


def keep_shown(state: ParkState) -> dict[str, Grant]:
    """The inbox's "Always allow here": what each keepable call of the park would keep."""
    return {
        a.call_id: kept_grant(state, a.call_id)
        for a in state.approvals
        if keepable(state, a.call_id)
    }


def kept_for(home: Path, cwd: Path | str) -> KeptApprovals | None:
    """The approvals kept for tasks in ``cwd``; None when there are none. A malformed file
    keeps nothing (every call asks) and says so in one line; the file is left as it is.
    With no file (most homes) nothing more is imported: a round stays as cheap as before."""
    if not os.path.lexists(home / store.FILE):
        return None
    from butler_cli.core.grants import KeptApprovals
    from butler_cli.tools.sandbox import detect_sandbox

    try:
        kept = store.load_kept(home)
    except UsageError as exc:
        notice(f"{exc.message}; no kept approval applies until it is fixed")
        return None
    # the sandbox is probed (once per process) only when an approval kept for it is on file
    sandboxed = any(k.sandboxed for k in kept) and detect_sandbox().active
    book = KeptApprovals(kept, folder_key(cwd), sandboxed=sandboxed)
    return book if book else None


def list_kept(home: Path) -> list[KeptApproval]:
    """Every kept approval, numbered as the file holds them (malformed: a usage error)."""
    return store.load_kept(home)


def keep(home: Path, grant: Grant, cwd: Path | str, now: str) -> tuple[KeptApproval, bool]:
    """Keep ``grant`` (bound to its files already, for an exact one) for ``cwd``; a
    ``run_command`` one records whether it was kept for a sandboxed run. The kept approval,
    and False when the very same one was kept already (never a duplicate)."""
    from butler_cli.core.grants import KeptApproval
    from butler_cli.tools.sandbox import detect_sandbox

    sandboxed = grant.tool == SANDBOXED_TOOL and detect_sandbox().active
    kept = KeptApproval(0, grant, folder_key(cwd), now, sandboxed)
    number, new = store.keep(home, kept)
    return KeptApproval(number, grant, kept.folder, now, sandboxed), new


def revoke(home: Path, number: int) -> KeptApproval:
    """Take back kept approval ``number``; what it was."""
    return store.revoke(home, number)
