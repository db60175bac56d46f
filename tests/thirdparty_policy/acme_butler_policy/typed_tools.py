"""ACME's typed tools, written only against the declared contract, ``butler_cli.api``."""

from butler_cli.api import ToolContext, approve, benign_toolset, governed_toolset, tool


@tool
def acme_lookup(title: str, limit: int = 5) -> str:
    """Look a title up in ACME's catalogue."""
    return f"{title} ×{limit}"


def toolsets(context: ToolContext):
    orders = context.base_dir / "orders.txt"

    @tool(default=approve("ACME orders need a person"))
    def acme_order(item: str, count: int) -> str:
        """Order some of an item."""
        with orders.open("a") as fh:
            fh.write(f"{item} {count}\n")
        return "ordered"

    return [benign_toolset([acme_lookup]), governed_toolset([acme_order], context.policy)]
