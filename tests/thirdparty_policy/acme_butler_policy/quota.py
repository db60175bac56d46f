"""ACME's quota policy: launches only what ``[acme] launchable`` lists, read through the
butler's ``PolicySettings.section``."""

from butler_cli.api import PolicySettings, allow, refuse


class Quota:
    def __init__(self, launchable):
        self.launchable = list(launchable)

    @classmethod
    def butler_configure(cls, settings: PolicySettings) -> "Quota":
        return cls(settings.section("acme")["launchable"])

    def classify(self, name, args):
        if name != "acme_launch":
            return None
        if args.get("what") in self.launchable:
            return allow(f"ACME quota: {args.get('what')} may launch")
        return refuse(f"ACME quota: only {', '.join(self.launchable)} may launch")
