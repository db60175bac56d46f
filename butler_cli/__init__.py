"""butler: a personal butler in the terminal whose sensitive actions wait for a person.

Policies import their verdict constructors from here: ``from butler_cli import allow, approve,
refuse``.
"""

from butler_cli.core.verdicts import Verdict, allow, approve, refuse

__all__ = ["Verdict", "allow", "approve", "refuse"]
__version__ = "0.1.0"
