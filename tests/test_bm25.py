"""The fact/turn BM25 of the route index: stop words out, Porter stems in."""

from __future__ import annotations

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
