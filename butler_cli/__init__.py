"""butler: a personal butler in the terminal whose sensitive actions wait for a person.

Plug-ins import from :mod:`butler_cli.api`, the declared contract. The verdict constructors stay
here too, for the policies that already import them: ``from butler_cli import allow, approve,
refuse`` — loaded on first use, so `butler`'s own start (the chat's first prompt) skips them.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from butler_cli.core.verdicts import Verdict, allow, approve, refuse

__all__ = ["Verdict", "allow", "approve", "refuse"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in __all__:
        import butler_cli.core.verdicts as verdicts  # a named lazy point (tests/test_imports)

        return getattr(verdicts, name)
    raise AttributeError(f"module 'butler_cli' has no attribute {name!r}")
