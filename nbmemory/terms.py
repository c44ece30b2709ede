"""Words for ranking text: the content words of a text, and the BM25 weight of one of them.

The offline model and recall rank with these, so that what one finds the other would too.
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys
import threading
import types
from collections.abc import Iterable
from typing import Any

_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
_DIGIT = re.compile(r"\d")
_POSSESSIVE = re.compile(r"'s$")
_SENTENCE_BREAK = re.compile(r"[.!?]\s+\S|\n\s*\n")
STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in
    into is it its me my no not of on or our so than that the their them then there these they
    this to up us was we were what when where which who why will with would you your about
    please tell say said just also any all some more most very remind he him his she her""".split()
)
QUESTION_WORDS = frozenset(
    "what when where which who whom whose why how do does did is are was were can could "
    "should would will remind recall".split()
)
K1 = 1.2
"""BM25's saturation: how little a word's second and later uses in one message add."""
B = 0.5
"""BM25's length normalisation, half of it: in a chat, a long message is not a wordier way of
saying one thing, as a long document is, but several things said (human_recall.py: 0.75 finds
less evidence, on conversations people wrote and on generated ones)."""


def words(text: str) -> list[str]:
    """Lower-case content words, stemmed so that forms of a word meet ("documents",
    "document" -> "document"; "picked", "pick" -> "pick"; "studies", "studying" -> "studi");
    a word over :data:`LONGEST_STEMMED` characters is kept as it is."""
    stems = _stems
    found = []
    for word in _WORD.findall(text.lower().replace("\u2019", "'")):
        if word in STOPWORDS:
            continue
        stem = stems.get(word)
        if stem is None:
            # Numbers and codes have no forms: a stemmer would give them back as they are.
            long = len(word) > LONGEST_STEMMED
            stem = word if long or _DIGIT.search(word) else _stem(word)
        found.append(stem)
    return found


LONGEST_STEMMED = 64
"""Characters of the longest word :func:`words` stems; a longer one (a hash, a key, a run of
one letter) is a term as it is. No English word is that long, and the stemmer's time grows
with the square of a word's length: a megabyte of ``y`` took it a minute."""


# Irregular verb forms a stemmer cannot join to their verb ("bought" -> "buy"), the common
# ones that are seldom another word ("left", "found", "rose" are left alone).
_IRREGULAR = {
    form: verb
    for verb, forms in (
        line.split(":")
        for line in """
        begin:began,begun bite:bit,bitten blow:blew,blown break:broke,broken
        bring:brought build:built buy:bought catch:caught choose:chose,chosen come:came
        do:done draw:drew,drawn drink:drank,drunk drive:drove,driven eat:ate,eaten
        fall:fell,fallen feed:fed feel:felt fight:fought fly:flew,flown forget:forgot,forgotten
        freeze:froze,frozen get:got,gotten give:gave,given go:went,gone grow:grew,grown
        hear:heard hide:hid,hidden hold:held keep:kept know:knew,known
        lead:led lend:lent lose:lost make:made mean:meant meet:met pay:paid ride:rode,ridden
        ring:rang,rung rise:risen run:ran say:said see:saw,seen seek:sought sell:sold
        send:sent shake:shook,shaken shoot:shot sing:sang,sung sit:sat sleep:slept
        speak:spoke,spoken spend:spent stand:stood steal:stole,stolen stick:stuck
        swim:swam,swum take:took,taken teach:taught tear:tore,torn tell:told think:thought
        throw:threw,thrown understand:understood wake:woke,woken wear:wore,worn win:won
        write:wrote,written
        """.split()
    )
    for form in forms.split(",")
}
_stems: dict[str, str] = {}
_stemmer_lock = threading.Lock()
_STEMS_KEPT = 200_000


def _stem(word: str) -> str:
    """``word`` stemmed by the Snowball English stemmer, remembered: a text repeats its words,
    and a stemmer object is not safe to share between threads."""
    global _stemmer
    with _stemmer_lock:
        if _stemmer is None:
            _stemmer = _english_stemmer()
        stem = _stemmer.stemWord(_IRREGULAR.get(word) or _POSSESSIVE.sub("", word).replace("'", ""))
        if len(_stems) >= _STEMS_KEPT:  # a stream of made-up words (codes) keeps no memory
            _stems.clear()
        _stems[word] = stem
    return stem


_stemmer = None
_SNOWBALL = "_nbmemory_snowball"
"""The name snowballstemmer's folder is imported under when its English stemmer is taken
alone (its own name would run its ``__init__``)."""


def _english_stemmer() -> Any:
    """The stemmer ``snowballstemmer.stemmer("english")`` gives (PyStemmer's, when it is
    installed), without importing the stemmers of its thirty-odd other languages, which
    ``import snowballstemmer`` does: 10 to 30 ms at the first recall of each process."""
    try:
        import Stemmer

        return Stemmer.Stemmer("english")
    except ImportError:
        pass
    if "snowballstemmer" not in sys.modules:
        spec = importlib.util.find_spec("snowballstemmer")
        if spec is not None and spec.submodule_search_locations:
            package = sys.modules.get(_SNOWBALL)
            if package is None:
                package = types.ModuleType(_SNOWBALL)
                package.__path__ = list(spec.submodule_search_locations)
                sys.modules[_SNOWBALL] = package
            try:
                return importlib.import_module(f"{_SNOWBALL}.english_stemmer").EnglishStemmer()
            except (ImportError, AttributeError):  # laid out otherwise: the usual way
                pass
    import snowballstemmer

    return snowballstemmer.stemmer("english")


def is_question(text: str) -> bool:
    """Whether a text only asks: one sentence ending with "?" or opening with a question word.

    A longer text that ends with a question ("The code is X. Can you confirm?") also tells.
    """
    text = text.strip()
    if not text or _SENTENCE_BREAK.search(text):
        return False
    return text.endswith("?") or text.split(maxsplit=1)[0].lower() in QUESTION_WORDS


def idf(documents: int, containing: int) -> float:
    """How telling a word is: rare words weigh more (BM25's inverse document frequency)."""
    return math.log(1 + (documents - containing + 0.5) / (containing + 0.5))


def bm25_term(count: int, length: int, average: float) -> float:
    """A word's BM25 weight in a document of ``length`` words where it occurs ``count`` times,
    before the ``idf`` factor."""
    return count * (K1 + 1) / (count + K1 * (1 - B + B * length / (average or 1.0)))


_SALIENT = re.compile(
    r"\b\d{4}-\d\d-\d\d(?:T[\d:]+)?\b"  # ISO dates and times
    r"|\b[A-Za-z]*\d[\w.,/:-]*\w|\b[A-Za-z]+\d\b"  # a digit and more: amounts, codes, versions
    r"|\b[A-Z][A-Za-z]*[A-Z][\w-]*"  # ACRONYMS and CamelCase names
    r"|\b[A-Z][a-z]{2,}\b"  # capitalised words: names, when they do not open a sentence
)
_OPENS_SENTENCE = re.compile(
    r"(?:[.!?:][\"')\]\u201d\u2019]?\s+|\n[ \t]*(?:(?:[-*+>#|]+|\d+[.)])[ \t]+)*)"
    r"[\"'(\[\u201c\u2018*_`]*$"
)
"""What ends the text before a word that opens a sentence: a sentence's end, or a line's start
with Markdown's marks of a list item, heading, quote or table cell, then quotes or emphasis
(JSON's strings, ``**Bold**``)."""
_LOOKBACK = 16
"""Characters before a capitalised word that :data:`_OPENS_SENTENCE` looks at."""
COMMON_WORDS = frozenset(
    """about above across after again against ago ahead almost alone along already although
    always among another anyone anything anyway around away back because before behind below
    besides between beyond both during each either else enough even ever every everyone
    everything except few first further here however instead last later least less like maybe
    meanwhile might must near neither never next none nor now nothing often once only other
    others otherwise over perhaps rather really second should since still such sure then
    therefore though through thus today together tomorrow tonight too under unless until
    usually via well whether while within without yes yesterday yet
    hello hey thanks thank okay sorry great good fine right yeah yep nope welcome noted got
    let lets one two three four five six seven eight nine ten new old previous third
    add ask book bring call change check choose click close confirm copy create delete done
    edit find finish fix follow get give keep list look make move need open pick plan put
    remember remove reply review run save see send set show start stop take try update use
    wait want write
    bold italic italics underline strikethrough heading header title table row column cell
    item bullet link code block quote note notes tip warning caution important info example
    summary overview details detail section step steps result results answer question output
    input total status draft final version todo compressed memory earlier""".split()
)
"""Common words that head lines, list items and labels, or name formatting ("After", "See",
"Bold", "Note"), capitalised more often than they are names; and the words of nbmemory's own
summary marker, "[Compressed Memory Summary]". None of them is a term a summary could drop.
Words that are often names too ("Will", "May", "Mark", "Nice") are not among them."""


def salient_terms(text: str) -> list[str]:
    """The names, numbers, dates and identifiers of a text, in order, each once.

    Not terms: a capitalised word that opens a sentence or a line, a common word
    (:data:`COMMON_WORDS`) however it is written, and a digit alone ("Step 2 of 4")."""
    found = []
    for match in _SALIENT.finditer(text):
        term = match.group()
        if term.isalpha() and term.lower() in COMMON_WORDS:
            continue
        titled = term[0].isupper() and term[1:].islower()
        if titled and (term.lower() in STOPWORDS or _opens_sentence(text, match.start())):
            continue
        found.append(term)
    return list(dict.fromkeys(found))


def _opens_sentence(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence or a line of ``text``."""
    before = text[max(0, start - _LOOKBACK) : start]
    return bool(_OPENS_SENTENCE.search(before if start > _LOOKBACK else f"\n{before}"))


def missing_terms(text: str, kept: str, *, ignore: Iterable[str] = ()) -> list[str]:
    """The salient terms of ``text`` that ``kept`` does not contain (any case).

    ``ignore`` names the speakers (roles, the agent's name): a transcript labels its lines with
    them, so they are no term a summary could drop."""
    return left_out(salient_terms(text), kept, ignore=ignore)


def left_out(terms: Iterable[str], kept: str, *, ignore: Iterable[str] = ()) -> list[str]:
    """The ``terms`` that ``kept`` does not contain (any case), but for ``ignore`` (speakers):
    :func:`missing_terms` once the salient terms of a text are known."""
    folded = kept.casefold()
    speakers = {speaker.casefold() for speaker in ignore}
    return [
        term for term in terms if (lower := term.casefold()) not in speakers and lower not in folded
    ]
