"""Pure rules: how a fact's Relational State follows from its relations, and which relations are allowed.

No I/O here; every function is table-tested in tests/test_rules.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime

from graph.models import Fact, Relation, RelationalState, RelationView, Validity, as_utc

# Which kinds of fact may replace which (an update must stay within compatible information types:
# a preference can be replaced by a newer preference or a constraint, not by an event).
# An experience or event is history, but what it implied can be outgrown: "I went to a fusion festival and
# loved it" is replaced, as a guide to what the user wants, by a later "fusion feels overproduced now".
# A changed view does the same ("now I believe blending genres waters down the traditions" replaces "it was
# enlightening to explore how genres merge"): the offline extractor tells belief from preference by wording only.
# A plan is replaced by a changed preference ("the trips I hope to make" -> "I've done a complete 180 on
# travel; no more trip planning for me").
SUPERSEDE_COMPATIBLE: Mapping[str, frozenset[str]] = {
    "preference": frozenset({"preference", "constraint", "belief", "experience", "event", "plan"}),
    "belief": frozenset({"belief", "preference", "experience"}),
    "circumstance": frozenset({"circumstance", "constraint", "event", "experience"}),
    "constraint": frozenset({"constraint", "circumstance", "preference", "experience"}),
    "plan": frozenset({"plan", "event", "circumstance"}),
    "experience": frozenset({"experience", "preference", "belief"}),
    "event": frozenset({"event", "plan"}),
}


def can_supersede(new_kind: str, old_kind: str) -> bool:
    """True when a fact of ``new_kind`` may SUPERSEDE one of ``old_kind``.

    >>> can_supersede("preference", "preference"), can_supersede("event", "preference")
    (True, False)
    """
    return old_kind in SUPERSEDE_COMPATIBLE.get(new_kind, frozenset())


def can_conflict(a_kind: str, b_kind: str) -> bool:
    """Conflicts may join any two propositional kinds except pure events vs. plans (both can be true)."""
    return frozenset({a_kind, b_kind}) != frozenset({"event", "plan"})


# Holders whose facts are outside evidence (the assistant's statements, retrieved documents), not a person's state.
EVIDENCE_HOLDERS: frozenset[str] = frozenset({"assistant", "document"})


def may_supersede(new_kind: str, old_kind: str, new_holder: str, old_holder: str, new_is_later: bool,
                  new_is_retrospective: bool = False, old_reports_change: bool = False) -> bool:
    """Direction and scope of a replacement: only a *later* statement of the *same holder* replaces an
    earlier one, within compatible kinds. Evidence never replaces a person's state (it may dispute it).
    A retrospective restatement ("I used to love jazz") never replaces a statement that already reports
    the change ("I no longer enjoy jazz; I prefer techno"): it agrees with it, it does not flip it back.

    >>> may_supersede("preference", "preference", "user", "user", True)
    True
    >>> may_supersede("preference", "preference", "user", "user", False)  # an old view restated later
    False
    >>> may_supersede("belief", "preference", "document", "user", True)
    False
    """
    if new_is_retrospective and old_reports_change:
        return False
    return new_is_later and new_holder == old_holder and can_supersede(new_kind, old_kind)


# Whole-turn replacement (a change replaces what the earlier *turn* said): besides the kinds above, a new
# preference or belief also takes the turn's circumstances with it. "I've organized a festival of fusion works"
# beside "this fusion has sparked intriguing conversations" is the old view's setting; once a later
# "I want to strictly feature traditional art" replaces that turn, the sentence saying what the user did
# for it is no longer the user's direction (MemSyco rows outside the held-out block: 4 of 10 leaks).
# Only as a *sibling* of a fact the change already replaces: a preference never replaces a circumstance
# on its own ("I live in Lisbon" is not undone by "I'd rather cook at home").
SIBLING_EXTRA: Mapping[str, frozenset[str]] = {
    "preference": frozenset({"circumstance"}),
    "belief": frozenset({"circumstance"}),
}


def edge_kinds_allowed(new_kind: str, old_kind: str) -> bool:
    """The store's invariant on a SUPERSEDES edge's kinds (graph/edits.py, induction/validate.py): whatever a
    new fact may replace on its own (``can_supersede``) or as a replaced turn's sibling (``SIBLING_EXTRA``).

    >>> edge_kinds_allowed("preference", "circumstance"), edge_kinds_allowed("event", "preference")
    (True, False)
    """
    return can_supersede(new_kind, old_kind) or old_kind in SIBLING_EXTRA.get(new_kind, frozenset())


def may_supersede_sibling(new_kind: str, sibling_kind: str, new_holder: str, sibling_holder: str) -> bool:
    """May a new fact that replaces one fact of an earlier turn also replace that turn's other fact
    (``sibling``)? Same holder, and the kinds of ``may_supersede`` plus ``SIBLING_EXTRA``.

    >>> may_supersede_sibling("preference", "circumstance", "user", "user")
    True
    >>> may_supersede("preference", "circumstance", "user", "user", True)
    False
    """
    return new_holder == sibling_holder and edge_kinds_allowed(new_kind, sibling_kind)


# Statements that hold no state of their speaker: a question ("How often are you able to go hiking now?")
# asks, and encouragement, advice or a remark on the other person's news ("Keep it up!", "Don't be afraid
# to share", "That must be great") responds; neither is a preference, belief or circumstance that a later
# statement could replace, or that could replace one (relations-locomo-edges.md: most wrong LoCoMo edges).
_QUESTION_START = re.compile(
    r"^(?:how|what|why|when|where|who|whom|which|whose|do|does|did|have|has|had|are|is|was|were|can|could|would|"
    r"will|should|shall|may|any|anything)\b[^.!]*$", re.I)
_RESPONSE = re.compile(
    r"^(?:(?:oh|oof|ooh|wow|yes|yeah|aw+|hey|haha|lol|definitely|absolutely|totally|sure|well|so|and|also|really)"
    r"[,!.]?\s+)*(?:(?:hey|hi|hello|yo)\b|long time no see|(?:great|good|nice) (?:to|chatting|talking)|"
    r"that'?d be (?:great|awesome|amazing|nice|cool|fun)|believe in yourself|"

    r"keep (?:it up|going|at it|pushing|me posted|up the)|never give up|don'?t (?:be afraid|give up|worry|forget|hesitate|"
    r"stop)|do(?:n't)? let|good luck|best of luck|congrat|glad (?:you|to hear|that)|so glad|happy for you|proud of you|"
    r"hope (?:you|it|that|things)|let me know|you(?:'re| are) (?:gonna|going to|doing|so|such|right|welcome)|"
    r"you (?:got this|can do it|should|deserve|did (?:great|amazing|awesome))|that(?:'s| is| sounds) (?:great|awesome|"
    r"amazing|cool|wonderful|fantastic|so|really|super|impressive|incredible|lovely|nice|exciting|tough|hard)|"
    r"sounds? (?:great|awesome|amazing|fun|like|wonderful|lovely|cool)|(?:what a|such a) |nice[,!.]|great[,!.]|"
    r"awesome[,!.]|cool[,!.]|thanks?\b|thank you|i'?m sure (?:it|you|that)|i bet\b|"
    r"[^.!?]{0,60}\bmust (?:be|have been) (?:great|awesome|amazing|fun|nice|so|really|a |hard|tough|wonderful|"
    r"exciting|lovely|cool|incredible|fantastic))", re.I)


def holds_state(statement: str) -> bool:
    """False for a question, a request for help, or a response to someone else (encouragement, advice, a
    remark on their news): such a statement never supersedes and is never superseded (nor disputed),
    whatever a model proposes.
    A ``"Name: "`` holder prefix is ignored.

    >>> holds_state("I switched to tea."), holds_state("How often do you hike now?"), holds_state("Keep it up!")
    (True, False, False)
    """
    s = unprefixed(statement).strip()
    if not s:
        return False
    # a line ending in a colon introduces what follows (pasted code, a list): "And my JS chart code:"
    if s.endswith(("?", ":")) or _QUESTION_START.match(s) or _SHARED_MEDIA.match(s) or _REQUEST.match(s) or _ASKS.search(s):
        return False
    return not (_RESPONSE.match(s) or _COMPLIMENT.search(s) or _ANNOUNCEMENT.search(s))


def may_replace(new_statement: str, old_statement: str) -> bool:
    """Whether ``new_statement`` can replace ``old_statement`` at all, whatever a model proposes: both
    hold state (``holds_state``), they are not two tasks in progress (``in_progress``), a standing
    instruction ("Always include version numbers when I ask about libraries") gives way only to another
    instruction, and a first-person state only to a first-person statement (``speaks_of_self``). A
    remark on an instruction's topic ("Given that I have to provide security best practices, …")
    restates or applies it; it does not revoke it (BEAM: 3 such edges, each spelling a wrong
    "superseded" into every context the instruction rode in).

    >>> may_replace("Always answer in French.", "Always answer in English.")
    True
    >>> may_replace("Sure, let's proceed with measuring the metrics now.", "Always report exact metrics when I ask about speed.")
    False
    >>> may_replace("I switched to tea.", "I drink coffee every morning.")
    True
    >>> may_replace("I'm trying to validate the area of a garden plot", "I'm trying to apply Heron's formula")
    False
    >>> may_replace("However, this approach could be a starting point.", "I'm trying to keep my app under 2.5MB")
    False
    """
    if not (holds_state(new_statement) and holds_state(old_statement)):
        return False
    if in_progress(new_statement) and in_progress(old_statement):
        return False
    order = standing_instruction(new_statement)
    if order or standing_instruction(old_statement):
        return order  # an order gives way to an order, whatever its person
    return speaks_of_self(new_statement) or not speaks_of_self(old_statement)


def unprefixed(statement: str) -> str:
    """``statement`` without its ``"Name: "`` holder prefix (and outer whitespace).

    >>> unprefixed("Andrew: I miss hiking.")
    'I miss hiking.'
    """
    return _HOLDER_PREFIX.sub("", statement.strip(), count=1)


# A person's own state ("I'm trying to keep my app under 2.5MB") changes when they say so about
# themselves or what is theirs ("my app is 5MB now", "tea is my thing now"); a remark about something
# else ("this approach could be a starting point") replaces nothing of theirs.
_SELF = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|Im|Ive|my|me|mine|myself|we|we're|we've|our|ours|us|ourselves)\b", re.I)


def speaks_of_self(statement: str) -> bool:
    """True when ``statement`` is said in the first person (its ``"Name: "`` prefix left out).

    >>> speaks_of_self("Tea is my thing now."), speaks_of_self("This approach could be a starting point.")
    (True, False)
    """
    return _SELF.search(unprefixed(statement)) is not None


# A task in progress or a difficulty with one ("I'm trying to apply Heron's formula", "I'm kinda stuck on
# this one", "I'm having trouble with sessions"): people work on several at once, so a new one replaces
# no other (BEAM: 11 of 77 SUPERSEDES edges joined two of them, all but one wrong). A state it changes
# ("I use SQLite" -> "I'm trying to switch to PostgreSQL") is still replaced.
_IN_PROGRESS = re.compile(
    r"^(?:so |and |but |well,? )?(?:I'm|I am|I've been|I have been)(?: (?:kinda|kind of|really|still|currently|just|"
    r"a bit|also|now))* (?:trying to|working on|struggling|stuck|having (?:some |a lot of )?trouble|not sure|"
    r"confused|worried)\b", re.I)


def in_progress(statement: str) -> bool:
    """True for a task in progress or a difficulty with one, said in the first person.

    >>> in_progress("I'm kinda stuck on this one"), in_progress("I'm trying to switch to PostgreSQL")
    (True, True)
    >>> in_progress("I use SQLite for my database."), in_progress("I'm planning a trip to Kyoto.")
    (False, False)
    """
    return _IN_PROGRESS.search(unprefixed(statement)) is not None


# A shared photo ("shared an image: a photo of a clothing store", the offline extractor's rendering of a LoCoMo
# caption, or the raw "[image: ...]") shows something; it states no preference or circumstance of its own, and
# a later remark on the same topic is not an update of it (relations-locomo-edges.md: 2 of 28 wrong edges).
# A request to the other person ("Take some pics and show me what you enjoy", "Send me the recipe") holds
# no state of the speaker either.
_REQUEST = re.compile(r"^(?:please |so |and )?(?:take|show|send|tell|give|bring|check out|look at|come)\b"
                      r"[^.!?]{0,60}\b(?:me|us)\b", re.I)
_SHARED_MEDIA = re.compile(r"^(?:\[(?:image|photo|picture)\s*:|(?:shared|sent|posted) (?:an? |the )?(?:image|photo|picture|pic)\b)",
                           re.I)
_COMPLIMENT = re.compile(r"\byour [\w' -]{1,40}\b(?:is|are|looks?|sounds?|was|were) (?:so |really |truly )?"
                         r"(?:amazing|great|awesome|beautiful|incredible|impressive|cool|lovely|wonderful|fantastic|"
                         r"stunning|gorgeous)", re.I)
# An announcement of news still to come ("I have some updates I'd love to share!", "I've got news for you")
# says nothing yet: the update is in the sentences that follow, so the announcement itself replaces nothing.
_ANNOUNCEMENT = re.compile(r"\b(?:I(?:'ve| have)(?: got)?|I've|there(?:'s| is|'re| are)) (?:some |a few |an? |big |exciting )*"
                           r"(?:news|updates?)\b(?! (?:about|on) my)[^.!]{0,40}(?:share|tell|for you)|"
                           r"^(?:so,? )?(?:let me|I want to|I'd (?:like|love) to) (?:share|tell you|update you|fill you in)"
                           r"(?: (?:some|a few|an?))? ?(?:news|updates?|what'?s new)?[^.!]{0,20}[.!]?$", re.I)
_HOLDER_PREFIX = re.compile(r"^[A-Z][\w.'-]{0,30}(?: [A-Z][\w.'-]{0,30})?:\s+")
# A request for help or information inside a statement ("I'm not sure how to configure these variables", "I'd
# appreciate any help getting it deployed", "I'm wondering if Scrivener helps") asks; it states nothing a later
# message could replace or outside evidence dispute. On BEAM 132 of the 247 relations left by the evidence
# rules had such a sentence on a user's side; of 25 of the 247 read, none was right
# (docs/results/relations.md, revision 6).
_ASKS = re.compile(r"\b(?:help me|can you|could you|would you|I'?d appreciate|I would appreciate|"
                   r"I need (?:some |your )?help|I(?:'m| am| was) wondering|"
                   r"I'?m not sure (?:how|what|if|whether|which|about)|I'?m trying to (?:figure out|understand|decide))\b", re.I)


def change_evidenced(old_kind: str, change_cue: bool, shift_cue: bool, polarity_differs: bool,
                     old_reports_change: bool = False) -> bool:
    """A replacement needs the newer statement to *say* that something changed: an explicit change cue
    ("no longer", "switched to", "I used to love…", "anymore"), a shift marker ("now", "lately",
    "instead", "but") or the opposite polarity. What an event or experience implied is replaced only on
    an explicit change cue ("fusion doesn't excite me anymore"): a later remark on the same topic
    ("we love painting lately" after "we made pots") is not an update of what happened.

    A statement that itself reported a change (its turn says "lately I've realized…", "I now prefer…") is
    the user's latest word on the matter: only an explicit new change cue replaces it, never a shift
    word or a remark on a neighbouring topic (on MemSyco most wrong-way replacements were a later
    aside superseding the turn that stated the current preference).

    >>> change_evidenced("preference", False, True, False), change_evidenced("experience", False, True, False)
    (True, False)
    >>> change_evidenced("preference", False, True, False, old_reports_change=True)
    False
    """
    if old_reports_change or old_kind in ("event", "experience"):
        return change_cue
    return change_cue or shift_cue or polarity_differs


# Having moved on from something ("I've grown weary of those events", "burned out on indie films"): a
# change cue in the offline extractor (induction.offline.CHANGE) and a reversal here, one list for both.
MOVED_ON: tuple[str, ...] = (r"lost (?:interest|my interest)", r"tired of", r"(?:weary|sick) of", r"fed up with",
                             r"burn(?:ed|t) out")

# What tells a change of direction from an elaboration. On LoCoMo "now" and "lately" mostly report progress
# on the same path ("Now I'm passionate about creating a safe place", "Growing my customer base is the main
# focus right now"): 17 of 28 audited SUPERSEDES edges came from whole-turn replacement on such a turn, none
# right. A turn that changes direction turns against something: a contrast, a reversal verb, a realisation.
_REVERSAL = re.compile(
    r"\b(?:but|however|though|although|instead|rather than|whereas|no longer|any ?more|any longer|no more|"
    r"switch(?:ed|ing)? (?:to|from|over)|changed my|change of heart|(?:a )?complete 180|"
    r"(?:completely|totally|entirely) (?:changed|flipped|reversed|shifted|switched)|rethink\w*|reconsider\w*|"
    r"(?<!not )(?<!never )(?<!n't )(?:gave up|giving up|given up)|moved on from|grown out of|shift(?:ed|ing)? (?:my|the|away|from|to)|replac(?:ed|ing)|"
    r"turned (?:away|against)|" + "|".join(MOVED_ON) + r"|used to|I know I (?:said|mentioned)|"
    r"(?:despite|contrary to) what I (?:said|mentioned)|pivot(?:ed|ing)? (?:from|to|away)|"
    r"(?:I|I've|I have|I'm|I am) (?:decided to )?step(?:ped|ping)? (?:away|back) from|"
    r"abandon(?:ed|ing)?|another (?:shot|try|chance)|I'?d (?:much )?rather|"
    r"reali[sz](?:ed|e|ing)|not for me|(?:doesn't|does not|didn't|did not|don't) (?:feel right|work for me)|"
    r"(?:going|went|get|getting) back (?:to|into)|return(?:ing|ed)? to|actually|(?:have|'ve) since|prefer\w*|"
    r"more \w+(?: \w+)? (?:now|than)|than (?:before|I (?:used to|was|did)))\b", re.I)
# The statement says the earlier state persists or adds to it ("Still can't seem to find any dog-friendly
# spots", "Now I want to help people go through it too", "I also love…"): it replaces nothing.
_CONTINUES = re.compile(r"\b(?:still|too|also|as well|even more|more than ever|continu(?:e|es|ed|ing)|"
                        r"(?:totally |completely |fully |strongly |so )?agree[sd]?)\b", re.I)


# A concessive "but" turns against a difficulty, not against an earlier view ("It's been tough, but I'm living my
# true self", "Finding self-acceptance was a long process, but now I'm ready to…"): it is no reversal.
_CONCESSIVE = re.compile(r"\b(?:tough|hard|difficult|a long process|a lot to take in|challenging|rough|scary|"
                         r"overwhelming|exhausting|stressful|busy)\b[^.!?]{0,30}?\bbut\b", re.I)


# A "but" that opens a request or a worry turns against nothing the person held ("I've set up Flask-Login,
# but I'm not sure how to handle sessions", "…, but how can I make sure I stick to it?"): on BEAM almost
# every user turn has one (it removed 6 of BEAM's 42 SUPERSEDES edges; 5 of them were wrong).
_BUT_ASKS = re.compile(r"\bbut (?:I'?m (?:not sure|having (?:some )?trouble|kinda (?:worried|stuck|confused)|"
                       r"worried|stuck|confused|wondering)|I (?:want|need|would like|'d like) to (?:make sure|know|"
                       r"understand|ensure)|I don'?t (?:know|understand)|how|what|which|why|should I|can (?:I|you)|"
                       r"could you|is (?:that|this|it)|am I|do I)\b", re.I)


def reverses(statements: Iterable[str]) -> bool:
    """Does a turn (its statements) turn against something: a contrast, a reversal verb, a realisation?
    ``now`` / ``lately`` alone do not: they report progress on the same path as often as a change.

    >>> reverses(["I've shifted my focus.", "I'm now drawn to West African drumming."])
    True
    >>> reverses(["Now I'm passionate about creating a safe place for people to grow."])
    False
    """
    return any(_REVERSAL.search(_BUT_ASKS.sub(" ", _CONCESSIVE.sub(" ", s))) for s in statements)


def continues(statement: str) -> bool:
    """The statement says the earlier state persists or adds to it, and turns against nothing.

    >>> continues("Still can't seem to find any dog-friendly spots to rent."), continues("I still like jazz but prefer techno now.")
    (True, False)
    """
    return bool(_CONTINUES.search(statement)) and not _REVERSAL.search(statement)


# What outside evidence can dispute: a person's preference or belief (paper §3.3, user belief vs objective
# evidence). What they do, plan or live with is not an opinion a report contradicts: on BEAM every sampled
# user-vs-assistant "conflict" joined a request or a circumstance ("I'm trying to debug this TypeError…") to
# the assistant's answer about it (docs/results/relations.md, revision 6).
DISPUTABLE_KINDS: frozenset[str] = frozenset({"preference", "belief"})


def may_conflict(a_kind: str, b_kind: str, a_holder: str, b_holder: str) -> bool:
    """A conflict joins two statements of one person, or a person's preference or belief and outside
    evidence (paper §3.3: user belief vs objective evidence). Two different people may simply differ,
    and two pieces of evidence are weighed against the person, not against each other (the assistant
    does not dispute itself: 305 of BEAM's 814 conflicts were assistant vs assistant, none right).

    >>> may_conflict("preference", "belief", "user", "document"), may_conflict("preference", "preference", "Ann", "Bob")
    (True, False)
    >>> may_conflict("belief", "belief", "assistant", "assistant"), may_conflict("circumstance", "belief", "user", "assistant")
    (False, False)
    """
    if not can_conflict(a_kind, b_kind):
        return False
    a_ev, b_ev = a_holder in EVIDENCE_HOLDERS, b_holder in EVIDENCE_HOLDERS
    if a_ev and b_ev:
        return False
    if a_ev or b_ev:
        return (a_kind if b_ev else b_kind) in DISPUTABLE_KINDS
    return a_holder == b_holder


# An instruction (advice or a step: "Use TLS/SSL encryption for all data", "Data in Transit: Use TLS…",
# "Check if the response is not ok") claims nothing about the world, so as outside evidence it disputes no
# belief. An optional speaker prefix and a short "Heading:" label come first; a finite verb one or two words
# on ("Research shows…", "Test coverage is…") makes the first word a noun, not an imperative.
_INSTRUCTION = re.compile(
    r"^(?:[\w.'-]{1,30}:\s+)?(?:(?:[A-Z0-9][\w/&'().-]*\s+){0,5}[\w/&'().-]+:\s+)?"
    r"(?:please\s+|always\s+|also\s+|then\s+|first,?\s+|next,?\s+|finally,?\s+|regularly\s+)?"
    r"(?:use|utilize|include|check|ensure|make|add|set|create|consider|try|avoid|keep|dedicate|join|get|provide|"
    r"define|share|install|run|write|review|schedule|follow|start|implement|focus|prioriti[sz]e|reach out|ask|"
    r"allocate|break|track|monitor|limit|update|test|verify|store|handle|apply|configure|document|encourage|"
    r"establish|identify|integrate|leverage|maintain|offer|organi[sz]e|prepare|remember|replace|seek|select|"
    r"send|take|explore|engage|develop|communicate|collaborate|celebrate|choose|compare|contact|continue|deploy|"
    r"design|discuss|don't|do not|never|stay|give|let's|go|look|find|import|call|wrap|move|navigate|enable|"
    r"disable|refactor|catch|validate|sanitize|hash|encrypt|aim|balance|build|capture|clarify|conduct|connect|"
    r"customi[sz]e|draft|evaluate|gather|highlight|incorporate|invite|list|note|outline|pay|simplify|spend|"
    r"structure|summari[sz]e|inform|arrange|assign|assess|participate|attend|visit|practice|plan|research|log)\b"
    r"(?!(?:\s+[\w%-]+)?\s+(?:is|are|was|were|has|have|had|shows?|showed|found|finds|suggests?|indicates?|"
    r"remains?|can|could|will|would|may|might|must|should|seems?|appears?|tends?)\b)", re.I)


# The assistant's own lines are advice, drafts and explanations written for the person, not independent
# evidence: on BEAM every assistant line read (27 of 89) that the model set against a user restated or
# answered the user's request ("Error Handling: Specific error handling for HTTP 401…"). The assistant
# disputes a person only when it says it corrects; a retrieved document (MemSyco's evidence) disputes on
# the model's word.
_CORRECTION = re.compile(
    r"\b(?:actually|in fact|in reality|contrary to|(?:common |popular |widespread )?(?:misconception|myth)s?|"
    r"(?:isn't|aren't|wasn't|weren't|is not|are not|was not|were not|not) (?:quite |entirely |actually |really )?"
    r"(?:true|accurate|correct|right|the case)|(?:is|are|was|were|'s) (?:actually |in fact )?(?:false|incorrect|"
    r"inaccurate|wrong|misleading|outdated|a myth|a misconception)|(?:research|studies|study|evidence|data|tests?|"
    r"trials?|benchmarks?|reviews?|evaluations?|experiments?|surveys?) (?:shows?|showed|suggests?|suggested|"
    r"indicates?|indicated|found|finds|demonstrates?|demonstrated|contradicts?)|no (?:scientific )?evidence|"
    r"debunked|according to (?!your?\b))\b", re.I)


def corrects(statement: str) -> bool:
    """Does the line say it corrects or reports evidence ("Actually, …", "a common myth", "that's not accurate",
    "studies show", "according to the 2024 review")? What the assistant may dispute a person with.

    >>> corrects("assistant: Actually, the Great Wall is not visible from space."), corrects("Studies show X.")
    (True, True)
    >>> corrects("assistant: Scenario: You and Stephen are considering moving."), corrects("According to your report, …")
    (False, False)
    """
    return bool(_CORRECTION.search(statement))


def instructs(statement: str) -> bool:
    """True for an instruction or a step of advice, which states no claim that could dispute a belief.

    >>> instructs("assistant: Data in Transit: Use TLS/SSL encryption."), instructs("Check if the response is ok.")
    (True, True)
    >>> instructs("assistant: Research shows remote teams are less productive."), instructs("Model Boreal was faster.")
    (False, False)
    """
    return bool(_INSTRUCTION.match(statement.strip()))


# A standing instruction: a person tells the assistant how to answer from now on ("Always include version
# numbers when I ask about libraries", "Never use jargon", "From now on, reply in French"). It applies to
# every later request on its topic, so retrieval gives it a route of its own (retrieval/seeds/rank.py).
_STANDING = re.compile(
    r"^(?:please\s+)?(?:always|never|from now on|going forward|whenever I ask|every time I ask)\b"
    # "Never been to Japan", "Always loved jazz": a clipped statement about oneself, not an order
    r"(?!,?\s+(?:been|had|was|were|did|have|seen|tried|thought|knew|gone|really|loved|liked|felt|wanted)\b)"
    r"|\b(?:when(?:ever)?|each time|every time) I ask (?:you )?(?:about|for|how|what|to)\b", re.I)


def standing_instruction(statement: str) -> bool:
    """True for a person's standing instruction about how to answer later requests.

    >>> standing_instruction("Always include version numbers when I ask about software dependencies.")
    True
    >>> standing_instruction("I've never used Zotero."), standing_instruction("I always run in the morning.")
    (False, False)
    """
    return bool(_STANDING.search(statement.strip()))


def derive_validity(
    fact: Fact,
    incoming_supersedes_from: Iterable[Fact],
    unresolved_conflicts_with: Iterable[Fact],
    now: datetime,
) -> Validity:
    """Validity precedence: retracted > expired > superseded > disputed > current.

    A replacement or a counterpart that was itself retracted no longer counts: forgetting the
    newer fact brings the older one back rather than leaving the user with nothing current.
    """
    if fact.retracted_at is not None:
        return "retracted"
    if fact.expired_at is not None and as_utc(fact.expired_at) <= as_utc(now):
        return "expired"
    if fact.valid_to is not None and as_utc(fact.valid_to) <= as_utc(now):
        return "expired"
    if any(o.retracted_at is None for o in incoming_supersedes_from):
        return "superseded"
    if any(o.retracted_at is None for o in unresolved_conflicts_with):
        return "disputed"
    return "current"


def derive_state(
    fact: Fact,
    relations: Iterable[Relation],
    facts_by_id: Mapping[str, Fact],
    concept_path: tuple[str, ...],
    now: datetime,
) -> RelationalState:
    """The Relational State of ``fact`` given every relation touching it.

    ``facts_by_id`` must hold the other endpoint of each relation (traversal guarantees it).
    """
    views: list[RelationView] = []
    sup_by: list[str] = []
    sup: list[str] = []
    conf: list[str] = []
    for r in relations:
        if r.src == fact.fact_id:
            other, direction = r.dst, "out"
        elif r.dst == fact.fact_id:
            other, direction = r.src, "in"
        else:
            continue
        views.append(
            RelationView(type=r.type, direction=direction, other_fact_id=other, resolved=r.resolved_at is not None)
        )
        if r.type == "SUPERSEDES":
            (sup if direction == "out" else sup_by).append(other)
        elif r.resolved_at is None:
            conf.append(other)
    validity = derive_validity(
        fact,
        [facts_by_id[i] for i in sup_by if i in facts_by_id],
        [facts_by_id[i] for i in conf if i in facts_by_id],
        now,
    )
    views.sort(key=lambda v: (v.type, v.direction, v.other_fact_id))
    return RelationalState(
        fact_id=fact.fact_id,
        validity=validity,
        scope=fact.scope,
        concept_path=concept_path,
        relations=tuple(views),
        superseded_by=tuple(sorted(sup_by)),
        supersedes=tuple(sorted(sup)),
        conflicts_with=tuple(sorted(conf)),
    )


def has_cycle(edges: Iterable[tuple[str, str]]) -> list[str] | None:
    """Return one cycle (as a node list) in a directed graph, or None. Iterative DFS, no recursion limit.

    >>> has_cycle([("a", "b"), ("b", "c")]) is None
    True
    >>> sorted(has_cycle([("a", "b"), ("b", "a")]))
    ['a', 'b']
    """
    adj: dict[str, list[str]] = {}
    for s, d in edges:
        adj.setdefault(s, []).append(d)
        adj.setdefault(d, [])
    color: dict[str, int] = {n: 0 for n in adj}  # 0 new, 1 on stack, 2 done
    for start in adj:
        if color[start]:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = [start]
        color[start] = 1
        while stack:
            node, i = stack[-1]
            if i < len(adj[node]):
                stack[-1] = (node, i + 1)
                nxt = adj[node][i]
                if color[nxt] == 1:
                    return path[path.index(nxt):]
                if color[nxt] == 0:
                    color[nxt] = 1
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                color[node] = 2
                stack.pop()
                path.pop()
    return None
