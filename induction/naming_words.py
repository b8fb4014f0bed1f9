"""The word classes of concept naming: which words can be part of a concept's name and which can head it.

Closed classes that never name a topic (pronouns, function words, speakers' names and their short forms,
words of feeling and chat, partitive / person / formula / time nouns), the common verbs and their forms, and
the part-of-speech tests a name's last word must pass (a noun, not an adjective or a verb form). No tagger or
lexicon ships with the project's packages (nltk's tagger and WordNet need data downloads), so the classes
are hand-made lists plus word endings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from induction.offline import STOP

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
                 "various several certain possible difficult calm quiet peaceful busy crazy wild lovely "
                 # bare adjectives (no adjective ending) that stand alone as a predicate ("it's perfect", "so cozy")
                 "perfect ideal fine cozy tough worth healthy sick tired fresh rough quick slow loud neat wise brave "
                 "gentle rich poor young fancy pretty gorgeous silly funny weird lucky chill unreal insane".split())
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



# Part of speech from the neighbours (no tagger ships with the project's packages): a word that many nouns share
# with verbs ("work", "show", "support", "improving") is a verb where English grammar allows nothing else, and any
# word after a degree adverb is an adjective or a verb, never a noun ("so perfect", "really helps"):
# - after "let's", a modal or a negated auxiliary: "let's work together", "we can work on it";
#   not after a subject pronoun ("I paint" names the activity); not after "to" ("to work" is both: "I want to work", "I went to work");
# - before an object pronoun: "these moments show us", "people who support me";
# - an -ing form that takes an object or follows "keep" / "start" / "stop": "improving my skills", "keep improving"
#   (an -ing word of the activity nouns, "painting my room", stays a noun).
VERB_AFTER = frozenset("let lets can could will would shall should must might cannot can't couldn't won't wouldn't "
                       "shouldn't don't didn't doesn't never i'll we'll you'll they'll i'd we'd you'd they'd gonna wanna "
                       "gotta".split())
OBJECT = frozenset("me us him them".split())
POSSESSIVE = frozenset("my your his our their".split())
ASPECT = frozenset("keep keeps kept keeping start starts started stop stops stopped".split())
DEGREE = frozenset("so too very quite really extremely incredibly absolutely totally truly fairly".split())


def verbal(words: Sequence[str], i: int) -> bool:
    """``words[i]`` is a verb, adjective or adverb here by its neighbours (see above), so never a noun of a name."""
    w = words[i]
    before = words[i - 1] if i > 0 else ""
    after = words[i + 1] if i + 1 < len(words) else ""
    if before in VERB_AFTER or before in DEGREE or after in OBJECT:
        return True
    return w.endswith("ing") and w not in _NOUN_FORMS and (after in POSSESSIVE or before in ASPECT)
