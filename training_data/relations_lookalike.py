"""Look-alike families for the relation model's synthetic dialogues (issue 44): same topic, no relation.

A model that reads the older and the newer statement together learns "shares words with an earlier
statement and says something new about it" as a change unless it sees, beside every change, the turns
that only look like one. Each family below plants a user state, then a later turn of one of the
look-alike classes of the phrasing guideline (evaluation/phrasing/README.md), labelled unrelated (or
duplicate for a repeat in other words); two contrast families (a lasting change of the same habit, a
refusal of a thing once liked) keep the positive side next to them:

- ``elaboration``: more detail about the same state ("the route goes along the canal");
- ``one_off``: a single exception that leaves the habit standing ("flat tyre, bus today");
- ``other_change``: another person's preference or change ("my sister switched to oat milk");
- ``hypothetical`` / ``question``: a daydream, a what-if, a question about something else;
- ``advice``: reported speech, someone else's suggestion the user did not act on;
- ``first_time``: "never ... before" that reports a first time, not a refusal;
- ``repeat``: the same state in other words (duplicate);
- ``habit_change`` (supersedes): the habit itself changed for good;
- ``refusal`` (supersedes): a thing once liked, now refused for good.

Registers vary (plain, terse lower case, a few learner-English and typo forms). Every sentence was
written for this module; none is taken from a benchmark, the phrasing set or the example history.
"""

from __future__ import annotations

import random

# (habit, elaboration, one-off exception, lasting change) of one everyday state, in the user's words.
HABITS: tuple[tuple[str, str, str, str], ...] = (
    ("I cycle to work every day.", "My cycling route to work follows the river for about twenty minutes.",
     "My bike has a flat tyre, so I'm taking the tram to work today.",
     "I sold my bike last month and I take the tram to work now."),
    ("I go vegetarian at home, no meat in the fridge.", "Most evenings I cook lentils or a big vegetable curry.",
     "At my uncle's barbecue on Sunday I had a burger just to be polite.",
     "I started eating meat again after two years, chicken most days now."),
    ("I live in a small flat in Leeds.", "The flat in Leeds has a tiny balcony where I grow herbs.",
     "I'm staying at a friend's place in York for the weekend.", "We moved out of Leeds, we rent a house in Bristol now."),
    ("I work night shifts at the warehouse.", "The night shifts at the warehouse start at ten and end at six.",
     "I swapped one shift with a colleague, so I'm working days this Thursday.",
     "I got moved to the day team permanently, no more nights for me."),
    ("I drink my coffee black.", "I grind the beans myself every morning for my black coffee.",
     "The cafe was out of everything else so I had a caramel latte today.",
     "These days I take my coffee with lots of milk, black is too harsh for me now."),
    ("I run five kilometres every morning.", "My morning run loops around the park twice.",
     "It was pouring, so I skipped my run this morning.", "I stopped running after the knee injury and swim instead now."),
    ("I use a paper diary for all my appointments.", "My paper diary has a different colour pen for each project.",
     "I forgot my diary at home so I put today's meeting in my phone.",
     "I gave up the paper diary, everything lives in my phone calendar now."),
    ("I go to bed around eleven.", "Before bed at eleven I usually read for half an hour.",
     "We stayed up until two for my friend's birthday.", "With the new baby my bedtime is nine o'clock now."),
    ("I'm learning Spanish on weekday evenings.", "My Spanish teacher gives us a short story to read each week.",
     "I missed Spanish class on Tuesday because of a dentist appointment.",
     "I dropped Spanish and signed up for Japanese classes instead."),
    ("We shop at the big supermarket on Saturdays.", "At the supermarket we always start with the fruit aisle.",
     "This Saturday we just grabbed a few things at the corner shop.",
     "We switched to a weekly vegetable box delivery and stopped going to the supermarket."),
    ("My team meets every Monday at nine.", "The Monday meeting is mostly about the week's deadlines.",
     "The Monday meeting got moved to Tuesday this week because of the holiday.",
     "Our manager moved the team meeting to Wednesdays from now on."),
    ("I play five-a-side football on Thursdays.", "Our Thursday football group has about twelve regulars.",
     "I sat out football this Thursday with a sore ankle.",
     "I quit the Thursday football group and joined a climbing gym instead."),
)
OTHERS = ("My sister", "My partner", "My neighbour", "My dad", "A colleague of mine", "My flatmate", "My cousin")
OTHER_CHANGE = ("{O} switched from {a} to {b} last year.", "{O} can't stand {a} anymore and only does {b} now.",
                "{O} used to love {a} but has moved on to {b}.", "{O} keeps saying {b} is better than {a}.")
HYPOTHETICAL = ("If I had more free time I'd probably get into {b}.", "Sometimes I daydream about trying {b} one day.",
                "In another life I might have been really into {b}.", "Maybe someday I'll give {b} a go, who knows.",
                "If money were no object I'd try {b} too.")
QUESTION = ("Do you think I would enjoy {b}?", "What's a good way to get started with {b}?",
            "Is {b} expensive to get into?", "Would {b} be a good thing to try with friends?",
            "What do people usually like about {b}?")
ADVICE = ("My friend keeps telling me I should try {b}.", "My doctor suggested {b} might be good for me.",
          "A colleague said {b} is great, but I'm not convinced.", "Everyone online says {b} is better than {a}.")
ELABORATE = ("What I like most about {a} is how it clears my head.", "I've been into {a} for about six years now.",
             "I got into {a} through an old school friend.", "{A} is the thing I look forward to every weekend.")
FIRST_TIME = ("I'd never tried {b} before last weekend, and it was fun.", "Last month I did {b} for the first time ever.",
              "Never done {b} before this summer, it was a nice change for once.")
REFUSAL = ("I'm done with {a} for good, never again.", "After last time I'm finished with {a}, I won't go back to it.",
           "Honestly I can't do {a} anymore, that's over for me.")
REPEAT = ("{A} is still the best part of my week.", "Nothing beats {a} for me, honestly.",
          "Yeah, {a} is really my thing.")
LIKE = ("I really love {a}.", "I'm a big fan of {a}.", "{A} is my favourite way to spend free time.",
        "I enjoy {a} a lot.")

LOOKALIKE_FAMILIES = ("elaboration", "one_off", "other_change", "hypothetical", "question", "advice", "first_time",
                      "repeat", "habit_change", "refusal")


def _register(rng: random.Random, text: str) -> str:
    """Plain most of the time; sometimes terse lower case without the final stop, or a learner's / typist's form."""
    r = rng.random()
    if r < 0.6:
        return text
    if r < 0.8:
        t = text.lower().rstrip(".")
        return t.replace("i'm ", "im ").replace("i've ", "ive ").replace("don't", "dont")
    if r < 0.9:
        return text.replace("I've been", "I am").replace("I'd never tried", "I never try").replace("I'm ", "I am ")
    return text.replace("the ", "teh ", 1).replace("really", "realy")


def _fill(tpl: str, a: str, b: str, o: str = "") -> str:
    return tpl.format(a=a, b=b, A=a[:1].upper() + a[1:], O=o)


def lookalike_turns(rng: random.Random, family: str, a: str, b: str) -> tuple[list[str], dict[tuple[int, int], str]]:
    """The user turns of one dialogue of ``family`` (slots ``a`` liked, ``b`` another thing) and the labelled
    (later, earlier) turn pairs; every other pair is unrelated."""
    if family == "elaboration" and rng.random() < 0.5:  # a liked thing, then more about why
        return [_register(rng, _fill(rng.choice(LIKE), a, b)), _register(rng, _fill(rng.choice(ELABORATE), a, b))], \
            {(1, 0): "unrelated"}
    if family in ("elaboration", "one_off", "habit_change"):
        h = rng.choice(HABITS)
        later = {"elaboration": h[1], "one_off": h[2], "habit_change": h[3]}[family]
        turns = [_register(rng, h[0]), _register(rng, later)]
        return turns, {(1, 0): "supersedes" if family == "habit_change" else "unrelated"}
    first = _register(rng, _fill(rng.choice(LIKE), a, b))
    pick = {"other_change": OTHER_CHANGE, "hypothetical": HYPOTHETICAL, "question": QUESTION, "advice": ADVICE,
            "first_time": FIRST_TIME, "repeat": REPEAT, "refusal": REFUSAL}[family]
    later = _register(rng, _fill(rng.choice(pick), a, b, rng.choice(OTHERS)))
    label = {"repeat": "duplicate", "refusal": "supersedes"}.get(family, "unrelated")
    return [first, later], {(1, 0): label}

