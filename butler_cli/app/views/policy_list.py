"""The installed policies (the ``butler.policies`` entry points) and which one is active, as
`butler policy list` shows them. Reads the kept entry-point scan; loads no policy."""

from __future__ import annotations

from dataclasses import dataclass

from butler_cli.app.config.config import load_config, resolve_setting
from butler_cli.policy.loader import installed_policies


@dataclass(frozen=True)
class InstalledPolicy:
    """One installed policy: its name, what it points at, the package that brings it."""

    name: str
    value: str  # module:attr
    package: str  # "NAME VERSION", or "unknown"
    active: bool


@dataclass(frozen=True)
class PolicyList:
    active: str  # the spec in effect: an installed name, module:attr or file.py:attr
    installed: list[InstalledPolicy]


def policy_list(given: str | None) -> PolicyList:
    """The installed policies, marking the one ``given`` (a ``--policy``; None: the setting's
    environment, file or default) names."""
    active = resolve_setting("policy", given, load_config()).value
    return PolicyList(
        active,
        [
            InstalledPolicy(
                ep.name,
                ep.value,
                f"{ep.dist.name} {ep.dist.version}" if ep.dist else "unknown",
                ep.name == active,
            )
            for ep in installed_policies()
        ],
    )
