"""The deterministic offline extractor (no model): the default on a fresh machine.

What it does: splits each non-assistant turn into sentences, keeps the informative ones (first-person
statements, and declarative sentences with enough content words), and gives each a kind from cue
words — change ("no longer", "switched to", "now prefer", "used to"), constraint ("allergic", "can't",
"injured"), plan ("planning to", "going to"), preference, belief, circumstance, event, experience.
Relative times ("yesterday", "last year", "two weeks ago") are resolved against the session date and
written next to the expression in the statement. The evidence span is the sentence itself, a verbatim
slice of the turn. Holder = "user" for the user's turns, else the speaker's name (LoCoMo). A concept
is picked from a small topic lexicon (food, health, travel, work, family, music, ...).

What it cannot do: paraphrase or merge sentences into clean propositions, resolve pronouns
("she", "it") or coreference across turns, understand irony or hypotheticals, tell a preference from
a passing remark beyond cue words, or infer anything not said in one sentence. It favours recall:
almost every informative turn yields at least one sentence-level fact.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from graph.models import FactKind
from induction.config import OfflineExtractorConfig
from induction.branch import OntologyBranch
from induction.clauses import clauses
from induction.reading.aspect import aspect
from induction.reading.change import MOVED_ON
from induction.reading.claims import relays_claim
from induction.reading.negation import NEGATION as NEGATION_CUES
from induction.evidence import select_evidence
from induction.extract import CandidateFact, Cue, ExtractionResult, make_fact_id
from induction.session import Session
from induction.planned import said_from
from induction.scope import scopes_in
from induction.timeexpr import Bound, find_ends, valid_to_for
from induction.timex import TimeRef, annotate, find_times

_I = r"(?:I|I'm|I've|I'd|I'll|I am|Im|Ive)"
_FIRST_PERSON = re.compile(rf"\b(?:{_I}|my|me|mine|myself|we|we're|we've|our|ours|us)\b|(?:^|\s)I\b", re.I)
_FIRST_PERSON_STRICT = re.compile(r"(?:^|[^A-Za-z])(?:I|I'm|I've|I'd|I'll)(?:[^A-Za-z]|$)|\b(?:my|me|myself|we|our|us)\b", re.I)


def _rx(*alts: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alts) + r")\b", re.I)


# Change cues. Strong ones mark a change on their own; weak ones ("now", "actually", "realized") only
# together with a preference verb in the same sentence, because narratives use them freely.
CHANGE = _rx(r"no longer", r"not anymore", r"any ?more", r"any longer", r"switch(?:ed|ing)? (?:to|from|over)",
             r"changed my (?:mind|enrollment|plans?|diet|job|approach|perspective)", r"change of heart",
             r"(?:completely|totally|entirely) (?:changed|flipped|reversed|shifted|switched)", r"(?:a )?complete 180",
             r"(?:I|we) now", r"now (?:I|we)\b", r"nowadays", r"these days", r"from now on",
             r"rethink\w*", r"reconsider\w*", r"gave up", r"giving up", r"moved on from", r"grown out of", r"no more",
             r"shift(?:ed|ing)? (?:my focus|away|from|to)", r"replac(?:ed|ing)", r"turned (?:away|against)",
             r"(?:going|went|dive|diving|get|getting) back (?:to|into)", r"return(?:ing)? to",
             r"(?:doesn't|does not|didn't|did not|don't) (?:work|feel right) for me", r"(?:not|isn't|wasn't) for me",
             *MOVED_ON, r"(?:I've|I have) (?:actually |just |finally |recently )?(?:left|quit)",
             r"(?:quit|stopped) \w+ing",
             r"(?:decided|decide|chosen|choose) to (?:stop|quit|drop|abandon|pivot|step (?:away|back)|strip|stick to|prioriti[sz]e|switch)",
             r"pivot(?:ed|ing)? (?:from|to|away)", r"(?:I|I've|I have|I'm|I am) (?:decided to )?step(?:ped|ping)? (?:away|back) from",
             r"(?:give|gave|giving) (?:\w+ )?(?:\w+ )?another (?:shot|try|chance)", r"instead of", r"not (?:into|interested in) \w+(?: \w+){0,3} anymore")
# What someone is after now ("I'm now looking for a challenge about classics only") is what they want, and
# "too broad for me" is a judgment of taste; both are preferences and make "now"/"realized" a change.
_LOOKING_FOR = r"(?:I'm|I am|we're|we are)(?: now| currently| really| actually)? (?:looking|searching) for"
_TOO_FOR_ME = r"too \w+ for (?:me|my taste)"
# A comparison the speaker draws ("I find it so much more fulfilling than rewatching old favourites").
_FIND_MORE = r"(?:I|we) find (?:it|them|that|this|those) (?:\w+ ){0,2}(?:more|less|most|least) \w+"
# "used to" alone is often a memory ("I used to ride horses with my dad"); with a preference verb
# ("I used to love jazz") it marks a change. Same for "lately", "since", "now".
CHANGE_WEAK = _rx(r"now", r"actually", r"reali[sz]ed?", r"instead", r"again", r"(?:have|'ve) since", r"lately",
                  r"used to", r"(?:have|'ve) found")
PREF_VERB = _rx(r"prefer\w*", r"want\w*", r"crav\w+", r"lov(?:e|es|ing)", r"enjoy\w*", r"like", r"interested", r"curious",
                r"drawn", r"rather", r"favou?rite", r"fave?s?", r"appreciat\w+", r"passion\w*", r"focus\w*", r"happiest",
                r"(?:I'm|I am|really|totally|more|not) into", _LOOKING_FOR, _TOO_FOR_ME, _FIND_MORE)
CONSTRAINT = _rx(r"allergic", r"allerg(?:y|ies)", r"intoleran\w+", r"can't eat", r"cannot eat", r"can't have",
                 r"can't do", r"(?:can't|cannot|can not) (?:eat|have|drink|do|go|run|walk|lift|travel|afford|use|take|handle)",
                 r"unable to", r"not allowed", r"injur(?:ed|y|ies)", r"broke my",
                 r"doctor (?:said|told)", r"have to avoid", r"must avoid", r"need to avoid", r"avoid\w*", r"diabet\w+",
                 r"vegan", r"vegetarian", r"gluten", r"lactose", r"pregnan\w+", r"budget", r"deadline", r"afford",
                 r"only have", r"limited to", r"disabilit\w+", r"wheelchair", r"recovering from", r"surgery")
# A plan's date or booking: a plan that carries one stays a plan even when it says it changes something.
_SCHEDULE = (r"signed up", r"scheduled", r"booked", r"tomorrow", r"next (?:week|month|year|weekend|summer|spring|fall|winter)")
# "going to" is a plan before a verb ("I'm going to try pottery"), not before a place or an event ("I've
# been going to the arthouse theater", "Going to a local author's event made me feel awkward").
_GOING_TO = r"(?<!been )going to (?!(?:the|a|an|my|our|your|his|her|their|this|that|these|those|some)\b)"
PLAN = _rx(r"plan(?:ning)? (?:to|on)", _GOING_TO, r"gonna", r"I'll", r"I will", r"we'll", r"we will", r"intend\w* to",
           r"hop(?:e|ing) to", r"about to", r"sign(?:ing)? up", r"thinking (?:of|about) \w+ing", r"looking forward to",
           r"aim(?:ing)? to", r"my goal is", r"want to (?:start|try|learn|visit|go|travel|take|get|build|become)", *_SCHEDULE)
SCHEDULED = _rx(*_SCHEDULE, r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)")
PREFERENCE = _rx(r"prefer\w*", r"love\w*", r"like to", r"likes?", r"enjoy\w*", r"favou?rite", r"fave?s?", r"fan of", r"into \w+",
                 r"passion\w*", r"hate\w*", r"dislike\w*", r"can't stand", r"crav\w+", r"appreciat\w+", r"fond of",
                 r"interested in", r"curious about", r"drawn to", r"resonat\w+", r"speaks to me", r"my thing",
                 r"(?:not|wasn't|isn't) my forte", r"isn't for me", r"wasn't for me", r"wants?", r"wish\w*", r"delight\w*", r"joy", r"fascinat\w+",
                 r"thrill\w*", r"chore", r"boring", r"rather", r"taste", r"obsessed", r"adore\w*", r"keen on",
                 r"excit(?:ed|ing)", r"inspir\w+", r"my go-to", r"can't get enough", _LOOKING_FOR, _TOO_FOR_ME, _FIND_MORE)
BELIEF = _rx(r"I think", r"I believe", r"I feel (?:that|like)", r"(?:I've been |I'm |I was )?feeling (?:that|like)", r"in my (?:opinion|view)", r"I'm (?:convinced|sure) that",
             r"I guess", r"I suppose", r"I realize", r"I've learned", r"it's important", r"should", r"I value")
CIRCUMSTANCE = _rx(r"I work(?:ed)? (?:as|at|for|in)", r"my job", r"I'm an? \w+", r"I am an? \w+", r"I live", r"I'm living",
                   r"I have (?:a|an|two|three|\d+) \w+", r"my (?:wife|husband|partner|son|daughter|kids|children|mom|mother|"
                   r"dad|father|brother|sister|family|boss|dog|cat|parents)", r"I'm (?:married|single|divorced|retired|studying|"
                   r"in school|a student|pregnant|unemployed)", r"I own", r"I'm from", r"I grew up", r"I study")
EVENT = _rx(r"went", r"visited", r"attended", r"bought", r"started", r"finished", r"got", r"met", r"took", r"ran",
            r"joined", r"won", r"lost", r"moved", r"graduated", r"traveled", r"travelled", r"married", r"adopted",
            r"signed", r"launched", r"completed", r"hosted", r"performed", r"painted", r"made", r"built", r"had a",
            r"wrote", r"recorded", r"watched", r"read", r"saw", r"celebrated", r"tried", r"participated", r"enrolled",
            r"yesterday", r"last (?:week|month|year|weekend|night)", r"ago")
# A claim the user frames or repeats ("the version that says: X", "I've always heard that X"): held by the
# user as their preferred framing or belief; whether X is true is for evidence to say.
FRAMING = re.compile(r"\b(?:version|line|account|framing|explanation|story|claim|quote|saying|phrase|hook|idea|"
                     r"take|angle)\b[^:.!?]{0,80}:\s*\S|\b(?:I've|I have) (?:always )?(?:heard|read|been told) that\b|"
                     r"\b(?:I|we) (?:always |usually )?(?:say|tell (?:people|them|everyone)|repeat) that\b", re.I)
# Polarity of a state (induction.reading.negation: emphasis, positive idioms and a first time negate nothing).
NEGATION = NEGATION_CUES.regex
CHITCHAT = re.compile(r"^\s*(?:hey|hi|hello|bye|goodbye|thanks|thank you|thx|wow|haha|lol|omg|congrats|congratulations|"
                      r"awesome|cool|great|nice|sure|ok|okay|yes|yeah|yep|no|nope|sounds (?:good|great|fun)|take care|"
                      r"see you|good luck|me too|same here|i understand|that's (?:so |really )?(?:cool|great|awesome|amazing|"
                      r"nice|wonderful|fantastic|fun))\b[\s!.,]*", re.I)
STOP = frozenset("a an and are as at be been but by did do does for from had has have he her his how i if in is it its "
                 "me my of on or our she so that the their them they this to was we were what when where which who "
                 "why will with you your just really so very too also it's that's i'm i've i'd i'll im there here "
                 "then than some any all can could would should about like get got good see talk soon look take thanks great "
                 "cool nice awesome wow yeah way glad hear sounds sure okay hope well kind kinda pretty totally definitely "
                 "lot lots thing things much many know yes off gonna going".split())
# Scope: the conditions under which a statement holds, induced from its phrasing (induction/scope.py).
# A state is scoped; what happened once is not ("I went hiking with friends" names company, not a
# condition), and a preference's condition is often said beside it in the same turn ("I prefer starting
# early. ... if I control the schedule, ..."): the turn's phrases are the scope it was stated under.
_SCOPED_KINDS = frozenset({"preference", "constraint", "plan", "belief", "circumstance"})
_TURN_SCOPE_KINDS = frozenset({"preference", "constraint", "plan"})
# A past-tense verb of the speaker, in any register ("we went", "i tried", "I was"): what happened is not scoped.
_TOLD_PAST = re.compile(r"\b(?:I|we)\s+(?:(?:just|already|then|also|never|once)\s+)?(?:was|were|had|did|went|came|saw|felt|"
                        r"found|made|got|took|became|began|thought|knew|told|said|spent|met|left|\w{2,}ed)\b", re.I)


# Topic lexicon for concept assignment: ordered; the first topic with the most hits wins.
TOPICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("health", ("doctor", "injur", "injury", "sick", "health", "hospital", "therap", "therapy", "medic", "medicine", "medication", "knee", "pain", "allerg", "allergy", "allergies", "diagnos", "diagnosis", "diagnosed",
                "surgery", "illness", "disease", "diabet", "diabetes", "symptom", "mental", "anxiety", "depress", "depression")),
    ("food", ("food", "eat", "cook", "recipe", "restaurant", "vegetarian", "vegan", "meal", "dinner", "lunch",
              "breakfast", "coffee", "tea", "drink", "bake", "baking", "baking", "cuisine", "dish", "gluten", "dessert", "snack")),
    ("fitness and sports", ("run", "running", "runner", "gym", "yoga", "hike", "hiking", "swim", "swimming", "sport", "marathon", "bike",
                            "cycling", "football", "soccer", "basketball", "tennis", "climb", "climbing", "ski", "workout",
                            "exercise", "race", "fitness", "surf")),
    ("travel", ("trip", "travel", "vacation", "holiday", "beach", "mountain", "flight", "camping", "road trip",
                "abroad", "tour", "hotel", "visit", "country", "city")),
    ("work and career", ("work", "job", "career", "boss", "office", "company", "colleague", "promotion", "startup",
                         "business", "interview", "shift", "client", "manager", "salary", "hired", "coworker")),
    ("education", ("school", "class", "course", "study", "degree", "university", "college", "exam", "learn",
                   "lesson", "workshop", "theory", "teacher", "student", "certification", "research")),
    ("family", ("kid", "kids", "son", "daughter", "husband", "wife", "mom", "dad", "mother", "father", "family", "brother",
                "sister", "parent", "grandma", "grandpa", "grandmother", "grandfather", "baby", "adopt", "adoption", "children", "child")),
    ("relationships and social life", ("friend", "dating", "date", "partner", "boyfriend", "girlfriend", "community",
                                       "group", "party", "relationship", "flirt", "flirting", "neighbor", "support group")),
    ("music", ("music", "song", "band", "concert", "festival", "album", "guitar", "piano", "sing", "playlist",
               "melody", "melodies", "rhythm", "rhythms", "violin", "drum", "podcast", "remix", "synth", "dj")),
    ("art and creativity", ("paint", "art", "artist", "artwork", "draw", "pottery", "write", "writing", "wrote", "writer", "book", "novel", "poem", "photo", "photograph", "photography", "sculpt", "sculpture",
                            "craft", "design", "creative", "creativity", "blog")),
    ("entertainment", ("movie", "film", "show", "series", "game", "gaming", "tv", "netflix", "documentary", "read")),
    ("pets", ("dog", "cat", "pet", "puppy", "kitten", "horse")),
    ("home", ("house", "apartment", "home", "garden", "rent", "furniture", "decor", "decoration", "moving")),
    ("finance", ("money", "budget", "save", "saving", "invest", "cost", "price", "pay", "expense", "income", "debt")),
    ("technology", ("app", "code", "python", "flask", "software", "computer", "api", "database", "deploy", "server",
                    "program", "programming", "bug", "test", "sql", "javascript", "react", "docker", "laptop", "phone")),
    ("identity and values", ("believe", "faith", "religion", "religious", "identity", "transgender", "lgbt", "lgbtq", "pride", "value",
                             "culture", "heritage", "church", "spiritual", "spirituality", "activism", "activist", "volunteer", "charity")),
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
_CODE_FENCE = re.compile(r"```.*?(?:```|$)", re.S)
_IMAGE = re.compile(r"\[image: ([^\]]+)\]")
_MD = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)")


_SUFFIXES = ("", "s", "es", "ed", "d", "ing", "er", "ers", "y", "ies", "ic", "ist", "ists", "ical", "ion", "ions",
             "ation", "al", "ful", "ment", "ments", "ly")


def _hit(word: str, key: str) -> bool:
    # Stem + a common suffix only: "paint" finds "painting", but "pain" must not.
    return word.startswith(key) and word[len(key):] in _SUFFIXES


def _stem_counts() -> list[tuple[str, Counter[str], tuple[str, ...]]]:
    """Per topic: its one-word keys counted, and its phrase keys (the lookup ``topic_of`` reads)."""
    return [(name, Counter(k for k in keys if " " not in k), tuple(k for k in keys if " " in k)) for name, keys in TOPICS]


_TOPIC_STEMS = _stem_counts()


def topic_of(text: str) -> str:
    """The topic whose keys the text hits most (``_hit``: a key plus a common suffix; a phrase key as a
    substring), "general" when none. A word is looked up by its stems (the word less each suffix it ends
    with) instead of being tried against every key: the same count, ~|suffixes| lookups per word.

    >>> topic_of("I started painting again"), topic_of("Nothing here")
    ('art and creativity', 'general')
    """
    low = text.lower()
    stems: Counter[str] = Counter()
    for w in _WORD.findall(low):
        stems.update(w[: len(w) - len(x)] for x in _SUFFIXES if w.endswith(x) and len(w) > len(x))
    best, best_n = "general", 0
    for name, ones, phrases in _TOPIC_STEMS:
        n = sum(c * ones[k] for k, c in stems.items() if k in ones) + sum(1 for k in phrases if k in low)
        if n > best_n:
            best, best_n = name, n
    return best


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) spans of sentences in ``text``; code blocks skipped, markdown bullets split."""
    masked = _CODE_FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    spans: list[tuple[int, int]] = []
    for line in re.finditer(r"[^\n]+", masked):
        start = line.start()
        for m in re.finditer(r".+?(?:[.!?]+(?=\s|$)|$)", line.group(0)):
            s, e = start + m.start(), start + m.end()
            seg = masked[s:e]
            if not seg.strip():
                continue
            lead = len(seg) - len(seg.lstrip())
            md = _MD.match(seg[lead:])
            s += lead + (md.end() if md else 0)
            e -= len(seg) - len(seg.rstrip())
            if e > s:
                spans.append((s, e))
    return spans


def content_words(s: str) -> list[str]:
    return [w for w in _WORD.findall(s.lower()) if w not in STOP and len(w) > 2]


_PAST_VERB = re.compile(r"\b(?:I|we|We)\s+(?:was|were|had|did|went|came|saw|felt|found|made|got|took|became|began|thought|"
                        r"knew|told|said|spent|met|left|wanted|tried|\w{2,}ed)\b")
_PRESENT = re.compile(r"\b(?:I'm|I am|I've|I have|we're|we've|I feel|I find|I think|I believe|I need|I keep|I do|"
                      r"I can|is|are|isn't|aren't)\b")
_GENERIC_PAST = re.compile(r"\b(?:was|were|had|did)\b")


_HABIT = re.compile(r"\b(?:I|we)\s+(?:(?:always|usually|often|normally|mostly|generally|still|also|just|really|"
                    r"now|sometimes|rarely|only)\s+)?(?!(?:was|were|had|did)\b)([a-z]+)\b")


def default_kind(sentence: str) -> FactKind:
    """Without a specific cue: past narrative = experience; a present-tense first-person statement
    ("I always drink black coffee", "my code is 12") = circumstance, what the person does or has now;
    a present-tense remark about the world = belief."""
    if _PAST_VERB.search(sentence):
        return "experience"
    first = _FIRST_PERSON_STRICT.search(sentence) is not None
    if _PRESENT.search(sentence):
        return "circumstance" if first else "belief"
    habit = _HABIT.search(sentence)
    if habit and not habit.group(1).endswith("ed"):
        return "circumstance"
    if not first and not _GENERIC_PAST.search(sentence):
        return "belief"
    return "experience"


_TYPO = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2014": " - ", "\u2013": "-"})


def plain(text: str) -> str:
    """Typographic apostrophes and dashes as ASCII, so "I’ve" reads like "I've" to the cue patterns."""
    return text.translate(_TYPO)


def classify(sentence: str) -> FactKind:
    return classify_with_source(sentence)[0]


def classify_with_source(sentence: str) -> tuple[FactKind, bool]:
    """(kind, certain): the kind from cue words, most specific first; ``certain`` is False when no cue
    decided it. A change statement without a specific cue ("I switched to green tea", "I've changed my
    mind about X") is provisionally a preference; adjudication may give it the kind of the state it
    replaces, since an update stays within its information type."""
    sentence = plain(sentence)
    if FRAMING.search(sentence) and _FIRST_PERSON_STRICT.search(sentence):
        # "I prefer the version that says: X" holds X as the user's preferred framing, not as a fact.
        return "preference", True
    if relays_claim(sentence):
        # "I read that X", "My atlas says X", "Skipping meals is going to X": a claim held (induction/reading/claims.py)
        return "belief", True
    if CONSTRAINT.search(sentence) and _FIRST_PERSON_STRICT.search(sentence):
        return "constraint", True
    if PLAN.search(sentence):
        # "I'll switch to a written journal instead", "I no longer want to travel overseas": a plan that
        # turns away from something is a changed preference, unless it is scheduled (MemSyco: 10 of 5,937 user facts)
        return ("preference", False) if CHANGE.search(sentence) and not SCHEDULED.search(sentence) else ("plan", True)
    if BELIEF.search(sentence) and not PREFERENCE.search(sentence):
        return "belief", True
    if PREFERENCE.search(sentence):
        return "preference", True
    if CHANGE.search(sentence):
        return "preference", False
    if EVENT.search(sentence):
        # a verb of doing in a sentence that says what holds now (induction/reading/aspect.py)
        return _NOW_KIND.get(aspect(sentence) or "", ("event", True))
    if CIRCUMSTANCE.search(sentence):
        return "circumstance", True
    head, colon, claim = sentence.partition(":")
    if colon and len(head.split()) <= 8 and len(claim.split()) >= 4:
        # a lead-in framing what follows ("Fun fact I always tell people: the bridge is older than the town"):
        # the statement is what comes after the colon
        return classify_with_source(claim.strip())[0], False
    kind, now = default_kind(sentence), aspect(sentence)
    return (_NOW_KIND[now][0] if kind == "experience" and now in _NOW_KIND else kind), False


# The kind of a sentence with a verb of doing whose main clause says what holds now: a result or a habit is the
# speaker's circumstance, a claim about the world a belief (kind uncertain: adjudication may align it).
_NOW_KIND: dict[str, tuple[FactKind, bool]] = {"result": ("circumstance", False), "habitual": ("circumstance", False),
                                               "generic": ("belief", False)}


def change_cue(sentence: str) -> str | None:
    """The words that mark ``sentence`` as a change of state, if any."""
    sentence = plain(sentence)
    m = CHANGE.search(sentence)
    if m:
        return m.group(0)
    w = CHANGE_WEAK.search(sentence)
    return w.group(0) if w and PREF_VERB.search(sentence) else None


_STATIVE = frozenset({"preference", "constraint", "belief", "circumstance", "plan"})


class OfflineExtractor:
    name = "offline"
    needs_branch = False

    def __init__(self, cfg: OfflineExtractorConfig | None = None):
        self.cfg = cfg or OfflineExtractorConfig()
        self._skip = {r.lower() for r in self.cfg.skip_roles}
        self._evidence = {r.lower() for r in self.cfg.evidence_roles} - self._skip

    def extract(self, session: Session, branch: OntologyBranch | None = None) -> ExtractionResult:
        facts: list[CandidateFact] = []
        for seq, turn in enumerate(session.turns):
            role = turn.role.lower()
            if role in self._skip:
                continue
            if role in self._evidence:
                facts.extend(self._evidence_facts(session, seq))
                continue
            facts.extend(self._turn_facts(session, seq))
        return ExtractionResult(facts=facts)

    def _evidence_facts(self, session: Session, seq: int) -> list[CandidateFact]:
        """An assistant turn: only its informative sentences, as evidence held by the assistant (or by a
        retrieved document), never as the user's state."""
        turn = session.turns[seq]
        text, tid, ref = turn.text, session.turn_id(seq), session.turn_time(seq)
        cfg = self.cfg
        picked = select_evidence(text, sentences(text), turn.role.lower(), cfg.max_evidence_facts_per_turn,
                                 cfg.max_document_facts_per_turn, cfg.evidence_min_score, fallback=cfg.turn_fallback)
        out: list[CandidateFact] = []
        for n, sp in enumerate(picked):
            raw = text[sp.start:sp.end]
            times = find_times(raw, ref)
            clean = self._clean(raw, times)
            quals: dict[str, str] = {"evidence_of": sp.holder}
            if sp.source:
                quals["source"] = sp.source[:120]
            if times:
                quals["when"] = times[0].iso
                quals["time_expression"] = times[0].text
            # A claim about the world held by someone else is a belief of that holder, whatever its tense:
            # the policy treats non-user beliefs as evidence (policy/rule.py), never as the user's state.
            kind: FactKind = "belief"
            cues: tuple[Cue, ...] = ("negation",) if NEGATION.search(plain(raw)) else ()
            statement = f"{sp.holder}: {clean}"
            out.append(CandidateFact(
                fact_id=make_fact_id(session.user_id, session.session_id, (tid,), statement, 100 + n),
                statement=statement, kind=kind, holder=sp.holder, evidence=raw.strip(), source_turn_ids=(tid,),
                order=(seq, n), observed_at=ref, valid_from=times[0].start if times else None, qualifiers=quals,
                confidence=0.7, kind_certain=True, concept=(topic_of(raw if len(content_words(raw)) >= 3 else text),),
                cues=cues))
        return out

    def _clean(self, raw: str, times: list[TimeRef]) -> str:
        clean = re.sub(r"\s+", " ", re.sub(r"[*_`]{1,3}", "", annotate(raw, times))).strip()
        if len(clean) > self.cfg.max_sentence_chars:
            cut = clean.rfind(",", 0, self.cfg.max_sentence_chars)
            clean = clean[: cut if cut > 80 else self.cfg.max_sentence_chars].rstrip(" ,;") + " …"
        return clean

    def _informative(self, s: str) -> bool:
        if s.rstrip().endswith("?"):
            return False
        words = _WORD.findall(s)
        rest = content_words(CHITCHAT.sub("", s, count=1))
        if len(words) >= self.cfg.min_words and len(rest) >= 2:
            return True
        # Short but cued statements matter most: "I am vegetarian", "I hate jazz".
        p = plain(s)
        cued = bool(CONSTRAINT.search(p) or PLAN.search(p) or PREFERENCE.search(p)) and _FIRST_PERSON_STRICT.search(p)
        return bool(cued) and len(words) >= 3 and len(rest) >= 1

    def _turn_facts(self, session: Session, seq: int) -> list[CandidateFact]:
        turn = session.turns[seq]
        text, tid = turn.text, session.turn_id(seq)
        holder = "user" if turn.role.lower() == "user" else turn.role
        ref = session.turn_time(seq)
        spans = [c for sp in sentences(text) for c in clauses(text, *sp, self.cfg.clause_split_chars)]
        picked: list[tuple[int, int]] = [sp for sp in spans if self._informative(text[sp[0]:sp[1]])]
        if not picked and self.cfg.turn_fallback:
            # An informative turn made only of questions or fragments still gets its longest sentence.
            cands = [sp for sp in spans if len(content_words(text[sp[0]:sp[1]])) >= 3]
            picked = sorted(cands, key=lambda sp: -(sp[1] - sp[0]))[:1]
        picked = picked[: self.cfg.max_facts_per_turn]
        turn_scope = scopes_in(" ".join(text[a:b] for a, b in picked), turn=True) if holder == "user" else []
        prev_cue: str | None = None  # a change cue carries over to the next stative sentence, then stops
        out: list[CandidateFact] = []
        for n, (s, e) in enumerate(picked):
            raw = text[s:e]
            kind, certain = classify_with_source(raw)
            cues: list[Cue] = []
            cue = change_cue(raw)
            carried = cue or prev_cue
            if carried and kind in _STATIVE:
                # Only states can be replaced; "we went camping again" is a recurrence, not an update.
                cues.append("change")
            prev_cue = cue if cue else (prev_cue if kind not in _STATIVE else None)
            if NEGATION.search(plain(raw)):
                cues.append("negation")
            times = find_times(raw, ref)
            clean = self._clean(raw, times)
            image = _IMAGE.fullmatch(raw.strip())
            if image:  # a shared photo: an event, described by its caption
                kind, certain, cues = "event", True, []
                clean = f"shared an image: {image.group(1).strip()}"
            statement = clean if holder == "user" else f"{holder}: {clean}"
            quals: dict[str, str] = {}
            if "change" in cues:
                quals["change_cue"] = carried or ""
            if times:
                quals["when"] = times[0].iso
                quals["time_expression"] = times[0].text
            # a statement no cue word classed ("For my blog, British spelling.", "on weekends i sleep in till 10")
            # is scoped like a state unless it tells what happened
            scoped = kind in _SCOPED_KINDS or (not certain and kind == "experience" and not _TOLD_PAST.search(raw))
            own = scopes_in(raw) if scoped else []
            if not own and kind in _TURN_SCOPE_KINDS:
                own = turn_scope
            # "in spring 2026" dates the statement, it does not scope it
            bounds = find_ends(raw, ref)
            dated = [b.text.lower() for b in bounds]
            own = [o for o in own if not any(o.lower() in t for t in dated)]
            scope = "; ".join(own) if own else None
            ends = valid_to_for(kind, raw, ref)
            if ends is not None:
                quals["valid_to_expression"] = ends.text
            topic = topic_of(raw if len(content_words(raw)) >= 3 else text)
            out.append(CandidateFact(
                fact_id=make_fact_id(session.user_id, session.session_id, (tid,), statement, n),
                statement=statement, kind=kind, holder=holder, evidence=raw.strip(), source_turn_ids=(tid,),
                order=(seq, n), observed_at=ref, valid_from=said_from(kind, _start_of(times, bounds), ref, ends, quals),
                valid_to=ends.end if ends is not None else None, scope=scope, qualifiers=quals,
                confidence=0.8 if _FIRST_PERSON.search(raw) else 0.6, kind_certain=certain,
                concept=(topic,) if holder == "user" else (holder, topic), cues=tuple(cues)))
        return out


def _start_of(times: list[TimeRef], bounds: list[Bound]) -> datetime | None:
    """When the statement holds from: its first time expression, except one inside a bounding expression
    ("until the end of next week", "till 5 July"), which names when the state ends, not when it holds."""
    for t in times:
        if not any(b.bounding and b.span[0] <= t.span[0] and t.span[1] <= b.span[1] for b in bounds):
            return t.start
    return None


def extract_offline(session: Session, cfg: OfflineExtractorConfig | None = None) -> list[CandidateFact]:
    return OfflineExtractor(cfg).extract(session).facts


__all__: Sequence[str] = ("OfflineExtractor", "classify", "extract_offline", "sentences", "topic_of")
