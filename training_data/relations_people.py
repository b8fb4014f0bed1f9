"""More look-alike families for the cross relation model (issue 44, session 8): same topic, no relation.

Written from the classes of the false and near-false look-alike edges of the cross kind (cross-c) on the phrasing
set's **tuning half** (the test half was not read): a later turn about the same thing that changes nothing the user
holds. Each family plants a user state, then a later user turn of one class, labelled unrelated (``said_before``:
duplicate). Families:

- ``other_taste``: another person's contrasting taste or habit ("my partner finds jazz boring");
- ``other_eats``: another person doing what the user cannot ("my flatmate has peanuts every day") beside the
  user's constraint: not a self-contradiction, the holder differs;
- ``reported_whatif``: a what-if or a joke inside reported talk, the user's state reaffirmed ("someone asked what
  I'd pick instead ... but that is not happening");
- ``others_push``: other people's opinion or pressure, the user keeps the state ("everyone tells me to ..., I'm
  sticking with it");
- ``kept_episode``: an episode that respects the user's constraint (sent a dish back, read a label);
- ``topic_question``: a question or a request about the same thing ("which brands are free of x?");
- ``said_before``: the same state said again with a marker of repetition (duplicate).

Registers vary (plain, terse lower case, learner English with dropped agreement). Every sentence was written for
this module; a test checks that none shares five words in a row with any phrasing-set turn.
"""

from __future__ import annotations

import random

PEOPLE_FAMILIES = ("other_taste", "other_eats", "reported_whatif", "others_push", "kept_episode", "topic_question",
                   "said_before")

PEOPLE = ("My partner", "My brother", "My mum", "My best friend", "My boss", "My roommate", "My daughter",
          "My grandad", "My girlfriend", "One of my coworkers", "My uncle", "My housemate")
LIKE = ("I love {a}.", "I'm really into {a} these days.", "{A} is my favourite thing to do on a day off.",
        "Big fan of {a} here.", "I enjoy {a} more than almost anything.")
OTHER_TASTE = ("{P} finds {a} boring and would rather do {b}.", "{P} can't stand {a}, we argue about it a lot.",
               "{P} is obsessed with {b} and talks about it nonstop.", "{P} thinks {a} is overrated, funny right?",
               "{P} hates {a}, so I mostly do it on my own.", "{P} only ever wants {b}, every single weekend.",
               "{P} prefer {b}, he always say {a} is too much.")
# things a person can be unable to eat or do, with a related dish
LIMITS = (("peanuts", "satay chicken"), ("milk", "a big milkshake"), ("wheat", "fresh bagels"), ("fish", "salmon sushi"),
          ("pork", "bacon sandwiches"), ("nuts", "walnut cake"), ("chocolate", "brownies"), ("garlic", "garlic bread"),
          ("alcohol", "red wine"), ("sugar", "doughnuts"))
LIMIT = ("I can't eat {x}, my body reacts to it.", "No {x} for me, I get really ill from it.",
         "I have to stay away from {x} completely.", "i cant have {x}, doctor said so", "I don't touch {x} at all.")
OTHER_EATS = ("{P} has {d} nearly every day.", "{P} ate {d} at lunch and offered me some, I said no thanks.",
              "{P} is crazy about {d}, there's always some in our kitchen.",
              "{P} eat {d} every morning, is too much for me just to watch.",
              "{P} ordered {d} for the whole table at dinner last night.")
WHATIF = ("My friend asked what I'd pick if {a} was banned tomorrow, I said {b} maybe, but that is never happening.",
          "At work we played a silly game of what would you give up, I joked I'd drop {a} for {b}, total nonsense.",
          "Someone wondered if I'd ever swap {a} for {b}, I laughed, no way.",
          "my cousin asked would i change to {b} if i had to, i said maybe in a different life lol",
          "In a quiz about hobbies I answered {b} as a joke, but {a} is still the thing for me.")
PUSH = ("{P} keeps trying to talk me into {b} instead, but I'm sticking with {a}.",
        "People often ask if I'd switch to {b} one day, but {a} suits me fine.",
        "{P} says {a} is a waste of time, I just smile and carry on with it.",
        "Everyone around me is into {b} now, I still prefer {a} and that's okay.",
        "{P} send me videos about {b} every day, but I stay with {a}, I am happy like this.")
KEPT = ("The waitress warned me the sauce had {x} in it, so I picked a different dish.",
        "I read the whole ingredient list twice to make sure there was no {x}.",
        "At the party I brought my own food because most of the snacks had {x}.",
        "The hotel breakfast had {d} but I stuck to toast and fruit.",
        "asked the bakery if the bread has {x}, it did so i left it")
QUESTION_LIMIT = ("Which brands make snacks that are free of {x}?", "Can you find me a dinner recipe without any {x}?",
                  "Is {d} ever made without {x}?", "what can i use in place of {x} when i bake?",
                  "Are there restaurants nearby that are careful about {x}?")
QUESTION_LIKE = ("Any tips for getting better at {a}?", "What's the history behind {a}, do you know?",
                 "How do I find other people nearby who like {a}?", "is {a} a good thing to do in the rain?")
SAID_BEFORE = ("Like I told you already, {a} is my favourite.", "As I mentioned earlier, I really love {a}.",
               "Just repeating myself here, but {a} is my thing.", "i said it before, {a} for me always")


def _register(rng: random.Random, text: str) -> str:
    """Plain most of the time; sometimes terse lower case without the final stop."""
    if rng.random() < 0.75:
        return text
    return text.lower().rstrip(".").replace("i'm ", "im ").replace("don't", "dont").replace("can't", "cant")


def _fill(tpl: str, a: str = "", b: str = "", p: str = "", x: str = "", d: str = "") -> str:
    return tpl.format(a=a, b=b, A=a[:1].upper() + a[1:], P=p, x=x, d=d)


def people_turns(rng: random.Random, family: str, a: str, b: str) -> tuple[list[str], dict[tuple[int, int], str]]:
    """The two user turns of one dialogue of ``family`` (``a`` liked, ``b`` another thing) and the labelled
    (later, earlier) pair."""
    p = rng.choice(PEOPLE)
    x, d = rng.choice(LIMITS)
    limit = family in ("other_eats", "kept_episode") or (family == "topic_question" and rng.random() < 0.6)
    first = _fill(rng.choice(LIMIT if limit else LIKE), a=a, x=x)
    pick = {"other_taste": OTHER_TASTE, "other_eats": OTHER_EATS, "reported_whatif": WHATIF, "others_push": PUSH,
            "kept_episode": KEPT, "said_before": SAID_BEFORE,
            "topic_question": QUESTION_LIMIT if limit else QUESTION_LIKE}[family]
    later = _fill(rng.choice(pick), a=a, b=b, p=p, x=x, d=d)
    label = "duplicate" if family == "said_before" else "unrelated"
    return [_register(rng, first), _register(rng, later)], {(1, 0): label}
