"""The fact/turn BM25 of the route index: stop words out, Porter stems in."""

from __future__ import annotations

from pathlib import Path

from graph.bm25 import BM25, stem, terms


def test_terms_drop_stop_words_and_stem() -> None:
    assert terms("What did Maria start recently?") == ["maria", "start", "recent"]
    assert terms("What did Maria start recently?", stemmed=False) == ["maria", "start", "recently"]
    assert [stem(w) for w in ("started", "starting", "paintings", "volunteering")] == ["start", "start", "paint", "volunt"]


def test_a_request_finds_another_form_of_its_words() -> None:
    docs = ["Maria: I just started volunteering at a local dog shelter.", "Maria: My dog loves the park."]
    q = "What new activity did Maria start recently? Volunteer work?"
    stemmed = BM25(docs).sparse_scores(q)
    plain = BM25(docs, stemmed=False).sparse_scores(q)
    assert stemmed[0] > stemmed[1]  # "start"/"started", "volunteer"/"volunteering"
    assert plain[0] < plain[1]  # unstemmed, only the name matches, and the shorter line wins


# Words of every Porter rule class (plurals, -ed/-ing, -ational, -iveness, -ement, double consonants,
# y->i), none taken from a benchmark.
_WORDS = ("caresses ponies ties caress cats feed agreed disabled matting mating meeting milling messing "
          "meetings happy sky relational conditional rational valenci hesitanci digitizer conformabli "
          "radicalli differentli vileli analogousli vietnamization predication operator feudalism "
          "decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate formative "
          "formalize electriciti electrical hopeful goodness revival allowance inference airliner "
          "gyroscopic adjustable defensible irritant replacement adjustment dependent adoption homologou "
          "communism activate angulariti homologous effective bowdlerize probate rate cease controll "
          "roll generously dying lying tying news proceed exceed succeed skies spied mice Running").split()


def _generated_words(n: int = 20_000) -> list[str]:
    """Random stems with one or two suffixes of every rule (and runs of 'y'), so each rule's condition
    meets stems of every measure."""
    import random

    suffixes = ("ational tional enci anci izer bli abli alli entli eli ousli ization ation ator alism iveness "
                "fulness ousness aliti iviti biliti fulli logi icate ative alize iciti ical ful ness al ance ence "
                "er ic able ible ant ement ment ent ion sion tion ou ism ate iti ous ive ize e ll ies ied eed ed "
                "ing sses ss s y yy at bl iz").split()
    rng = random.Random(45)
    out = []
    for _ in range(n):
        w = "".join(rng.choice("abcdefghilmnoprstuvwyz") for _ in range(rng.randint(1, 7))) + rng.choice(suffixes)
        out.append(w + rng.choice(suffixes) if rng.random() < 0.3 else w)
    return out + ["y", "yy", "yyyy", "ay", "by", "Skies", "DYING"]


def test_the_vendored_stemmer_is_nltks_and_imports_nothing_heavy() -> None:
    """The route index's first request must not import nltk's package (scipy, scikit-learn: seconds):
    graph/porter.py is NLTK's default Porter stemmer vendored. Same stems as ``nltk.stem.PorterStemmer``
    (imported here) on every rule class and on generated words."""
    import subprocess
    import sys

    from graph.porter import stem as vendored
    from nltk.stem import PorterStemmer

    full = PorterStemmer()
    words = [*_WORDS, *_generated_words()]
    differ = [w for w in words if vendored(w) != full.stem(w)]
    assert differ == []
    assert len({vendored(w) for w in words}) > 1000  # not a stemmer that returns its input unchanged
    assert [vendored(w) for w in _WORDS] != _WORDS
    code = ("import sys; from graph.bm25 import stem; assert stem('paintings') == 'paint'; "
            "print(sorted(m for m in ('nltk', 'scipy', 'sklearn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "[]"
