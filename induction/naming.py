"""Readable names for induced concepts: a short noun phrase from the members' characteristic terms,
and a one-line description.

A term is characteristic when it is over-represented in the members against the user's other facts
(smoothed log-odds × count, as ``induction.concepts.characteristic_terms``). What can never name a
topic is left out before scoring: speakers' names (the fact holders, and their short forms: "Mel" for
Melanie), pronouns, function words, common verbs and their forms ("bring", "feeling", "went"), and
words of feeling or chat that every kind of fact uses ("joy", "glad", "awesome"). Adjacent content
words that recur together ("pottery class", "adoption agency") are candidates as phrases, so a name
is either such a phrase or two single terms joined: "pottery class", "camping and hiking".

Pure functions over texts; deterministic (ties break alphabetically).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache

import numpy as np

from induction.offline import STOP

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
PRONOUNS = frozenset("i me my mine myself you your yours yourself we us our ours ourselves he him his himself she her "
                     "hers herself it its itself they them their theirs themselves one someone somebody anyone anybody "
                     "everyone everybody everything anything nothing something each other whom whose who".split())
FUNCTION = frozenset("a an the and or but nor plus if then than so as at by for from in into of off on onto out over to up "
                     "upon with within without about above after again against along among around before behind below "
                     "beneath beside besides between beyond down during except inside near since through throughout "
                     "till toward towards under until via while yet not no yes also just only even still very too really "
                     "quite rather much many more most less least lot lots such same other another both either neither "
                     "all any some few every each this that these those there here where when why how what which whatever "
                     "whenever wherever however already always never ever often sometimes usually soon later now today "
                     "tomorrow yesterday tonight ago once twice well back away maybe perhaps though although because "
                     "unless whether like can could would should shall will may might must am is are was were be been "
                     "being do does did done doing have has had having get gets got getting gotten going gonna wanna "
                     "let let's lets oh ah hey hi hello bye thanks thank please ok okay yeah yep nope sure cool wow "
                     "haha lol omg im ive id ill dont didnt cant isnt wasnt thats whats it's that's i'm i've i'd i'll "
                     "you're you've we're we've they're don't didn't can't isn't wasn't won't wouldn't couldn't "
                     "shouldn't doesn't aren't haven't hasn't there's here's what's let's one two three four five first "
                     "last next new old big little great good bad best better nice awesome amazing wonderful fantastic "
                     "incredible super cute fun hard easy sorry glad happy sad excited proud thankful grateful lucky "
                     "own true real whole entire kind sort type bit part way ways thing things stuff time times day days "
                     "week weeks month months year years moment moments lately recently currently totally definitely "
                     "absolutely especially actually literally finally honestly seriously probably others together long "
                     "unique lots loads alot able ready whole hard huge tiny enough around anyway otherwise "
                     "ya yo dude bro wanna gotta kinda sorta meant ahead right wrong cozy aww else".split())
# Common verbs (base forms); their -s/-ed/-ing forms and the irregular pasts below are verbs too.
_VERBS = ("be have do say go get make know think take see come want look use find give tell work call try ask need feel "
          "become leave put mean keep let begin seem help talk turn start show hear play run move like live believe hold "
          "bring happen write provide sit stand lose pay meet include continue set learn change lead understand watch "
          "follow stop create speak read allow add spend grow open walk win offer remember love consider appear buy "
          "wait serve die send expect build stay fall cut reach kill remain suggest raise pass sell require report "
          "decide pull share enjoy hope plan miss check finish join visit thank wish care matter teach explore "
          "inspire encourage support celebrate appreciate realize imagine guess admire adore hate prefer discover "
          "manage focus mention agree seem sound stick catch chat tell wonder reflect inspire motivate pursue "
          "keep push hang touch connect express accept achieve admit apply argue arrive avoid bear beat blow "
          "break burn choose cry deal draw drink drive eat fight fill fit fly forget forgive hide hit hurt "
          "invite jump kick laugh lay lie listen marry mind notice own pick prepare pray promise protect prove "
          "recommend relax rely remind rest return ride ring rise save search seek shake shine shoot sing sleep "
          "smell smile solve sort spread steal strike surprise swing throw treat trust wake wear worry feed "
          "tend handle cherish value treasure gain overcome embrace nurture thrive struggle strive recharge "
          "sign post involve spread give receive mean seem hang tag lend owe"
          ).split()
_IRREGULAR = frozenset("was were been am is are did done had has said went gone got gotten made knew known thought took "
                       "taken saw seen came gave given told found felt left kept began begun brought held wrote written "
                       "stood lost paid met led understood spoke spoken read spent grew grown won bought sold sent built "
                       "fell fallen cut taught caught chose chosen drew drawn drank drove driven ate eaten fought flew "
                       "flown forgot forgotten hid hit hurt lay laid lied rode rang rose risen sang sung slept shook "
                       "shone shot stole struck swung threw thrown wore worn woke fed overcame sat let put set".split())


def _verb_forms(base: Iterable[str]) -> frozenset[str]:
    out: set[str] = set(_IRREGULAR)
    for v in base:
        stem = v[:-1] if v.endswith("e") else v
        dbl = v + v[-1] if re.fullmatch(r"[^aeiou]*[aeiou][bdgmnprt]", v) else v
        out.update({v, v + "s", v + "es", stem + "ed", dbl + "ed", stem + "ing", dbl + "ing", v + "d"})
        if v.endswith("y"):
            out.update({v[:-1] + "ies", v[:-1] + "ied"})
    return frozenset(out)


VERBS = _verb_forms(_VERBS)
# Nouns that read like verb forms and name topics well: kept even though a verb list would drop them.
_NOUN_FORMS = frozenset("painting paintings drawing drawings camping hiking running swimming cooking baking reading "
                        "writing singing dancing gardening fishing climbing cycling skiing surfing volunteering "
                        "parenting counseling building wedding meeting meetings feelings feeling learning "
                        "shopping training teaching acting walks walk hike hikes ride rides run runs swim play plays "
                        "show shows work game games change changes plan plans support love care".split())
# Feeling and chat words: every kind of fact uses them, so they name no topic.
MOOD = frozenset("joy joyful happiness fun love loved lovely loving glad feel feeling feelings emotion emotions "
                 "heart hearts mind minds vibe vibes energy positive positivity negative cool awesome amazing "
                 "wonderful beautiful gorgeous stunning great nice good bad sorry congrats congratulations proud "
                 "pride inspiration inspiring inspired excited exciting excitement blessed thankful grateful "
                 "special important meaningful memories memory moments moment life lives world journey experience "
                 "experiences idea ideas reminder sense self people person folks guy guys lot stuff things thing "
                 "image photo picture pic pics shared share caption hear sounds sound wow yeah".split())


# Relational nouns that head a partitive or locative frame ("a group of", "a bunch of", "in front of",
# "in the background"): they say how much or where, never what.
PARTITIVE = frozenset("group groups bunch bunches pair pairs piece pieces lot lots number variety set sets "
                      "front back top bottom side sides middle background foreground corner edge center centre "
                      "inside outside surface row rows pile stack handful plenty".split())
# Generic human nouns (who, in general): a caption's "a man and a woman", "people" — no topic.
PERSON = frozenset("man men woman women person persons people guy guys lady ladies gentleman individual "
                   "individuals folks someone somebody".split())
# Nouns that live in fixed discourse formulas ("make a difference", "your words mean a lot", "loved ones",
# "at the end of the day", "the key is"): the formula says nothing about the topic.
FORMULA = frozenset("difference words word ones deal point fact matter end luck chance reason example question "
                    "key anything everything nothing idea ideas favorites favorite fave faves tough forward".split())
# Time-of-day and calendar-span nouns: when something happened, not what.
WHEN = frozenset("night nights morning mornings evening evenings afternoon afternoons weekend weekends hour hours "
                 "minute minutes while date dates".split())

_ADJ = frozenset("small large electric thrilled determined precious safe sweet different top aww blue red green white black pink yellow purple orange brown gray grey "
                 "powerful passionate vital free open close full empty strong weak warm cool cold hot dark bright "
                 "deep high low main major minor simple complex important personal public private social local "
                 "various several certain possible difficult calm quiet peaceful busy crazy wild lovely".split())
_AL_NOUNS = frozenset("animal animals festival festivals journal journals hospital proposal arrival rental recital "
                      "signal capital ritual rituals manual tutorial tutorials criminal original mural murals "
                      "carnival medal medals goal goals pedal petal petals canal".split())


# Participial adjectives of evaluation and effect ("it was so rewarding", "a relaxing walk"): -ing words that say
# what something was like, never what it is. Without them the gerund rule (an -ing word outside the common verbs
# names an activity, see ``_head_noun``) reads them as activities: "nature and rewarding".
_ING_ADJ = frozenset("rewarding fulfilling satisfying relaxing refreshing calming soothing comforting uplifting "
                     "inspiring encouraging interesting fascinating intriguing captivating exciting thrilling "
                     "amazing stunning astonishing surprising breathtaking heartwarming touching moving humbling "
                     "challenging demanding exhausting tiring overwhelming daunting terrifying frightening scary "
                     "boring annoying frustrating disappointing depressing upsetting worrying confusing embarrassing "
                     "charming appealing promising outstanding striking pleasing enriching empowering liberating "
                     "rejuvenating invigorating energizing entertaining engaging amusing exhilarating eye-opening "
                     "life-changing mind-blowing awe-inspiring heartbreaking nerve-wracking".split())


def adjective(w: str) -> bool:
    """A word that describes rather than names (a heuristic: short lists and the adjective endings)."""
    if w in _ADJ or w in _ING_ADJ or (w.endswith("al") and w not in _AL_NOUNS):
        return True
    if "-" in w:
        return w.endswith(("ing", "ed", "ful", "ive", "-free", "-friendly", "-like"))
    return w.endswith(("ful", "ive", "ous", "able", "ible", "less", "ish", "ent", "ant")) and len(w) > 5 and w not in (
        "student", "students", "parent", "parents", "moment", "event", "events", "restaurant", "plant", "plants",
        "assistant", "tournament", "instrument", "instruments", "apartment", "department", "environment",
        "treatment", "equipment", "appointment", "government", "achievement", "volunteer", "elephant", "tenant",
        "infant", "accident", "president", "client", "agent", "talent", "talents", "documentary", "olive", "detective",
        "relatives", "relative", "archive", "native", "executive", "representative", "motive", "incentive")


def _head_noun(w: str) -> bool:
    """Can end a name: not an adjective, a common verb's -ing form ("feeling", "looking") or a verb's -izes
    form. The -ing form of a verb outside the common list is read as a gerund naming an activity
    ("knitting", "bouldering")."""
    if adjective(w) or w.endswith(("izes", "ises", "ize", "ise")):
        return False
    return not w.endswith("ing") or w in _NOUN_FORMS or (w not in VERBS and len(w) > 6)


def _never_names(holders: Iterable[str]) -> frozenset[str]:
    return frozenset(h.lower() for h in holders if h)


def _is_name(w: str, names: frozenset[str]) -> bool:
    # "mel" stands for "melanie": a short form of a speaker's name is a name too
    return any(w == n or (len(w) >= 3 and n.startswith(w)) or (len(n) >= 3 and w.startswith(n) and len(w) - len(n) <= 2)
               for n in names)


_CLOSED = PARTITIVE | PERSON | FORMULA | WHEN
# Nouns that end like an adverb: "family" is a topic, "finally" is not.
_LY_NOUNS = frozenset("family assembly butterfly butterflies anomaly monopoly rally jelly belly lily ally".split())


def _ok(w: str, names: frozenset[str], proper: frozenset[str]) -> bool:
    return w not in proper and _common_ok(w) and not _is_name(w, names)


@lru_cache(maxsize=200_000)
def _common_ok(w: str) -> bool:
    """The user-independent part of ``_ok``: a word of a class that can name a topic."""
    if len(w) < 3 or "'" in w or w in STOP or w in PRONOUNS or w in FUNCTION or w in MOOD or w in _CLOSED:
        return False
    if w in VERBS and w not in _NOUN_FORMS:
        return False
    if w.endswith("ly") and len(w) > 5 and w not in _LY_NOUNS:  # adverbs
        return False
    return not (w.endswith("ed") and not w.endswith("eed") and len(w) > 4)  # past forms, participles ("improved")


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
    """The text's candidate terms: content words and adjacent pairs of content words ("pottery class")."""
    good = ok or (lambda w: _ok(w, names, proper))
    out: list[str] = []
    for words in _chunks(text):
        keep = [w if good(w) else "" for w in words]
        out.extend(w for w in keep if w)
        out.extend(f"{a} {b}" for a, b in zip(keep, keep[1:]) if a and b and a != b)
    return out


@lru_cache(maxsize=100_000)
def _common_terms(text: str) -> frozenset[str]:
    """``terms`` with the user-independent filter only: the user's names and proper nouns are taken out
    later (a term is dropped when one of its words is one), which gives the same terms."""
    return frozenset(terms(text, frozenset(), frozenset(), _common_ok))


Embed = Callable[[Sequence[str]], np.ndarray]


class Namer:
    """Names for many groups of one user's facts: each text's terms are read once, the corpus counts once.

    ``embed`` (optional: the fact embedder): the best lexical candidates are re-ranked by how close each
    term's vector lies to the members' centroid (the ``centroid`` passed to ``name``), so the name says
    what the members share rather than what one of them says often."""

    def __init__(self, holders: Iterable[str], proper: frozenset[str], embed: Embed | None = None):
        self.names, self.proper = _never_names(holders), proper
        self.embed = embed
        self._terms: dict[str, frozenset[str]] = {}
        self._ok: dict[str, bool] = {}
        self._vec: dict[str, np.ndarray] = {}

    def update(self, holders: Iterable[str], proper: frozenset[str]) -> None:
        """New speakers or proper nouns (more facts): the per-text term sets are read again as needed."""
        names = self.names | _never_names(holders)
        if names != self.names or proper != self.proper:
            self.names, self.proper = names, proper
            self._terms, self._ok = {}, {}

    def ok(self, w: str) -> bool:
        got = self._ok.get(w)
        if got is None:
            got = self._ok[w] = w not in self.proper and not _is_name(w, self.names)
        return got

    def terms_of(self, text: str) -> frozenset[str]:
        got = self._terms.get(text)
        if got is None:
            got = self._terms[text] = frozenset(t for t in _common_terms(text) if all(self.ok(w) for w in t.split()))
        return got

    @staticmethod
    def counts(texts: Iterable[str]) -> tuple[Counter[str], int]:
        """Document frequency of each candidate term over ``texts`` (before the user's names are taken out:
        a term that passes them has the same count), and how many texts."""
        n, total = 0, Counter[str]()
        for t in texts:
            total.update(_common_terms(t))
            n += 1
        return total, n

    def scored(self, members: Sequence[str], corpus: tuple[Mapping[str, int], int]) -> list[tuple[str, float]]:
        """Candidate terms of ``members`` with their log-odds × count against ``corpus``, best first."""
        inside = Counter[str]()
        for t in members:
            inside.update(self.terms_of(t))
        total, c = corpus
        m, c = max(len(members), 1), max(c, 1)
        need = 2 if m >= 3 else 1  # a word one member says once tells nothing about the group
        score = {w: k * math.log(((k + 0.5) / (m + 1)) / ((max(total.get(w, 0), k) + 0.5) / (c + 1)))
                 for w, k in inside.items() if k >= need}
        return sorted(((w, s) for w, s in score.items() if s > 0), key=lambda kv: (-kv[1], kv[0]))

    def vectors(self, words: Sequence[str]) -> np.ndarray:
        assert self.embed is not None
        miss = [w for w in words if w not in self._vec]
        if miss:
            self._vec.update(zip(miss, np.asarray(self.embed(miss), dtype=np.float32)))
        return np.stack([self._vec[w] for w in words])

    def _ranked(self, members: Sequence[str], corpus: tuple[Mapping[str, int], int]) -> list[tuple[str, float]]:
        """The scored terms that can head a name (their last word a noun), best first."""
        return [(w, s) for w, s in self.scored(members, corpus) if _head_noun(w.split()[-1])]

    def candidates(self, members: Sequence[str], corpus: tuple[Mapping[str, int], int]) -> list[str]:
        """The terms ``name`` re-ranks by closeness to the centroid (so a caller can embed them at once)."""
        ranked = self._ranked(members, corpus)
        return [w for w, _ in ranked[:_RERANK]] if len(ranked) >= 2 else []

    def name(self, members: Sequence[str], corpus: tuple[Mapping[str, int], int], centroid: np.ndarray | None = None) -> str:
        """The members' name (see ``concept_name``); "small talk" when no term is shared by a third of the
        members and most members hold no content term at all (phatic talk: thanks, praise, greetings);
        "" when nothing is shared and the members are not mostly talk."""
        ranked = self._ranked(members, corpus)
        if self.embed is not None and centroid is not None and len(ranked) >= 2:
            top = ranked[:_RERANK]
            sims = self.vectors([w for w, _ in top]) @ centroid
            best = top[0][1]
            # closeness to the members' centre, weighted by the square root of the lexical share
            ranked = sorted(((w, float(sim) * math.sqrt(s / best)) for (w, s), sim in zip(top, sims)),
                            key=lambda kv: (-kv[1], kv[0]))
        held = [self.terms_of(t) for t in members]
        name = _compound(_phrase(ranked), held)
        if len(members) < 3:
            return name
        n = len(members)
        talk = sum(1 for h in held if not h) >= _TALK * n
        # what the name must cover: a third of the members; half of them when most members are talk (thanks,
        # praise), else a word that one chatty third says would name the whole chat
        need = (_TALK if talk else _COVER) * n
        if _cover(name, held) >= need:
            return name
        # the best-scored name is not what the members share: the head-noun term most of them hold (even one
        # common in the user's other facts: a chat cluster about "family"), else talk or nothing
        alt = _most_held(held) if ranked else ""  # nothing characteristic at all: no name from mere frequency
        if alt and _cover(alt, held) >= max(need, 2):
            return _compound(alt, held)
        # members that name their topic only by a proper noun ("Toby needs time", "Toby chewed my shoe"): a pet,
        # a child, a town; its name is what they share. A speaker's name never is (removed in ``self.ok``).
        refs = [self.referents(t) for t in members]
        shared = _most_held(refs, lambda w: True)
        if shared and _cover(shared, refs) >= max(need, 2):
            return shared.capitalize()
        # talk is what says nothing of anything: when more of the members without a content term refer to someone
        # by "he", "she", "they" or a proper noun (their topic said elsewhere in the conversation) than say nothing
        # of anyone, they are about someone, not small talk, and nothing in them names whom
        referring = sum(1 for h, r in zip(held, refs) if not h and r)
        phatic = sum(1 for h, r in zip(held, refs) if not h and not r)
        return SMALL_TALK if talk and phatic >= referring else ""

    def holds(self, name: str, members: Sequence[str]) -> float:
        """The share of ``members`` that hold one of the name's terms (a proper-noun name: that noun);
        1.0 for small talk and for no name, which no term can cover."""
        if not name or name == SMALL_TALK or not members:
            return 1.0
        parts = set(name.lower().split(" and "))
        return sum(1 for t in members if (self.terms_of(t) | self.referents(t)) & parts) / len(members)

    def referents(self, text: str) -> frozenset[str]:
        """The text's ways of referring to a third party without a content term: third-person personal pronouns
        (as "them") and proper nouns that are not the user's names nor calendar words."""
        out = set()
        for words in _chunks(text):
            for w in words:
                if w in _THIRD:
                    out.add("them")
                elif (w in self.proper and len(w) >= 3 and "'" not in w and w not in _CALENDAR and w not in FUNCTION
                      and w not in PRONOUNS and w not in STOP and not _is_name(w, self.names)):
                    out.add(w)
        return frozenset(out)


_RERANK = 8
_THIRD = frozenset("he him his she her hers they them their theirs".split())
_CALENDAR = frozenset("monday tuesday wednesday thursday friday saturday sunday january february march april may june "
                      "july august september october november december christmas easter halloween thanksgiving "
                      "week weekend".split())
_COVER = 1 / 3  # a name is what the members share: at least a third of them hold one of its terms
_TALK = 0.5  # ... else, when half of them hold no content term, they are small talk
SMALL_TALK = "small talk"


def scored_terms(members: Sequence[str], corpus: Sequence[str], holders: Iterable[str] = (),
                 proper: frozenset[str] | None = None) -> list[tuple[str, float]]:
    """Candidate terms of ``members`` with their log-odds × count against ``corpus``, best first."""
    namer = Namer(holders, proper_nouns(corpus) if proper is None else proper)
    return namer.scored(members, namer.counts(corpus))


def concept_name(members: Sequence[str], corpus: Sequence[str], holders: Iterable[str] = (),
                 proper: frozenset[str] | None = None, embed: Embed | None = None) -> str:
    """A short noun phrase for the members: the best phrase when a two-word term scores near the best
    single word, else the two best single words joined by "and"; "" when nothing is characteristic.
    With ``embed``, the candidates are re-ranked by closeness to the members' centroid.

    >>> concept_name(["I adopted a dog from the shelter", "the dog loves the shelter walks", "dog training is hard"],
    ...              ["work was busy", "my boss called", "I adopted a dog from the shelter",
    ...               "the dog loves the shelter walks", "dog training is hard"])
    'dog and shelter'
    """
    namer = Namer(holders, proper_nouns(corpus) if proper is None else proper, embed)
    centroid = None
    if embed is not None and members:
        v = np.asarray(embed([_SPEAKER.sub("", m) for m in members]), dtype=np.float32).mean(axis=0)
        centroid = v / (np.linalg.norm(v) + 1e-12)
    return namer.name(members, namer.counts(corpus), centroid)


def _cover(name: str, held: Sequence[frozenset[str]]) -> int:
    """How many members hold one of the name's terms."""
    parts = set(name.split(" and ")) if name else set()
    return sum(1 for h in held if h & parts)


def _most_held(held: Sequence[frozenset[str]], head: Callable[[str], bool] = _head_noun) -> str:
    """The single word that can head a name and that most members hold (ties: alphabetical; "them", a pronoun's
    mark, never: it names no one)."""
    df = Counter(w for h in held for w in h if " " not in w and w != "them" and head(w))
    return min(df, key=lambda w: (-df[w], w)) if df else ""


def _compound(name: str, held: Sequence[frozenset[str]]) -> str:
    """A one-word name that the members say mostly inside one two-word term is named by that term: "air" said
    as "fresh air", "trip" as "road trip"."""
    if not name or " " in name:
        return name
    k = sum(1 for h in held if name in h)
    df = Counter(t for h in held for t in h if t.endswith(" " + name))
    if not df:
        return name
    best = min(df, key=lambda t: (-df[t], t))
    return best if df[best] >= 2 and 2 * df[best] >= k else name


def _phrase(ranked: list[tuple[str, float]]) -> str:
    if not ranked:
        return ""
    best = ranked[0][1]
    for w, s in ranked[:4]:
        if " " in w and s >= 0.6 * best:
            return w
    singles = [w for w, _ in ranked if " " not in w]
    if not singles:
        return ranked[0][0]
    pick = singles[:1]
    second = next((w for w, s in ranked if " " not in w and w != pick[0] and s >= 0.4 * best
                   and not (w.startswith(pick[0][:4]) or pick[0].startswith(w[:4]))), None)
    return f"{pick[0]} and {second}" if second else pick[0]


def concept_description(name: str, members: Sequence[str], central: str | None = None, holders: Sequence[str] = ()) -> str:
    """One line: how many facts, whose, and the most typical one."""
    who = sorted({h for h in holders if h})
    whose = f" ({', '.join(who[:2])}{' and others' if len(who) > 2 else ''})" if who else ""
    line = f"{len(members)} facts about {name or 'assorted topics'}{whose}"
    if central:
        c = _SPEAKER.sub("", central).strip()
        line += f"; e.g. \u201c{c[:90].rstrip()}{'…' if len(c) > 90 else ''}\u201d"
    return line


COVER = _COVER

__all__ = ["COVER", "FORMULA", "MOOD", "PARTITIVE", "PERSON", "PRONOUNS", "SMALL_TALK", "VERBS", "WHEN", "Embed", "Namer", "ProperCounts",
           "concept_description", "concept_name", "proper_nouns", "scored_terms", "terms"]
