"""What a person chose on the command line, before anything is built (cheap to import)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from butler_cli.core.park import RunContext

MODEL_ENV = "BUTLER_MODEL"


@dataclass(frozen=True)
class RunOptions:
    """What a person chose on the command line; None means "not given"."""

    model: str | None = None
    policy: str | None = None
    system: str | None = None
    max_rounds: int | None = None
    yes_safe: bool = False
    profile: str | None = None
    policy_file: str | None = None
    base_url: str | None = None
    #: Model options from `-o KEY=VALUE`, checked (None: none given).
    model_options: dict[str, int | float] | None = None

    def over(self, context: RunContext) -> RunOptions:
        """These options, falling back to what a park recorded."""
        return replace(
            self,
            model=self.model or context.model,
            policy=self.policy or context.policy,
            system=self.system if self.system is not None else context.system,
            max_rounds=self.max_rounds or context.max_rounds,
            profile=self.profile or context.profile,
            policy_file=self.policy_file or context.policy_file,
            base_url=self.base_url or context.base_url,
            # the park's options, with any given now on top
            model_options={**context.model_options, **(self.model_options or {})},
        )
