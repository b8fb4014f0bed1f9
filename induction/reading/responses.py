"""Statements that respond to someone else rather than state the speaker's own state: greetings, thanks,
encouragement, a remark on the other person's news, a compliment, a shared photo, news announced but not yet
told. Such a statement holds no state of its speaker (``induction.reading.state.holds_state``).
"""

from __future__ import annotations

from induction.reading.cues import CueSet

# A reply opens, after optional interjections ("Oh wow, ", "Yeah! "), with one of these classes.
RESPONSE = CueSet("response to the other person", [
    # opening a conversation
    ("greeting", r"(?:hey|hi|hello|yo)\b|long time no see|(?:great|good|nice) (?:to|chatting|talking)"),
    # accepting an offer
    ("welcoming an offer", r"that'?d be (?:great|awesome|amazing|nice|cool|fun)"),
    # urging the other person on
    ("encouragement", r"believe in yourself|keep (?:it up|going|at it|pushing|me posted|up the)|never give up|"
                      r"don'?t (?:be afraid|give up|worry|forget|hesitate|stop)|do(?:n't)? let|good luck|best of luck"),
    # sharing the other person's joy or wishing them well
    ("congratulation and good wishes", r"congrat|glad (?:you|to hear|that)|so glad|happy for you|proud of you|"
                                       r"hope (?:you|it|that|things)|let me know"),
    # a sentence about the listener
    ("addressing the listener", r"you(?:'re| are) (?:gonna|going to|doing|so|such|right|welcome)|"
                                r"you (?:got this|can do it|should|deserve|did (?:great|amazing|awesome))"),
    # an evaluative remark on what the other person said
    ("evaluative remark", r"that(?:'s| is| sounds) (?:great|awesome|amazing|cool|wonderful|fantastic|so|really|super|"
                          r"impressive|incredible|lovely|nice|exciting|tough|hard)|"
                          r"sounds? (?:great|awesome|amazing|fun|like|wonderful|lovely|cool)|(?:what a|such a) |"
                          r"nice[,!.]|great[,!.]|awesome[,!.]|cool[,!.]"),
    ("thanks", r"thanks?\b|thank you"),
    # answering someone's thanks ("No worries, happy to help!"): a politeness formula, no state of the speaker
    ("acknowledging thanks", r"(?:no problem|not a problem|no worries|my pleasure|any ?time|don'?t mention it)"
                             r"(?: at all)?(?=\s*(?:[,!.;:]|$))|(?:happy|glad) (?:i could |to )(?:help|assist|lend a hand)"),
    # reassuring the listener
    ("reassurance", r"i'?m sure (?:it|you|that)|i bet\b"),
    # imagining the other person's experience ("that must have been exhausting")
    ("empathic must", r"[^.!?]{0,60}\bmust (?:be|have been) (?:great|awesome|amazing|fun|nice|so|really|a |hard|"
                      r"tough|wonderful|exciting|lovely|cool|incredible|fantastic)"),
    # guessing how others feel about something ("The twins must adore that treehouse"): a state of theirs, if any,
    # never of the speaker; a first-person "must" is left alone ("I must admit I love it")
    ("conjectured feeling of another", r"(?:(?!\b(?:I|we|I'm|I've)\b)[^.!?]){0,60}\bmust (?:really |so |just )?"
                                       r"(?:love|adore|enjoy|like|miss|hate|be loving|be enjoying|be thrilled|"
                                       r"be over the moon)\b"),
], head=r"^(?:(?:oh|oof|ooh|wow|yes|yeah|aw+|hey|haha|lol|definitely|absolutely|totally|sure|well|so|and|also|"
        r"really)[,!.]?\s+)*(?:", tail=r")")

# A shared photo ("shared an image: a photo of a bike shop", the offline extractor's rendering of a caption,
# or the raw "[image: ...]") shows something; it states no preference or circumstance of its own.
SHARED_MEDIA = CueSet("shared media", [
    ("image placeholder", r"\[(?:image|photo|picture)\s*:"),
    ("shared picture", r"(?:shared|sent|posted) (?:an? |the )?(?:image|photo|picture|pic)\b"),
], head=r"^(?:", tail=r")")

# A compliment on the other person's thing ("your garden looks amazing").
COMPLIMENT = CueSet("compliment", [
    ("compliment on the listener's thing", r"[\w' -]{1,40}\b(?:is|are|looks?|sounds?|was|were) (?:so |really |truly )?"
                                           r"(?:amazing|great|awesome|beautiful|incredible|impressive|cool|lovely|"
                                           r"wonderful|fantastic|stunning|gorgeous)"),
], head=r"\byour (?:", tail=r")")

# News announced but not yet told ("I've got some news for you!", "Let me fill you in"): the news is in the
# sentences that follow, so the announcement itself replaces nothing.
ANNOUNCEMENT = CueSet("announcement", [
    ("news to share", r"\b(?:I(?:'ve| have)(?: got)?|I've|there(?:'s| is|'re| are)) (?:some |a few |an? |big |exciting )*"
                      r"(?:news|updates?)\b(?! (?:about|on) my)[^.!]{0,40}(?:share|tell|for you)"),
    ("offer to tell", r"^(?:so,? )?(?:let me|I want to|I'd (?:like|love) to) (?:share|tell you|update you|fill you in)"
                      r"(?: (?:some|a few|an?))? ?(?:news|updates?|what'?s new)?[^.!]{0,20}[.!]?$"),
], head="(?:", tail=")")


def responds(statement: str) -> bool:
    """A reply to the other person, a shared photo, a compliment or an announcement of news. ``statement`` is
    already stripped of its holder prefix.

    >>> responds("Oh wow, good luck with the exam!"), responds("I started a pottery class.")
    (True, False)
    """
    s = statement.strip()
    return bool(SHARED_MEDIA.regex.match(s) or RESPONSE.regex.match(s) or COMPLIMENT.regex.search(s)
                or ANNOUNCEMENT.regex.search(s))
