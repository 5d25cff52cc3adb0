"""English word forms for the This-is-not-a-dataset templates: plural, gerund, indefinite article.

The rules copy what the raw release shows, not what a style guide says, because the point is to
regenerate the release exactly: irregular forms come from WordNet's own exception lists
(``noun.exc``, ``verb.exc``, read backwards: base form -> first inflected form in file order,
so ``gas`` stays ``gas`` and ``beef`` becomes ``beeves``), and everything else follows plain
spelling rules (``radio`` -> ``radioes``, ``series`` -> ``serieses``, ``person`` -> ``persons``:
the release has no "people" and no mass-noun exception).  No PyPI inflection package is used: none
reproduces these forms (see src/negbench/tasks/notadataset/build/README.md, "Templates").
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

VOWELS = "aeiou"


@dataclass(frozen=True)
class Exceptions:
    """Irregular forms by base form (spaces, not underscores): ``plural['foot'] == 'feet'``."""

    plural: dict[str, str] = field(default_factory=dict)
    gerund: dict[str, str] = field(default_factory=dict)


def parse_exc(text: str, suffix: str | None = None) -> dict[str, str]:
    """A WordNet ``*.exc`` file read backwards (base -> first inflected form in file order);
    ``suffix`` keeps only inflected forms ending in it (``"ing"`` for gerunds)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        form = parts[0].replace("_", " ")
        if suffix and not form.endswith(suffix):
            continue
        for base in parts[1:]:
            out.setdefault(base.replace("_", " "), form)
    return out


def exceptions_from(folder: str | os.PathLike | None) -> Exceptions:
    """WordNet's exception lists from a wndb folder (empty when the folder or files are absent:
    the spelling rules alone still give most forms)."""
    if folder is None:
        return Exceptions()
    p = Path(folder)
    noun, verb = p / "noun.exc", p / "verb.exc"
    return Exceptions(
        parse_exc(noun.read_text(encoding="utf-8")) if noun.is_file() else {},
        parse_exc(verb.read_text(encoding="utf-8"), "ing") if verb.is_file() else {},
    )


@lru_cache(maxsize=4)
def default_exceptions() -> Exceptions:
    """The exception lists of the WordNet that ``open_wordnet()`` would find, else none."""
    for cand in (os.environ.get("NEGBENCH_WORDNET"), "/usr/share/wordnet"):
        if cand and Path(cand, "noun.exc").is_file():
            return exceptions_from(cand)
    return Exceptions()


_AN_EXPLICIT = re.compile(r"^(?:euler|hour(?!i)|heir|honest|hono[ur])", re.I)
_A_SPECIAL = re.compile(
    r"^(?:e[uw]|[Oo]nc?e\b|[Oo]netime\b|[Uu]ni(?:[^nmd]|mo)|[Uu][bcfghjkqrst][aeiou])"
)
# case-sensitive on purpose: the release has "an Europe" but "a euro"
_AN_ABBREV = re.compile(r"^[aefhilmnorsx]$|^[AEFHILMNORSX](?:[A-Z]|[-\d])", re.I)


def article(word: str) -> str:
    """``a`` or ``an`` by sound, as the release has it: ``an hour``, ``an honour``, ``a unit``,
    ``a use``, ``a union``, but ``an umbrella``, ``an uncle`` (spelling rules in the manner of
    the classic Perl/Python *inflect* A/AN rules, written out here for the cases that matter)."""
    w = word.strip()
    if not w:
        return "a"
    first = w.split()[0]
    if _AN_EXPLICIT.match(first):
        return "an"
    if (
        len(first) > 1
        and first.isupper()
        and first.isalpha()
        or (len(first) > 1 and first[1] == "-")
    ):
        return "an" if _AN_ABBREV.match(first) else "a"  # an X-ray, an FBI agent, a UN body
    if _A_SPECIAL.match(first):
        return "a"
    if re.match(r"^U[NK][AIEO]?", first):
        return "a"
    if first[0].lower() in VOWELS:
        return "an"
    if re.match(r"^y(?:b[lor]|cl[ea]|fere|gg|p[ios]|rou|tt)", first, re.I):
        return "an"
    return "a"


def with_article(word: str) -> str:
    return f"{article(word)} {word}"


def plural(word: str, exc: Exceptions | None = None) -> str:
    """Plural of a noun lemma (multi-word lemmas inflect as a whole: ``human body`` ->
    ``human bodies``)."""
    exc = exc if exc is not None else default_exceptions()
    if word in exc.plural:
        return exc.plural[word]
    low = word.lower()
    if low.endswith(("s", "x", "z", "ch", "sh", "o")):
        return word + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in VOWELS:
        return word[:-1] + "ies"
    return word + "s"


def gerund(word: str, exc: Exceptions | None = None) -> str:
    """The -ing form of a verb lemma; in a multi-word verb only the first word inflects
    (``take off`` -> ``taking off``)."""
    exc = exc if exc is not None else default_exceptions()
    if word in exc.gerund:
        return exc.gerund[word]
    head, sep, rest = word.partition(" ")
    if sep:
        return gerund(head, exc) + sep + rest
    low = head.lower()
    if low in exc.gerund:
        return exc.gerund[low]
    if low.endswith("ie"):
        return head[:-2] + "ying"
    if low.endswith("e") and not low.endswith(("ee", "ye", "oe")) and len(low) > 2:
        return head[:-1] + "ing"
    return head + "ing"


def capitalise(text: str) -> str:
    """Upper-case the first character only (``DNA`` and glosses keep the rest as they are)."""
    return text[:1].upper() + text[1:]
