"""How text is indexed and queried so recall finds what a person means (spec Q1–Q3).

The index (``INDEX_TOKENIZER``) folds case and diacritics and stems English words with the
Porter stemmer, so ``adopted`` finds ``adopt`` and ``peanut`` finds ``peanuts``; a query is
stemmed the same way. It reads a run of Chinese or Japanese characters as one long token, so
each CJK run is indexed as its single characters plus its character bigrams: ``奶茶店`` is
queried as the bigrams ``奶茶`` and ``茶店``, and ``我开了家卖奶茶的小店`` is found through
``奶茶``; a one-character query like ``茶`` hits the single characters. The stemmer leaves
these (and any word with a character outside a–z) as they are.

A query's stop words (``the``, ``did``, ``what`` … and the commonest function words of
German, French, Spanish, Italian, Portuguese and Dutch) are not searched: every entry holds
them, so they only drown the words that tell entries apart. A query of nothing but stop words
("the who") searches them all.
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import cache

_WORD = re.compile(r"\w+", re.UNICODE)

#: Porter stemming over unicode61: the tokenizer of every full-text index the butler keeps.
INDEX_TOKENIZER = "porter unicode61 remove_diacritics 2"

_ENGLISH = """
a about above after again against all am an and any are aren as at be because been before
being below between both but by can cannot could couldn did didn do does doesn doing don down
during each else ever few for from further get gets got had hadn has hasn have haven having he
her here hers herself him himself his how i if in into is isn it its itself just let ll me
might mine more most must mustn my myself no nor not now of off on once only or other ought
our ours ourselves out over own re s same shall shan she should shouldn so some such t than
that the their theirs them themselves then there these they this those through to too under
until up upon us ve very was wasn we were weren what whatever when whenever where whereas
wherever whether which while who whoever whom whose why will with would wouldn you your
yours yourself yourselves also yet anything something everything nothing anyone someone d m
o y
"""
# The commonest function words of other Latin-script languages, leaving out any that is an
# English content word (French ``son``, German ``will``/``war``/``die``/``hat``/``kind``).
_OTHERS = """
der das den dem des ein eine einer eines einem einen und oder aber ist sind bin bist wird
werden wurde nicht auch mit von zu zum zur im ins auf aus bei nach ich du er sie es wir ihr
mein dein sein ihre wie wo wann warum dass welche welcher
le la les un une des du et ou mais est sont je tu il elle nous vous ils elles ce cette ces
mon ma mes ta tes sa ses au aux avec pour dans sur par qui que quoi quand comment pourquoi
el los las unos unas y o pero es son yo tú él ella nosotros ellos del al con para por en que
qué cuándo cómo dónde su sus mi mis
il lo gli uno di da e è sono io tu lui lei noi voi loro che chi quando dove perché
os um uma umas uns é são eu ele ela nós eles não com para por em na no nas nos que quando
het een en of maar ik jij hij zij wij jullie niet ook met van voor wat wanneer waar hoe
"""
STOP_WORDS = frozenset((_ENGLISH + _OTHERS).split())

#: English irregular verbs (base, past, participle) and the commonest family words that
#: differ by more than a suffix: the Porter stemmer cannot tell ``buy`` from ``bought`` or
#: ``kids`` from ``children``, so a query holding one form also searches the others.
_VARIANTS = """
arise arose arisen|awake awoke awoken|bear bore borne|beat beaten|become became|begin began begun
bend bent|bet|bind bound|bite bit bitten|bleed bled|blow blew blown|break broke broken
breed bred|bring brought|build built|burn burnt|buy bought|catch caught|choose chose chosen
cling clung|come came|cost|creep crept|cut|deal dealt|dig dug|draw drew drawn|dream dreamt
drink drank drunk|drive drove driven|eat ate eaten|fall fell fallen|feed fed|feel felt
fight fought|find found|flee fled|fly flew flown|forbid forbade forbidden|forget forgot forgotten
forgive forgave forgiven|freeze froze frozen|give gave given|go went gone|grind ground
grow grew grown|hang hung|hear heard|hide hid hidden|hit|hold held|hurt|keep kept|kneel knelt
know knew known|lay laid|lead led|lean leant|leap leapt|learn learnt|leave left|lend lent
lie lay lain|light lit|lose lost|make made|mean meant|meet met|pay paid|prove proven|put
quit|read|ride rode ridden|ring rang rung|rise rose risen|run ran|say said|see saw seen
seek sought|sell sold|send sent|set|shake shook shaken|shine shone|shoot shot|show shown
shrink shrank shrunk|shut|sing sang sung|sink sank sunk|sit sat|sleep slept|slide slid
speak spoke spoken|speed sped|spend spent|spin spun|spread|spring sprang sprung|stand stood
steal stole stolen|stick stuck|sting stung|stink stank stunk|strike struck|strive strove striven
swear swore sworn|sweep swept|swim swam swum|swing swung|take took taken|teach taught
tear tore torn|tell told|think thought|throw threw thrown|understand understood|wake woke woken
wear wore worn|weave wove woven|weep wept|win won|wind wound|write wrote written
child children kid kids|mom mother mum|dad father|grandma grandmother granny|grandpa grandfather
grandkid grandchild grandchildren|pic photo picture|bf boyfriend|gf girlfriend
"""
#: Each form → every other form of its word (built once, on the first query that needs it).
VARIANTS: dict[str, tuple[str, ...]] = {}


def variants(term: str) -> tuple[str, ...]:
    """The other forms of ``term`` (``bought`` for ``buy``, ``children`` for ``kids``)."""
    if not VARIANTS:
        for group in _VARIANTS.replace("\n", "|").split("|"):
            forms = group.split()
            for form in forms:
                VARIANTS[form] = tuple(f for f in forms if f != form)
    return VARIANTS.get(term, ())


_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


@cache
def _cjk() -> re.Pattern[str]:
    """The CJK runs' pattern, compiled on first use (about 1.5 ms): ASCII text, a run's usual
    task and answer, never needs it."""
    return re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")


def _grams(run: str, *, unigrams: bool) -> list[str]:
    bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
    if unigrams or len(run) == 1:
        return [*run, *bigrams] if unigrams else [run]
    return bigrams


def index_terms(text: str) -> str:
    """The text as the full-text index should see it."""
    if text.isascii():  # no CJK run in it: the text as it is
        return text
    return _cjk().sub(lambda m: " " + " ".join(_grams(m.group(), unigrams=True)) + " ", text)


def date_terms(ts: str) -> str:
    """An entry's time as words a question uses: ``2023-05-08T13:56…`` → ``Monday 8 May 2023
    2023-05-08``. Empty when the time cannot be read (an imported entry's odd time)."""
    try:
        when = datetime.fromisoformat(ts)
    except ValueError:
        return ""
    return (
        f"{_DAYS[when.weekday()]} {when.day} {_MONTHS[when.month - 1]} {when.year} "
        f"{when.date().isoformat()}"
    )


def all_terms(query: str) -> list[str]:
    """Distinct search terms: lower-cased words, and CJK bigrams (or the lone character)."""
    terms: list[str] = []
    if query.isascii():  # no CJK run in it
        return list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    for piece in _cjk().split(query):
        terms.extend(w.lower() for w in _WORD.findall(piece))
    for run in _cjk().findall(query):
        terms.extend(_grams(run, unigrams=False))
    return list(dict.fromkeys(terms))


def query_terms(query: str) -> list[str]:
    """The terms worth searching: stop words out, unless the query is nothing else."""
    terms = all_terms(query)
    telling = [t for t in terms if t not in STOP_WORDS]
    return telling or terms


def every_term(query: str) -> str | None:
    """An FTS5 MATCH expression needing every term, in any order; None: nothing to search."""
    terms = query_terms(query)
    return " AND ".join(quote_term(t) for t in terms) if terms else None


def quote_term(term: str) -> str:
    """One term as an FTS5 string: no operator or column syntax can leak in."""
    return '"' + term.replace('"', '""') + '"'


def phrase_of(query: str) -> str:
    return " ".join(query.lower().split())
