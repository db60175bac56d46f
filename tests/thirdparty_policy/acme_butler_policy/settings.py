"""ACME's config section ``[acme]``, declared once: the butler checks the file's section against
it, `butler config show/get/set` know its keys, and the tools and the policy read its values."""

from butler_cli.api import Setting

SETTINGS = (
    Setting("greeting", str, "pong", env="ACME_GREETING", help="what acme_ping answers"),
    Setting("retries", int, 3),
    Setting("pad", str, "pad-a", choices=("pad-a", "pad-b"), help="where acme_launch launches"),
    Setting("launchable", list, ["rocket"], help="what the acme-quota policy lets launch"),
    # the NAME of the variable holding ACME's launch code: its value is masked everywhere
    Setting("code_env", str, "ACME_LAUNCH_CODE", secret_name=True),
    Setting("region", str, "eu", settable=False),
)
