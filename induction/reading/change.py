"""Does a statement turn against an earlier state (a change of direction), or say the earlier state goes on?

``now`` / ``lately`` alone do not turn against anything: they report progress on the same path ("Now I'm
passionate about building a safe place") as often as a change. A turn that changes direction turns against
something: a contrast, a reversal verb, a realisation. ``graph.rules.change_evidenced`` then says which of
these a replacement needs, by kind.
"""

from __future__ import annotations

from collections.abc import Iterable

from induction.reading.cues import CueSet

# Having moved on from something: a change cue in the offline extractor (induction.offline.CHANGE) and a
# reversal here, one list for both.
MOVED_ON_CUES = CueSet("moved on", [
    # "I've lost interest in board games"
    ("lost interest", r"lost (?:interest|my interest)"),
    # "I'm tired of takeaway food", "fed up with the commute", "burned out on night shifts"
    ("weariness", r"tired of|(?:weary|sick) of|fed up with|burn(?:ed|t) out"),
])
MOVED_ON: tuple[str, ...] = MOVED_ON_CUES.alternatives()

REVERSAL = CueSet("reversal", [
    # a contrast connective: "I liked the gym, but swimming suits me better"
    ("contrast", r"but|however|though|although|instead|rather than|whereas"),
    # something has stopped: "I don't drink coffee any more", "no more late nights"
    ("cessation", r"no longer|any ?more|any longer|no more"),
    # one thing for another: "I switched to oat milk", "replaced my car with a bike"
    ("switch", r"switch(?:ed|ing)? (?:to|from|over)|shift(?:ed|ing)? (?:my|the|away|from|to)|replac(?:ed|ing)|"
               r"pivot(?:ed|ing)? (?:from|to|away)"),
    # a change of mind: "I changed my mind about the flat", "I'm rethinking the wedding"
    ("change of mind", r"changed my|change of heart|(?:a )?complete 180|"
                       r"(?:completely|totally|entirely) (?:changed|flipped|reversed|shifted|switched)|rethink\w*|"
                       r"reconsider\w*|turned (?:away|against)"),
    # giving something up (not "never gave up"): "I gave up running", "I've stepped back from the choir"
    ("giving up", r"(?<!not )(?<!never )(?<!n't )(?:gave up|giving up|given up)|moved on from|grown out of|"
                  r"(?:I|I've|I have|I'm|I am) (?:decided to )?step(?:ped|ping)? (?:away|back) from|abandon(?:ed|ing)?"),
    ("moved on", "|".join(MOVED_ON)),
    # the past set against the present: "I used to cycle to work", "I've since moved"
    ("past habit", r"used to|(?:have|'ve) since"),
    # the speaker corrects what they said before: "I know I said Friday", "actually, make it tea"
    ("self-correction", r"I know I (?:said|mentioned)|(?:despite|contrary to) what I (?:said|mentioned)|actually"),
    # going back to something: "I'm giving knitting another try", "I went back to my old barber"
    ("return", r"another (?:shot|try|chance)|(?:going|went|get|getting) back (?:to|into)|return(?:ing|ed)? to"),
    # a preference or comparison with before: "I'd rather walk", "I prefer trains", "more relaxed than before"
    ("preference or comparison", r"I'?d (?:much )?rather|prefer\w*|more \w+(?: \w+)? (?:now|than)|"
                                 r"than (?:before|I (?:used to|was|did))"),
    # a realisation or a misfit: "I realised I hate crowds", "camping is not for me". A realisation is an event,
    # once: a habitual one in the present ("walking the dog makes me realise how lucky I am") and a renewed one
    # ("I realised again how kind she is") restate a view the speaker already holds, so they are left out
    ("realisation or misfit", r"(?<!makes me )(?<!make me )(?<!makes us )(?<!make us )(?<!makes you )(?<!make you )"
                              r"reali[sz](?:ed|e|ing)(?! (?:again|once more)\b)|"
                              r"not for me|(?:doesn't|does not|didn't|did not|don't) (?:feel right|work for me)"),
])

# The statement says the earlier state persists or adds to it ("Still can't find a quiet café", "I also love
# baking"): it replaces nothing.
CONTINUES = CueSet("continuation", [
    # "I still cycle to work", "I'll continue with Spanish"
    ("persistence", r"still|continu(?:e|es|ed|ing)"),
    # "I like jazz too", "I also play the piano", "even more than ever"
    ("addition", r"too|also|as well|even more|more than ever"),
    # "I totally agree"
    ("agreement", r"(?:totally |completely |fully |strongly |so )?agree[sd]?"),
])

# A concessive "but" turns against a difficulty, not against an earlier view ("The move was tough, but I love
# the new flat"): it is no reversal, so the span is blanked before REVERSAL is read.
CONCESSIVE = CueSet("concession", [
    ("concession to a difficulty", r"tough|hard|difficult|a long process|a lot to take in|challenging|rough|scary|"
                                   r"overwhelming|exhausting|stressful|busy"),
    # a difficulty said as negated ease: "learning the cello isn't always easy, but I love it"
    ("negated ease", r"(?:isn't|is not|wasn't|was not|hasn't been|has not been|not) (?:always |exactly |that |very |so )?easy"),
], tail=r")\b[^.!?]{0,30}?\bbut\b")

# A "but" that opens a request or a worry turns against nothing the person held ("I've set up the printer, but
# I'm not sure how to scan", "…, but how do I keep it up?"): blanked before REVERSAL is read.
BUT_ASKS = CueSet("but asks", [
    # "but I'm stuck", "but I'm not sure"
    ("but with a worry", r"I'?m (?:not sure|having (?:some )?trouble|kinda (?:worried|stuck|confused)|"
                         r"worried|stuck|confused|wondering)"),
    # "but I want to make sure", "but I don't know"
    ("but with a wish to understand", r"I (?:want|need|would like|'d like) to (?:make sure|know|understand|ensure)|"
                                      r"I don'?t (?:know|understand)"),
    # "but how …", "but should I …"
    ("but with a question", r"how|what|which|why|should I|can (?:I|you)|could you|is (?:that|this|it)|am I|do I"),
], head=r"\bbut (?:")


def reverses(statements: Iterable[str]) -> bool:
    """Does a turn (its statements) turn against something: a contrast, a reversal verb, a realisation?
    ``now`` / ``lately`` alone do not: they report progress on the same path as often as a change.

    >>> reverses(["I've shifted my focus.", "I'm now drawn to West African drumming."])
    True
    >>> reverses(["Now I'm passionate about creating a safe place for people to grow."])
    False
    """
    return any(REVERSAL.regex.search(BUT_ASKS.regex.sub(" ", CONCESSIVE.regex.sub(" ", s))) for s in statements)


def continues(statement: str) -> bool:
    """The statement says the earlier state persists or adds to it, and turns against nothing.

    >>> continues("Still can't seem to find any dog-friendly spots to rent."), continues("I still like jazz but prefer techno now.")
    (True, False)
    """
    return bool(CONTINUES.regex.search(statement)) and not REVERSAL.regex.search(statement)
