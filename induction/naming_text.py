"""The text side of concept naming: the words of a fact per clause, its candidate terms (content words and
adjacent pairs of them), and the proper nouns of a user's facts (capitalised mid-sentence most of the time).

The frames that carry no topic are cut before words are read: a speaker's "Name:" prefix, image captions'
frames ("shared an image: a photo of"), bracketed annotations and formulas of effort ("keep up the great work").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from functools import lru_cache

from induction.naming_words import _common_ok, _ok, verbal

_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*[A-Za-z]|[A-Za-z]")
_SPEAKER = re.compile(r"^[^:\n]{1,40}:\s*")
# Formulas of effort and praise in which "work" names no job or task: "your hard work paid off", "keep up the
# great work", "I'll make it work", "it worked out". Cut before terms are read, so "work" then counts only where
# it names a job ("my work at the clinic", "work hours").
_EFFORT = re.compile(r"\b(?:hard|good|great|amazing|awesome|nice|fantastic|incredible|excellent|wonderful|tireless)"
                     r"\s+work\b|\bkeep(?:ing)?\s+up\s+the\s+(?:\w+\s+)?work\b|\bmake\s+(?:it|this|that|things)\s+work\b|"
                     r"\bwork(?:s|ed|ing)?\s+out\b", re.I)
_ANNOT = re.compile(r"\[[^\]]*\]|\([^)]*\d{4}[^)]*\)")  # "[image: …]" captions' brackets, "(2023-05-07)" dates
# The frame of an image caption (LoCoMo's turns say "shared an image: a photo of a dog on a couch"): the
# depiction words name the medium, not the subject; the subject after "of" stays.
_CAPTION = re.compile(r"\bshared an? (?:image|photo|picture|pic)\b\s*:?|\b(?:a|an|the|this|my)\s+(?:close[- ]up\s+)?"
                      r"(?:photo(?:graph|graphy)?|picture|image|pic|snapshot|screenshot|selfie)\s+(?:of|with)\b", re.I)


class ProperCounts:
    """How often each word is written capitalised mid-sentence, lower-case, or only sentence-first, over a
    changing set of texts (``add`` / ``remove``); ``words()`` are the proper nouns (see ``proper_nouns``)."""

    def __init__(self, texts: Iterable[str] = ()):
        self.cap, self.low, self.first = Counter[str](), Counter[str](), Counter[str]()
        for t in texts:
            self.add(t)

    def _update(self, text: str, sign: int) -> None:
        for sent in re.split(r"(?<=[.!?])\s+", _SPEAKER.sub("", text)):
            for i, w in enumerate(_WORD.findall(sent)):
                if w == "I":
                    continue
                if i == 0:  # a sentence's first word is capitalised anyway: it counts only for a never-lowercase word
                    self.first[w.lower()] += sign
                    continue
                (self.cap if w[0].isupper() else self.low)[w.lower()] += sign

    def add(self, text: str) -> None:
        self._update(text, 1)

    def remove(self, text: str) -> None:
        self._update(text, -1)

    def words(self) -> frozenset[str]:
        cap, low, first = self.cap, self.low, self.first
        return frozenset(w for w in set(cap) | set(first) if (cap[w] >= 2 and cap[w] >= 3 * low[w])
                         or (cap[w] + first[w] >= 2 and cap[w] >= 1 and low[w] <= 0))


def proper_nouns(texts: Iterable[str]) -> frozenset[str]:
    """Words written capitalised in the middle of a sentence most of the time: names of people and pets
    ("Oliver", "Luna"). They tell one story apart, not what a group of facts is about."""
    return ProperCounts(texts).words()


@lru_cache(maxsize=100_000)
def _chunks(text: str) -> tuple[tuple[str, ...], ...]:
    """The text's words, lower-cased, per clause (punctuation and a caption's frame cut a phrase)."""
    t = _EFFORT.sub(",", _CAPTION.sub(",", _ANNOT.sub(" ", _SPEAKER.sub("", text))))
    out = []
    for chunk in re.split(r"[,.;:!?()\"]+", t.lower()):
        words = [w.strip("'-") for w in _WORD.findall(chunk)]
        out.append(tuple(w[:-2] if w.endswith("'s") else w for w in words))
    return tuple(out)


def terms(text: str, names: frozenset[str], proper: frozenset[str],
          ok: Callable[[str], bool] | None = None) -> list[str]:
    """The text's candidate terms: content words and adjacent pairs of content words ("pottery class"); a word
    that its neighbours make a verb or an adjective here is none (``naming_words.verbal``)."""
    good = ok or (lambda w: _ok(w, names, proper))
    out: list[str] = []
    for words in _chunks(text):
        keep = [w if good(w) and not verbal(words, i) else "" for i, w in enumerate(words)]
        out.extend(w for w in keep if w)
        out.extend(f"{a} {b}" for a, b in zip(keep, keep[1:]) if a and b and a != b)
    return out


@lru_cache(maxsize=100_000)
def _common_terms(text: str) -> frozenset[str]:
    """``terms`` with the user-independent filter only: the user's names and proper nouns are taken out
    later (a term is dropped when one of its words is one), which gives the same terms."""
    return frozenset(terms(text, frozenset(), frozenset(), _common_ok))

