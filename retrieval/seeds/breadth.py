"""Requests whose evidence is partly the assistant's: broad ones, and ones about what the assistant said.

"Summarize how my project developed over our conversations" or "In what order did we cover the
database, the API and the tests?" needs many turns, and in a long working conversation about half of
them are the assistant's (the plan it proposed, the fix it suggested). The holder factor that keeps
assistant chatter from crowding out the user's own words on a narrow question would drop exactly those
turns here, so a broad request weighs the assistant's evidence neutrally (RetrievalConfig.for_request).
A broad request about what *the user* raised ("summarize the concerns I brought up") keeps the factor.
So does nothing else, except a request about what the assistant itself said ("What approach did you
recommend for ...?"), whose evidence is the assistant's turn. The patterns are table-tested in
tests/test_breadth.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from graph.bm25 import terms

# Each alternative asks for a span of the conversation (a summary, an order, a development) rather
# than a point in it. Measured on the dev sets: all 48 BEAM summarization and event-ordering
# questions match, and 2 of 883 LoCoMo questions. "progress" counts as the verb only (how it
# progressed): the noun names a state asked about at one point ("what did she say about his progress
# with the shop?"), and read as an arc it cost LoCoMo a question once the gist route weighed 10.
BROAD = re.compile(
    r"\b(?:summar\w*|overview|recap|in order|order in which|timeline|chronolog\w*|list (?:all|the|every)|"
    r"throughout|across (?:our|all|the)|over time|so far|progress(?:ed|es|ing)|develop(?:ed|ment) (?:of|over)|"
    r"evolv\w*|all the)\b", re.I)
# What the user raised is the user's evidence: the assistant's replies to it are not what was asked for.
SELF_RAISED = re.compile(r"\bI (?:brought up|mentioned|raised|asked)\b", re.I)
# What the assistant said earlier (past tense: "can you suggest" asks for something new).
ASSISTANT_SAID = re.compile(
    r"\b(?:you(?:'ve| have)? (?:recommended|suggested|advised|proposed|said|told|mentioned|explained|outlined|"
    r"described|provided|gave|shared|offered|walked)|did you (?:recommend|suggest|advise|propose|say|tell|mention|"
    r"explain|outline|describe|provide|give|share|offer))\b", re.I)


def asks_broadly(query: str) -> bool:
    """True when ``query`` asks for a topic's whole arc and not only for what the user raised.

    >>> asks_broadly("Can you summarize how my budgeting app developed across our sessions?")
    True
    >>> asks_broadly("Can you list all the concerns I brought up about the budget?")
    False
    >>> asks_broadly("What did Caroline do in May 2023?")
    False
    """
    return BROAD.search(query) is not None and SELF_RAISED.search(query) is None


def draws_on_assistant(query: str) -> bool:
    """True when the evidence for ``query`` is likely to include what the assistant said: a broad
    request, or one about the assistant's own earlier words.

    >>> draws_on_assistant("What approach did you recommend for my resume keywords?")
    True
    >>> draws_on_assistant("Could you suggest a weekend film for me?")
    False
    """
    return asks_broadly(query) or ASSISTANT_SAID.search(query) is not None


def spans_conversation(query: str) -> bool:
    """True when ``query`` asks for many turns at once (a summary, an order, a development), whoever said them.

    >>> spans_conversation("Walk me through the order in which I brought up each feature.")
    True
    """
    return BROAD.search(query) is not None


# A question about how something changed across time ("How has my sleep changed since I moved?", "How did
# her view of the job shift?"): a change question spans the conversation too, though it names no summary.
CHANGED = re.compile(
    r"\bhow (?:has|have|did|do|does) (?:\w+\W+){1,8}?(?:chang\w*|shift\w*|grow\w*|grown|evolv\w*|develop\w*|"
    r"progress\w*|turn(?:ed)? out|improv\w*|moved on)\b", re.I)
# The linguistic classes of a request that reads per-concept gist lines (the gist route, retrieval/seeds/rank.py),
# each with a test sentence from outside every benchmark in tests/test_breadth.py.
GIST_CLASSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("span of the conversation: summary, order, timeline, development", BROAD),
    ("change across time: how has X changed / grown / evolved", CHANGED))


def asks_for_gist(query: str) -> bool:
    """True when ``query`` wants the arc of a topic (a summary, an order of events, how something
    changed) rather than one fact: it reads one gist line per concept, in time order.

    >>> asks_for_gist("How has my sourdough baking changed since the spring?")
    True
    >>> asks_for_gist("How did you make the sourdough starter?")
    False
    """
    return any(p.search(query) is not None for _, p in GIST_CLASSES)


# Requests that ask for several things at once: the answer is a set whose members were said apart,
# often sessions apart, so the concept route (the members of the live concepts nearest the request,
# retrieval/seeds/rank.py) can pay for them; for a request after one thing it crowds the one answer out
# (docs/results/concept-route.md). Each class has test sentences from outside every benchmark in
# tests/test_breadth.py.
_AUX = r"(?:do|does|did|has|have|had|is|are|was|were|can|could|would|will|should|might)"
# a plural head noun: a word ending in -s that is no singular in -ss / -us / -is and no function word
_PLURAL = r"(?!(?:this|his|hers|its|ours|yours|theirs|always|perhaps|sometimes|whereas|does|was|has|is|us|as)\b)" \
          r"[a-z]\w*[a-rt-z]s(?<!ss)(?<!us)(?<!is)\b"
# a modifier before the head noun, hyphenated or with a sign or a dot inside it ("open-source", "C++", "U.S.")
_MODIFIER = r"\w[\w'+.\-]*"
SEVERAL_CLASSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an enumeration: list, name some, what are some, what else, which ones",
     re.compile(r"\b(?:list|enumerate|name (?:some|all|a few|the|two|three|several)|what (?:are|were) some|"
                r"what else|which ones|what other)\b", re.I)),
    ("a plural wh-object: what / which (kinds of) <plural noun> (aux)",
     re.compile(r"\b(?:what|which)\s+(?:(?:kinds?|types?|sorts?)\s+of\s+\w+|(?:" + _MODIFIER + r"\s+){0,2}?" + _PLURAL +
                r"\s+" + _AUX + r")\b", re.I)),
    ("plural agreement of the wh-word: what are / what were", re.compile(r"\bwhat (?:are|were)\b", re.I)),
    ("several holders: both, each of, all of them", re.compile(r"\b(?:both|each of|all of (?:them|their|his|her))\b",
                                                               re.I)),
    # a duration ("how many days between …") is one span between two dates, not a set of things
    ("a count of things (not of days): how many", re.compile(
        r"\bhow many\b(?!\s+(?:\w+\s+)?(?:seconds?|minutes?|hours?|days?|nights?|weeks?|months?|years?)\b)", re.I)),
)


def asks_for_several(query: str) -> bool:
    """True when ``query`` asks for several things (a set, a list, a count, what two people share),
    not for one fact and not for a topic's arc (``asks_for_gist``).

    >>> asks_for_several("Which board games has Tomas taught his nephews?")
    True
    >>> asks_for_several("Which board game did Tomas teach his nephew first?")
    False
    >>> asks_for_several("Summarize the board games we talked about over time.")
    False
    """
    return not asks_for_gist(query) and any(p.search(query) is not None for _, p in SEVERAL_CLASSES)


# A request word in a line weighs as much as a rare word: the window should hold what was asked about.
REQUEST_WORD_BONUS = 3.0


def informative_window(text: str, idf: Mapping[str, float], request: str, words: int) -> str:
    """The ``words``-word window of ``text`` whose words carry the most information (the summed IDF of
    their terms, request terms weighing ``REQUEST_WORD_BONUS`` more), with "…" where it was cut; ``text``
    itself when it is no longer than that.

    >>> idf = dict.fromkeys(terms("PostgreSQL replication staging"), 3.0)  # stemmed, as the route index keeps it
    >>> informative_window("So anyway I finally set up PostgreSQL replication on the staging box today", idf, "", 5)
    '… PostgreSQL replication on the staging …'
    """
    toks = text.split()
    if len(toks) <= words:
        return text
    asked = set(terms(request))
    val = [sum(idf.get(t, 0.0) + (REQUEST_WORD_BONUS if t in asked else 0.0) for t in terms(w)) for w in toks]
    run = sum(val[:words])
    best, best_run = 0, run
    for i in range(1, len(toks) - words + 1):
        run += val[i + words - 1] - val[i - 1]
        if run > best_run:
            best, best_run = i, run
    return ("… " if best else "") + " ".join(toks[best:best + words]) + (" …" if best + words < len(toks) else "")
