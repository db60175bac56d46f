"""butler: a personal butler in the terminal whose sensitive actions wait for a person.

Plug-ins import from :mod:`butler_cli.api`, the declared contract. The verdict constructors stay
here too, for the policies that already import them: ``from butler_cli import allow, approve,
refuse``.
"""

from butler_cli.core.verdicts import Verdict, allow, approve, refuse

__all__ = ["Verdict", "allow", "approve", "refuse"]
__version__ = "0.1.0"
