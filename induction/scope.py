"""Scope: the conditions under which a statement holds, induced from its syntax rather than listed.

A preference rarely holds everywhere, and people say where it holds in a few grammatical shapes; we
read the shapes, not a list of situations:

- a condition clause: a subordinator (when, whenever, if, only if, unless, once, as long as, provided,
  while + -ing) opening a present-tense clause: "when I design something for myself", "if I control
  the schedule", "once a workable option is clear", "unless the connection is genuinely impractical".
  A past-tense clause ("when I was a kid", "if I knew") dates or imagines, it does not scope; "if"
  after know/wonder/see... is "whether"; "while" with a finite clause is usually a contrast.
- a fronted framing phrase ending in a comma: "For trips or group projects, …", "On weekdays, …",
  "As a teacher, …" (discourse markers such as "For example," or "In general," excepted), or without its
  comma, ended by the clause's first-person subject: "For running I use …", "During Ramadan we …"; in the
  chat register also lower case ("for invoices i use a spreadsheet").
- a domain phrase: "when it comes to X", "for my own projects", "in my free time" (not any possessive:
  "for my store", "in our community" are complements).
- company, time and place: "with friends", "with my sister", "around my kids", "on weekdays", "on
  weeknights", "in the mornings", "during the week", "after 3pm", "before bed", "at work", "on work trips",
  and "by myself" / "on my own" / "for myself"; an activity after "for" ("for gaming", "for design work"), an
  occasion said with "a" or as a plural after "before" / "after" ("after a long shift", "before presentations"),
  public transport and meals ("on the underground", "at breakfast"), named feasts ("at Christmas"), an exception
  ("just not at breakfast"), and a fronted participle clause of what one is doing ("Working from home, I …").

``scopes_in`` returns the phrases in the order said, lower-cased at the start (so a renderer can write
"only for work trips" and "when I travel" alike), at most ``limit`` of them. The table of cases is in
tests/test_induction_scope.py. What it cannot do: scopes implied without a marker ("Weekday lunches:
salad"), or a scope stated in another turn than the statement it restricts.
"""

from __future__ import annotations

import re

_TYPO = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2014": " - ", "\u2013": "-"})

# --- condition clauses -------------------------------------------------------------------------------
_SUB = (r"(?:only if|only when|even when|even if|whenever|as long as|so long as|provided(?: that)?|every time|each time|"
        r"any ?time|when|wen|if|unless|once)")
# What may open the clause: a subject (pronoun, determiner + noun, a number) or a gerund ("when traveling").
_OPENER = (r"(?:I|I'm|I've|im|ive|we|we're|we've|it|it's|its|they|they're|there|this|that|these|those|the|a|an|my|our|"
           r"someone|people|everyone|one|two|three|both|each|any|[a-z]+ing)")
_BOUNDARY = (r"(?=\s*(?:[,;:.!?()\"]|\s-\s|$|\bbut\b|\band (?:I|we)\b|\bI\b(?!'m|'ve)|\bwe\b(?!'re|'ve)|"
             r"\b(?:we|they|you|it) (?:can|will|could|should|would|may|might|must)\b))")
CONDITION = re.compile(rf"\b{_SUB}\s+{_OPENER}\b[^,;:.!?()\"]{{0,70}}?{_BOUNDARY}", re.I)
# "while" / "whilst" scopes only with what one is doing or where one is ("while driving", "whilst I'm at work");
# with a stative verb it contrasts ("while I like jazz, ..."). An elliptical condition drops its subject and verb:
# "when abroad", "whilst on holiday", "when at my parents'".
# an exception to the statement: "I eat meat, except at my grandma's", "no dairy other than on Sundays", "fine with
# it, just not at breakfast"
EXCEPT = re.compile(r"\b(?:except|apart from|other than|(?:just|but|only|though) not)\s+(?:at|on|in|with|for|during|around|when|if|while)\s+"
                    r"[^,;:.!?()\"]{1,50}", re.I)
WHILE = re.compile(rf"\bwhil(?:e|st)\s+(?:(?:I'm|I am|im|we're|we are)\s+)?(?!at it\b)(?:[a-z]+ing|at|on|in|away|abroad|out)\b"
                   rf"[^,;:.!?()\"]{{0,60}}?{_BOUNDARY}", re.I)
ELLIPTIC = re.compile(r"\b(?:when|whenever|while|whilst)\s+(?:abroad|away(?: from home)?|overseas|"
                      r"(?:really |very |a bit )?(?:stressed|tired|sick|ill|bored|hungry|anxious|busy|sad|cold|hot|"
                      r"exhausted|overwhelmed|nervous|unwell)\b|"
                      r"(?:on|at|in)\s+(?:[A-Za-z'-]+\s+){0,2}?[A-Za-z'-]+)(?=\s*[,;:.!?]|\s+(?:I|i|we)\b|$)", re.I)
# "when I'm stressed", "if we're invited": an -ed form after a present "be" / "get" / "feel" is a state, not a past
_PRESENT_STATE = re.compile(r"(?:I'm|I am|im|we're|we are|it's|it is|they're|they are|I get|we get|I feel|we feel)\s+"
                            r"(?:really |very |a bit |so |too )?\w+ed\b", re.I)
_PAST = re.compile(r"^(?:\S+\s+){0,3}?(?:was|were|had|did|went|got|knew|thought|saw|came|took|used to|"
                   r"\w+ed)\b", re.I)
_WHETHER = re.compile(r"\b(?:know|wonder(?:ing)?|see|sure|ask(?:ing)?|decide|check|unclear|tell|doubt)\s+$", re.I)
_YOU = re.compile(r"^\w+(?: \w+)?\s+you\b", re.I)

# --- framing and domain phrases ----------------------------------------------------------------------
_DISCOURSE_PHRASES = frozenset({"now", "example", "instance", "me", "sure", "once", "starters", "a start", "a while",
                                "a bit", "a moment", "a change", "the most part", "the record", "general", "fact",
                                "short", "addition", "particular", "the meantime", "the end", "the same time",
                                "other words", "that case", "any case", "this case", "my opinion", "my view",
                                "my experience", "the past", "the future", "the other hand", "the whole", "that note",
                                "top of that", "a way", "some ways", "many ways", "reality", "practice", "theory",
                                "total", "sum", "summary", "contrast", "comparison", "conclusion", "that reason",
                                "this reason", "the moment", "the first time", "a long time", "years", "ages",
                                "so long", "what it's worth", "the time being", "that matter", "this purpose",
                                "that purpose", "the rest", "most", "some", "many", "one", "the better", "good",
                                "real", "certain", "sure", "the life of me", "my part", "our part", "a few weeks",
                                "now though", "context", "reference", "clarity", "simplicity", "convenience",
                                "my own sake", "everyone's sake", "first", "last", "least", "best", "worst", "times",
                                "the beginning", "the start", "hindsight", "retrospect", "fairness", "truth", "effect",
                                "turn", "return", "response", "that time", "this time", "the meantime", "a sense",
                                "advance", "case", "particular", "person", "private", "public", "all", "all honesty",
                                "honesty", "luck", "time", "between", "that", "this", "which", "it", "them", "all that",
                                "all this", "that happened", "this happened", "a while"})
_SUBJ = r"(?:I|i|we|We|im|ive)"
FRONTED = re.compile(rf"(?:^|(?<=[.!?;]\s))(?:(?:[Ff]or|[Oo]n|[Ii]n|[Aa]t|[Dd]uring|[Ww]ith|[Ww]ithout|As)\s+"
                     rf"(?:(?!{_SUBJ}\b)[A-Za-z'-]+\s+){{0,6}}?(?!{_SUBJ}\b)[A-Za-z'-]+)(?=\s*,)")
# The same fronted phrase without its comma, read up to the clause's first-person subject: "For running I use
# Strava", "During Ramadan I eat after sunset", "With my landlord I'd rather keep it in writing", "At the market
# in my village I pay cash". The subject is what ends the phrase, so only I / we (with a contraction) count.
FRONTED_BARE = re.compile(rf"(?:^|(?<=[.!?;]\s))(?:(?:[Ff]or|[Oo]n|[Ii]n|[Aa]t|[Dd]uring|[Ww]ith|[Ww]ithout)\s+"
                          rf"(?:(?!{_SUBJ}\b)[A-Za-z'-]+\s+){{0,5}}?(?!{_SUBJ}\b)[A-Za-z'-]+)"
                          rf"(?=\s+{_SUBJ}(?:'d|'m|'ll|'ve|'re)?\s+[a-z])")
# "for my store", "in our community", "in my corner" are complements, not conditions: only a few
# possessive shapes are scopes, the user's own things and free time.
DOMAIN = re.compile(
    r"\bwhen it comes to (?:[A-Za-z'-]+\s+){0,3}?[A-Za-z'-]+(?=\s*[,;:.!?]|$)"
    r"|\b(?:for|in|on|with) (?:my|our) own (?:[a-z'-]+\s+)?[a-z'-]+(?=\s*[,;:.!?]|\s+(?:and|or|but|because|I|we)\b|$)"
    r"|\bin (?:my|our) (?:free|spare|down|own|leisure) time\b", re.I)
# Closed classes that stay listed: who one is with, recurring times, and a few places.
SETTING = re.compile(
    r"\b(?:with (?:the |my |our )?(?:friends|family|kids|children|partner|wife|husband|colleagues|coworkers|team|"
    r"clients|guests|others|other people|groups?|strangers|parents|siblings|sisters?|brothers?|mom|dad|son|daughter|"
    r"in-laws|boss|manager|landlord|landlady|neighbou?rs|roommates|flatmates|housemates|students|pupils|patients|"
    r"customers|relatives|grandparents|grandma|grandpa|grandmother|grandfather|aunts?|uncles?|cousins|nephews?|"
    r"nieces?|doctors?|teachers?|mates|girlfriend|boyfriend|fianc[eé]e?)"
    r"|on (?:weekdays|weekends?|weeknights|week nights|workdays|work days|school nights|holidays|"
    r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)days?)"
    r"|(?:after|before) (?:\d{1,2}(?:[:.]\d\d)?\s*(?:am|pm|a\.m\.|p\.m\.)|\d{1,2}(?::\d\d)|noon|midday|midnight|dinner|"
    r"lunch|breakfast|work|school|bed|bedtime|dark|sunset|sunrise)"
    r"|around (?:the |my |our )?(?:kids|children|family|parents|grandparents|in-laws|colleagues|clients|strangers|guests)"
    r"|(?:during|in) (?:the )?(?:week|work ?days?|work hours|summer|winter|spring|fall|autumn|mornings?|evenings?|"
    r"afternoons?|holidays|rainy season)"
    r"|at (?:work|home|the office|night|the gym|school|restaurants?|(?:the )?weekends?|parties|church|the pub|breakfast|"
    r"lunch|dinner|meals|mealtimes)"
    r"|in (?:the office|public|private|the car|company|the gym)|on (?:the )?(?:train|bus|tube|plane|underground|metro|subway|tram|ferry|ferries|coach)s?\b"
    r"|(?:on|over) the weekends?|outside (?:of )?(?:work|school|the office|office|business|working)(?: hours)?"
    # a plural recurring event as the setting ("in meetings", "at concerts", "a suit to interviews")
    r"|(?:in|at|during|to) (?:[a-z-]+ )?(?:meetings|classes|lectures|concerts|gigs|parties|weddings|interviews|"
    r"funerals|conferences|festivals)"
    r"|in front of (?:the |my |our )?(?:kids|children|family|parents|guests|clients|students|nephews|nieces|boss|"
    r"colleagues|strangers|others)"
    r"|on (?:call|duty|nights|(?:night |early |late )?shifts?)"
    # a recurring time: an adjective and a plural day word ("on sunny days", "on slow mornings"), a recurring period
    r"|on (?:[a-z-]+ ){1,2}(?:days|nights|mornings|evenings|afternoons)"
    r"|during (?:the |my |our )?(?:[a-z-]+ ){0,2}(?:season|seasons|term|terms|semesters?|exams|heatwaves?|"
    r"winters|summers|months|shifts|Lent|Ramadan|Advent)"
    # before / after a recurring event (a plural or a mass noun; "after that festival" anchors a time instead)
    r"|(?:after|before) (?:(?:big|long|early|late|important|hard|my|our) )?(?:workouts|meetings|races|flights|exams|"
    r"games|matches|shifts|runs|classes|interviews|training|practice|rehearsals|performances|gigs)"
    r"|(?:after|before) (?:(?:big|long|early|late|important|hard|busy|bad|good|my|our) )?(?!(?:years|months|weeks|days|"
    r"hours|minutes|seconds|ages|decades|centuries|times|others|this|that|these|those|all|us|them|it|things|lots|loads|"
    r"tons|ours|yours|theirs|his|hers|its)\b)[a-z]{3,}s\b"
    r"|(?:after|before) an? (?:(?:big|long|early|late|important|hard|busy|bad|good|stressful|tough|late) )?"
    r"(?:day|night|shift|run|workout|race|meeting|flight|match|game|exam|presentation|talk|interview|trip|night out|"
    r"long day|swim|ride|hike|party|gig|performance|date)\b"
    r"|on (?:my |our |the |a |an )?(?:work |business |long |short |family |solo |group |weekend |road )?"
    r"(?:trips?|flights?|runs?|hikes?|commutes?|vacations?|holidays?)"
    r"|for (?:my |our |the |any |most )?(?:work |business |group |family |solo |weekend |team |client |short |long |"
    r"personal |casual |formal |important |special |social |outdoor |indoor )?(?:trips?|travel|projects?|meetings?|"
    r"work|events?|occasions?|dinners?|parties|holidays?|vacations?|outings?|presentations?|deadlines?|clients?|"
    r"guests|kids|children|family|friends|team|colleagues|reading|study(?:ing)?|writing|cooking|shopping|updates?)"
    r"|(?<!thanks )(?<!thank you )(?<!sorry )(?<!grateful )(?<!apologi[sz]e )(?<!responsible )(?<!blame )"
    r"(?<!known )(?<!famous )(?<!excuse )(?<!reason )(?<!ready )(?<!time )(?<!credit )(?<!praise )"
    r"for (?:(?!(?:your|his|her|their|the|this|that|all|hard|great|good|nice|amazing|honest|my|our)\b)[a-z]+ )?"
    r"(?:work|training|practice|sessions)(?= *(?:[,;:.!?]|and\b|but\b|$))"
    r"|(?<!thanks )(?<!thank you )(?<!sorry )(?<!grateful )(?<!apologi[sz]e )(?<!responsible )(?<!blame )"
    r"(?<!known )(?<!famous )(?<!excuse )(?<!reason )(?<!ready )(?<!time )(?<!credit )(?<!praise )"
    r"for (?!(?:everything|nothing|something|anything|morning|evening|thing|king|spring|during|being|bring)\b)[a-z]{2,}ing"
    r"(?= *(?:[,;:.!?]|and\b|but\b|$))"
    r"|for (?:football|soccer|tennis|rugby|cricket|basketball|golf|squash|badminton|hockey|yoga|pilates|the gym)"
    # a named feast or holiday as the setting ("at Christmas", "over Easter")
    r"|(?:at|over|during|for|on) (?:Christmas|Easter|Thanksgiving|New Year(?:'s)?|Diwali|Eid|Passover|Hanukkah|"
    r"Halloween|Chinese New Year|Lunar New Year|Nowruz|Carnival|birthdays)"
    r"|by myself|on my own|for myself|for ourselves|by ourselves)\b", re.I)
# A fronted participle clause of what one is doing, with its comma, before the I / we of the main clause:
# "Working from home, I wear pyjamas all day", "Travelling for work, we eat out". A participle about the talk
# itself ("Speaking of which,", "Looking back,", "Having said that,") frames the discourse, not a condition.
PARTICIPLE = re.compile(r"(?:^|(?<=[.!?;]\s))(?!(?:Speaking|Talking|Having|Being|Looking|Thinking|Going|Moving|Saying|"
                        r"Considering|Judging|Getting|Coming|According|Seeing|Given|Putting|Turning|Generally|Honestly)\b)"
                        r"[A-Z][a-z]+ing\s+(?:[A-Za-z'-]+\s+){0,4}?[A-Za-z'-]+(?=\s*,\s*(?:I|i|we|We)\b)")


def _lead_lower(phrase: str) -> str:
    """"When I travel" -> "when I travel"; "I" and names further in stay as said."""
    return phrase[:1].lower() + phrase[1:] if phrase[:2] != "I " else phrase


def _conditions(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for m in CONDITION.finditer(text):
        ph = m.group(0).strip()
        sub = re.match(_SUB, ph, re.I)
        rest = ph[sub.end():].strip() if sub else ph
        head = ph[: sub.end()].lower() if sub else ""
        if head.startswith("when it") and rest.lower().startswith("it comes to"):
            continue  # a domain phrase, read by DOMAIN
        if (_PAST.match(rest) and not _PRESENT_STATE.match(rest)) or _YOU.match(ph) or len(rest.split()) < 2 and not rest.lower().endswith("ing"):
            continue
        if head == "once" and re.match(r"(?:(?:a|an|per|every) (?:day|week|month|year|while|time|fortnight)s?|more|again|"
                                       r"or twice|in a while)\b", rest, re.I):
            continue  # "once a week" counts, it sets no condition
        if head == "if" and re.match(r"there(?:'s| is) anything\b", rest, re.I):
            continue  # "if there's anything I can do" offers help
        if head == "if" and _WHETHER.search(text[: m.start()]):
            continue  # "I don't know if I can" asks whether, it sets no condition
        if head == "while" or (head in ("when", "whenever") and rest.split()[0].lower() in ("there", "this", "that")):
            continue
        out.append((m.start(), ph))
    return out


def _framed(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for m in [*FRONTED.finditer(text), *FRONTED_BARE.finditer(text)]:
        ph = m.group(0).strip()
        prep, _, obj = ph.partition(" ")
        if obj.lower() in _DISCOURSE_PHRASES or obj.lower().split()[0] in ("example", "instance", "now", "me"):
            continue
        if prep.lower() == "as" and not re.match(r"(?:a|an|the|my|our)\s", obj, re.I):
            continue  # "As expected," / "As soon as possible,"
        if prep.lower() == "with" and re.match(r"(?:that|this|all|so|such|everything)\b", obj, re.I):
            continue
        out.append((m.start(), ph))
    return out


def _domains(text: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group(0)) for m in DOMAIN.finditer(text)]


def scopes_in(text: str, limit: int = 2, turn: bool = False) -> list[str]:
    """Distinct scope phrases of ``text``, in the order said. ``turn``: the phrases that may scope the other
    statements of a turn, which leaves out the adjuncts that attach to their own clause — "while" + what one
    is doing and "except …" ("I can just listen while commuting" restricts the listening, not "I switched to
    podcasts" said before it).

    >>> scopes_in("When I design something for myself, I usually remove elements.")
    ['when I design something for myself']
    >>> scopes_in("I generally prefer open-source software when it can do the job well.")
    ['when it can do the job well']
    >>> scopes_in("When I was a kid, I loved horses.")
    []
    """
    t = text.translate(_TYPO)
    found = (_conditions(t) + _framed(t) + _domains(t) + [(m.start(), m.group(0)) for m in SETTING.finditer(t)]
             + [(m.start(), m.group(0)) for m in PARTICIPLE.finditer(t)]
             + [(m.start(), m.group(0)) for m in (*(() if turn else (*EXCEPT.finditer(t), *WHILE.finditer(t))),
                                                   *ELLIPTIC.finditer(t))])
    found.sort(key=lambda x: (x[0], -len(x[1])))
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    for start, ph in found:
        ph = re.sub(r"\s+", " ", ph.strip(" ,;"))
        end = start + len(ph)
        if any(a <= start < b or a < end <= b for a, b in spans):
            continue  # inside a longer phrase already taken ("for myself" in "when I design something for myself")
        if ph.lower() in (x.lower() for x in out):
            continue
        spans.append((start, end))
        out.append(_lead_lower(ph))
        if len(out) >= limit:
            break
    return out
