"""One grammar for every approval question — the chat's (one action, several), `butler resume`'s
and the chat's `/resume`: a legend of the keys under what is asked, the question with the keys
(``Approve? [y/n/l/d/s]``), ``?`` for a line per key saying what it does, and an answer that is
not one of them explained, never asked again in silence (Enter alone too: it decides nothing).

Plain strings, no rich: the callers print them their own way.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Choice:
    """One answer: its key, its word in the legend, and what it does (``?`` shows it)."""

    key: str
    words: str
    does: str
    #: Whole words typed for the key (``yes``, ``later``…).
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Menu:
    """A question and the answers it takes."""

    question: str
    choices: tuple[Choice, ...]

    @property
    def prompt(self) -> str:
        """``Approve? [y/n/l/d/s] ``: the question with its keys."""
        return f"{self.question} [{'/'.join(c.key for c in self.choices)}] "

    @property
    def legend(self) -> str:
        """``[y] approve once  [n] deny  …  [?] help``: shown once, under what is asked."""
        # A key is bound to its first word (a no-break space): a line never ends on "[?]".
        keys = "  ".join(f"[{c.key}]\u00a0{c.words}" for c in (*self.choices, HELP))
        return keys

    def help(self) -> str:
        """A line per key: what it does (the answer to ``?``)."""
        width = max(len(c.key) for c in self.choices)
        lines = [f"  {c.key:<{width}}  {c.words}: {c.does}" for c in self.choices]
        lines.append(f"  {'?':<{width}}  this help · Ctrl-C or Ctrl-D: later, nothing runs")
        return "\n".join(lines)

    def pick(self, answer: str) -> str | None:
        """The key ``answer`` means (a key or one of its words, any case), or None."""
        said = answer.strip().lower()
        for choice in self.choices:
            if said == choice.key or said in choice.aliases:
                return choice.key
        return None

    def unknown(self, answer: str) -> str:
        """What to say when ``answer`` is no choice: it, then the keys again."""
        said = answer.strip()
        what = "Enter alone decides nothing" if not said else f"'{said}' is not a choice here"
        return f"{what} — {self.legend}"


HELP = Choice("?", "what each does", "this help")
YES = Choice("y", "approve once", "runs this exact call, then the task goes on", ("yes",))
NO = Choice("n", "deny", "runs nothing; you may add a note the model sees", ("no",))
LATER = Choice(
    "l", "later", "leaves it parked: nothing runs, decide it with /resume ID", ("later",)
)
DETAILS = Choice(
    "d", "details", "shows every argument exactly as given, then asks again", ("details",)
)
SESSION = Choice(
    "s",
    "approve for this session",
    "runs it and approves these exact arguments again until you leave the chat",
)
WIDEN = Choice(
    "w",
    "approve for this session, widened",
    "runs it and approves calls like it (the policy's pattern, asked next) for this session",
)
ALWAYS = Choice(
    "a",
    "always allow this here",
    "runs it and keeps the approval for this folder (butler grants lists and revokes it)",
)
ALL = Choice("y", "approve all of them", "runs every action shown, then the task goes on", ("yes",))
NONE = Choice(
    "n", "deny all", "runs none of them; you may add a note the model sees", ("no", "none")
)
EACH = Choice(
    "e", "decide each in turn", "shows each action again and asks about it alone", ("each",)
)


def one_action(widen: bool, keepable: bool) -> Menu:
    """The chat's question about one action."""
    extra = [WIDEN] if widen else []
    extra += [ALWAYS] if keepable else []
    return Menu("Approve?", (YES, NO, LATER, DETAILS, SESSION, *extra))


def several(count: int, later: bool = True) -> Menu:
    """The question about a round of ``count`` actions shown together (``later``: the chat's;
    `butler resume` leaves a park with Ctrl-C)."""
    return Menu(
        f"Approve all {count} actions shown?", (ALL, NONE, EACH, *((LATER,) if later else ()))
    )


def yes_or_no(which: str = "") -> Menu:
    """`butler resume`'s question about one action (``which``: `` (action 1 of 2)``)."""
    return Menu(f"Approve{which}?", (YES, NO))
