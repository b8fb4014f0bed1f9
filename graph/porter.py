"""The Porter stemmer as NLTK runs it by default (``PorterStemmer()``, mode ``NLTK_EXTENSIONS``), vendored.

Adapted from ``nltk/stem/porter.py`` (NLTK 3.x, Apache License 2.0, (c) the NLTK Project; authors
Vivake Gupta, Barry Wilkins, Mark Amery, Martin Porter's algorithm: "An algorithm for suffix stripping",
Program 14.3 (1980): 130-137): the same rules in the same order, with only the NLTK-extensions branches
kept (the original-algorithm and Martin-extensions modes are dropped) and no import of the nltk package,
whose ``__init__`` pulls scipy and scikit-learn (seconds of a process's first retrieval). The LoCoMo
scorer stems with NLTK, so the stems must be NLTK's to the letter: ``tests/test_bm25.py`` compares them
with ``nltk.stem.PorterStemmer`` on a word list of every rule class and on generated words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Cond = Callable[[str], bool] | None
Rule = tuple[str, str, Cond]

_VOWELS = frozenset("aeiou")

# Irregular forms (NLTK's table): "the errors actually drawn to Martin Porter's attention over 20 years".
_POOL: dict[str, str] = {v: k for k, vs in {
    "sky": ["sky", "skies"], "die": ["dying"], "lie": ["lying"], "tie": ["tying"], "news": ["news"],
    "inning": ["innings", "inning"], "outing": ["outings", "outing"], "canning": ["cannings", "canning"],
    "howe": ["howe"], "proceed": ["proceed"], "exceed": ["exceed"], "succeed": ["succeed"]}.items() for v in vs}


def _is_consonant(word: str, i: int) -> bool:
    """A letter other than a vowel, and other than a 'y' after a consonant (a run of 'y's alternates)."""
    if word[i] in _VOWELS:
        return False
    if word[i] == "y":
        negate = False
        while i > 0 and word[i] == "y":
            negate = not negate
            i -= 1
        return (word[i] not in _VOWELS) != negate
    return True


def _consonant_flags(word: str) -> list[bool]:
    flags: list[bool] = []
    for i, ch in enumerate(word):
        if ch in _VOWELS:
            flags.append(False)
        elif ch == "y":
            flags.append(True if i == 0 else not flags[i - 1])
        else:
            flags.append(True)
    return flags


def _measure(stem: str) -> int:
    """m in [C](VC){m}[V]: the number of vowel-consonant transitions."""
    return "".join("c" if c else "v" for c in _consonant_flags(stem)).count("vc")


def _positive(stem: str) -> bool:
    return _measure(stem) > 0


def _contains_vowel(stem: str) -> bool:
    return not all(_consonant_flags(stem))


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _is_consonant(word, len(word) - 1)


def _ends_cvc(word: str) -> bool:
    """*o: ends consonant-vowel-consonant, the last not w, x or y (NLTK: also a two-letter vowel-consonant word)."""
    return (len(word) >= 3 and _is_consonant(word, len(word) - 3) and not _is_consonant(word, len(word) - 2)
            and _is_consonant(word, len(word) - 1) and word[-1] not in ("w", "x", "y")) or (
        len(word) == 2 and not _is_consonant(word, 0) and _is_consonant(word, 1))


def _cut(word: str, suffix: str, replacement: str) -> str:
    return word + replacement if suffix == "" else word[: -len(suffix)] + replacement


def _apply(word: str, rules: Sequence[Rule]) -> str:
    """The first rule whose suffix ends ``word``: applied if its condition holds on the stem, else none."""
    for suffix, replacement, condition in rules:
        if suffix == "*d" and _ends_double_consonant(word):
            stem = word[:-2]
            return stem + replacement if condition is None or condition(stem) else word
        if word.endswith(suffix):
            stem = _cut(word, suffix, "")
            return stem + replacement if condition is None or condition(stem) else word
    return word


def _step1a(word: str) -> str:
    if word.endswith("ies") and len(word) == 4:
        return _cut(word, "ies", "ie")
    return _apply(word, [("sses", "ss", None), ("ies", "i", None), ("ss", "ss", None), ("s", "", None)])


def _step1b(word: str) -> str:
    if word.endswith("ied"):
        return _cut(word, "ied", "ie" if len(word) == 4 else "i")
    if word.endswith("eed"):
        stem = _cut(word, "eed", "")
        return stem + "ee" if _measure(stem) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix):
            mid = _cut(word, suffix, "")
            if _contains_vowel(mid):
                break
    else:
        return word
    return _apply(mid, [("at", "ate", None), ("bl", "ble", None), ("iz", "ize", None),
                        ("*d", mid[-1], lambda stem: mid[-1] not in ("l", "s", "z")),
                        ("", "e", lambda stem: _measure(stem) == 1 and _ends_cvc(stem))])


def _step1c(word: str) -> str:
    return _apply(word, [("y", "i", lambda stem: len(stem) > 1 and _is_consonant(stem, len(stem) - 1))])


_STEP2: list[Rule] = [(s, r, _positive) for s, r in (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"), ("bli", "ble"),
    ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"),
    ("ator", "ate"), ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
    ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"), ("fulli", "ful"))]


def _step2(word: str) -> str:
    if word.endswith("alli") and _positive(_cut(word, "alli", "")):
        return _step2(_cut(word, "alli", "al"))
    return _apply(word, [*_STEP2, ("logi", "log", lambda stem: _positive(word[:-3]))])


_STEP3: list[Rule] = [(s, r, _positive) for s, r in (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", ""))]


def _gt1(stem: str) -> bool:
    return _measure(stem) > 1


_STEP4: list[Rule] = [(s, "", _gt1) for s in ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement",
                                               "ment", "ent")] + [
    ("ion", "", lambda stem: _measure(stem) > 1 and stem[-1] in ("s", "t"))] + [
    (s, "", _gt1) for s in ("ou", "ism", "ate", "iti", "ous", "ive", "ize")]


def _step5a(word: str) -> str:
    if word.endswith("e"):
        stem = _cut(word, "e", "")
        if _measure(stem) > 1:
            return stem
        if _measure(stem) == 1 and not _ends_cvc(stem):
            return stem
    return word


def _step5b(word: str) -> str:
    return _apply(word, [("ll", "l", lambda stem: _measure(word[:-1]) > 1)])


def stem(word: str, to_lowercase: bool = True) -> str:
    """``nltk.stem.PorterStemmer().stem(word, to_lowercase)``."""
    s = word.lower() if to_lowercase else word
    if s in _POOL:
        return _POOL[s]
    if len(word) <= 2:
        return s
    for step in (_step1a, _step1b, _step1c, _step2):
        s = step(s)
    s = _apply(s, _STEP3)
    s = _apply(s, _STEP4)
    return _step5b(_step5a(s))
