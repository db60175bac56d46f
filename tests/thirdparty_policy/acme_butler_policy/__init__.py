"""ACME's house policy: Markdown writes are fine, deleting is never fine."""

from butler_cli import allow, refuse


def classify(name, args):
    if name == "delete_file":
        return refuse("ACME policy: nothing is ever deleted")
    if name == "write_file" and str(args.get("path", "")).endswith(".md"):
        return allow("ACME policy: Markdown notes are fine")
    return None
