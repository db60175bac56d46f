"""Verdicts: what a policy says about one governed call (allow / approve / refuse)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

VerdictKind = Literal["allow", "approve", "refuse"]
_STRICTNESS: dict[str, int] = {"allow": 0, "approve": 1, "refuse": 2}


@dataclass(frozen=True, slots=True)
class Verdict:
    """A policy's answer. ``reason`` is shown to the person (approve) or the model (refuse)."""

    decision: VerdictKind
    reason: str = ""
    #: For an approve: argument patterns a session grant may widen to ({"path": "glob:…"}),
    #: offered in the chat only when the policy marks the call as safe to widen.
    widen: tuple[tuple[str, str], ...] = ()
    #: For an approve: ask every time — a person may not keep this approval (sending, spending,
    #: deleting, or whatever the policy marks so). Session grants are not affected.
    ask_always: bool = False
    #: For an allow: the number of the kept approval that let the call run (said on screen
    #: in the chat; the reason names it for the audit log). Never saved in a park.
    kept: int | None = None

    @property
    def keepable(self) -> bool:
        """Whether a person may keep an approval of the call (app/parks/approvals.py): an
        approve the policy does not ask about every time."""
        return self.decision == "approve" and not self.ask_always

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": self.decision, "reason": self.reason}
        if self.widen:
            out["widen"] = dict(self.widen)
        if self.ask_always:
            out["ask_always"] = True
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Verdict:
        """Read a saved verdict; anything malformed fails closed to refuse."""
        if isinstance(data, dict):
            decision = data.get("decision")
            reason = data.get("reason", "")
            widen = data.get("widen", {})
            if decision in _STRICTNESS and isinstance(reason, str) and isinstance(widen, dict):
                return cls(
                    decision,
                    reason,
                    tuple(sorted((str(k), str(v)) for k, v in widen.items())),
                    data.get("ask_always") is True,
                )
        return cls("refuse", "malformed verdict on record — failing closed")

    def stricter(self, other: Verdict) -> Verdict:
        """The stricter of two verdicts (refuse > approve > allow); ties keep ``self``."""
        return other if _STRICTNESS[other.decision] > _STRICTNESS[self.decision] else self


def allow(reason: str = "") -> Verdict:
    """Run the call without asking."""
    return Verdict("allow", reason)


def approve(
    reason: str, widen: dict[str, str] | None = None, *, ask_always: bool = False
) -> Verdict:
    """Park the round and ask a person first. ``widen``: see :attr:`Verdict.widen`;
    ``ask_always``: no approval of this call may be kept (:attr:`Verdict.ask_always`)."""
    return Verdict("approve", reason, tuple(sorted((widen or {}).items())), ask_always)


def refuse(reason: str) -> Verdict:
    """Never run the call; the model sees ``Refused (not run): <reason>``."""
    return Verdict("refuse", reason)


def coerce_verdict(value: object) -> Verdict | None:
    """Turn what a policy returned into a verdict.

    Accepts a :class:`Verdict`, a dict ``{"decision": ..., "reason": ...}`` or ``None`` (no
    opinion). Anything else raises ``TypeError`` so the gate can fail closed to approve.
    """
    if value is None or isinstance(value, Verdict):
        return value
    if isinstance(value, dict):
        decision = value.get("decision")
        reason = value.get("reason", "")
        if decision in _STRICTNESS and isinstance(reason, str):
            return Verdict(decision, reason)
        raise TypeError(f"policy returned a malformed verdict dict: {value!r:.200}")
    raise TypeError(f"policy returned {type(value).__name__}, not a verdict")
