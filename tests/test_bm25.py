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


def test_the_stemmer_loaded_alone_is_nltks_and_imports_nothing_heavy() -> None:
    """The route index's first request must not import nltk's package (scipy, scikit-learn: seconds):
    graph.bm25 runs nltk's porter.py alone. Same stems as ``nltk.stem.PorterStemmer`` (imported here)."""
    import subprocess
    import sys

    from graph.bm25 import _porter_alone
    from nltk.stem import PorterStemmer

    alone, full = _porter_alone(), PorterStemmer()
    assert alone is not None
    assert [alone.stem(w) for w in _WORDS] == [full.stem(w) for w in _WORDS]
    code = ("import sys; from graph.bm25 import stem; assert stem('paintings') == 'paint'; "
            "print(sorted(m for m in ('nltk', 'scipy', 'sklearn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "[]"
