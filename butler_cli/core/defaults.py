"""The defaults of the options a person can set by flag, variable or config file: one place,
read by the loop, the policy loader and the one resolver (``app/config/config.py``
``resolve_options``). Plain constants: importing them loads nothing."""

from __future__ import annotations

#: The policy when none is chosen: every governed call asks.
DEFAULT_POLICY = "ask"
#: Rounds of tool calls a task may take before it stops with "limit".
DEFAULT_MAX_ROUNDS = 8
#: No persona of the person's own: the butler's (``app/run/butler.py`` ``DEFAULT_PERSONA``).
DEFAULT_SYSTEM = ""
