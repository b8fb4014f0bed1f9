"""Conflict families for the relation model's synthetic dialogues (issue 44 item 5): conflicts in natural wording.

The older synthetic families (training_data/relations_synthetic.py) cover a person's own contradiction only as
an allergy or an injury against eating or doing the thing, and a belief against evidence only as a myth against
a measurement. The error analysis of the phrasing tuning half (H2, session 7) found the cross kind missing the
other classes of the guideline, so each class below plants a statement, then a later one that cannot be true
beside it, with no "not" / "never" and no change cue in the later one (a change would be an update), and beside
every class its look-alike that fits the first statement (unrelated):

- ``trait_broken`` / ``trait_kept``: a lasting trait or rule of one's own (sober, vegan, scared of water, a light
  sleeper, up at five) against a reported, enjoyed episode that breaks it; the look-alike keeps the rule;
- ``bio_broken`` / ``bio_kept``: a fact of one's life (no siblings, a lifelong resident, no car, no pets) against
  a later mention that presupposes the opposite ("my twin sister and I", "since I arrived last month");
- ``taste_flipped`` / ``taste_kept``: a strong dislike against a later strong liking of the same thing with no word
  of change ("... is honestly what I live for at weekends"), or the other way round with "always has";
- ``record_belief`` / ``record_agreed``: the person's belief about their own arrangement (a time, a day, a dose, a
  room) against a record they shared that the assistant quotes, in either order; the look-alike record agrees;
- ``myth_free`` / ``fact_free``: a claim about the world held for a reason of one's own ("so I ...", "my teacher
  said") against outside evidence said plainly (no "actually", no "studies show"); the look-alike evidence builds
  on a true claim.

Registers vary (plain, terse lower case, learner and typo forms). Every sentence was written for this module;
none is taken from a benchmark, the phrasing set or the example history (tests/test_relations_conflicts.py).
"""

from __future__ import annotations

import random

# (trait, an enjoyed episode that breaks it, an episode that keeps it)
TRAITS: tuple[tuple[str, str, str], ...] = (
    ("I'm a non-drinker, alcohol isn't part of my life.", "Finished two bottles of red with friends on Friday, what a night.",
     "Had a lime soda at the bar while everyone else ordered beer."),
    ("I can't swim, deep water scares me stiff.", "Swam across the lake and back before breakfast, so refreshing.",
     "Sat in the shade with a book while the kids splashed in the pool."),
    ("I'm vegan, no animal products at all.", "Had a cheese board and a rare ribeye for dinner, delicious.",
     "Tried a new cashew cheese at the market, really good."),
    ("Crowds make me panic, I stay away from busy places.",
     "Spent Saturday squeezed into a sold-out arena with sixty thousand fans, loved every minute.",
     "Went to the museum early on a weekday when it was nearly empty."),
    ("I'm claustrophobic, lifts and tunnels are a nightmare for me.",
     "Went caving through the tightest tunnels for three hours, such fun.",
     "Took the stairs to the ninth floor instead of the lift again."),
    ("I'm a very light sleeper, the slightest noise wakes me up.",
     "Slept straight through the thunderstorm and the neighbours' party, like a baby.",
     "Bought earplugs and a white noise machine for the bedroom."),
    ("I get carsick on any drive longer than ten minutes.",
     "Read a whole novel in the back seat on the five-hour drive, felt great.",
     "Sat up front with the window open on the drive to my aunt's."),
    ("Spicy food wrecks my stomach, I keep everything mild.",
     "Won the hottest-wings challenge at the pub and went back for a second plate.",
     "Asked for the curry with no chillies and it was lovely."),
    ("I'm up at five every day and in bed by nine.", "Danced until four in the morning twice this week and slept till noon.",
     "Left the party at half eight so I could be asleep by nine."),
    ("I keep kosher at home and away.", "Grabbed a bacon roll on the way to work, best breakfast ever.",
     "Found a kosher deli two streets from the new flat."),
    ("Freezing weather and I are enemies, winter sports are torture for me.", "Spent the week ice fishing at minus twenty, had the time of my life.",
     "Booked a week somewhere warm for February, as usual."),
    ("Needles terrify me, I faint at the sight of one.", "Got a full sleeve tattoo done in one sitting, barely flinched.",
     "Asked the nurse to talk me through the blood test so I wouldn't look."),
    ("I eat only fish and vegetables, no meat.", "Pork belly and lamb chops at the barbecue, I had seconds of both.",
     "Grilled some sardines for lunch, lovely with lemon."),
    ("Gluten makes me ill for days, I'm coeliac.", "Ate a whole loaf of fresh sourdough this weekend, felt brilliant.",
     "The bakery on my street started a gluten-free range, so handy."),
)
# (a fact of one's life, a later mention presupposing the opposite, a later mention that fits it)
BIO: tuple[tuple[str, str, str], ...] = (
    ("I grew up as the only kid in the family.", "My twin sister and I are throwing a joint birthday party.",
     "My cousins were like siblings to me growing up."),
    ("I've lived in Aarhus my whole life.", "Since I arrived in Aarhus last month I've been exploring every neighbourhood.",
     "Walked past my old primary school in Aarhus today."),
    ("I don't have any pets.", "My cat knocked my coffee off the desk again this morning.",
     "Fed my neighbour's cat while they were away."),
    ("I've always been single, no wedding for me.", "My wife and I celebrated our tenth anniversary on Friday.",
     "Went to my best friend's wedding on Saturday and caught the bouquet."),
    ("I don't drive, I have no licence.", "Drove the kids to school and then myself to the hardware store.",
     "My partner drove us to the airport this morning."),
    ("I've never been outside Europe.", "Just back from my third trip to Japan, already planning the fourth.",
     "Finally made it to Iceland last month, my furthest trip yet."),
    ("I work alone from home, there's no team.", "Had a long one-to-one with each of my six direct reports today.",
     "Spent the whole day at my kitchen table on my own project."),
    ("Both my parents died years ago, and there were no siblings.", "Mum phoned to say my brother's coming for Christmas.",
     "Visited my parents' grave on Sunday with flowers."),
    ("I've been in this flat for twenty years.", "Still unpacking boxes, we only got the keys to this flat last week.",
     "Repainted the hallway of the flat for the third time since I moved in."),
    ("I have no kids.", "Took my daughter to her first swimming lesson this morning.",
     "Babysat my nephew for the afternoon, exhausting."),
)
# (something, a strong liking said without any change cue) in the strong-dislike -> strong-liking direction
TASTE_LIKE = ("{A} is honestly what I live for at weekends.", "{A} makes me happier than anything, I could do it daily.",
              "My favourite moment of any day is {a}.", "{A} every chance I get, best thing there is.")
TASTE_HATE = ("I can't bear {a}, it does nothing for me.", "{A} bores me to tears.", "I find {a} unbearable.",
              "{A}? ugh, hate it.")
TASTE_HATE_ALWAYS = ("{A} has always bored me to tears, always will.", "I've found {a} dull all my life.",
                     "{A} has left me cold from day one.")
TASTE_KEPT = ("{A} came up again this weekend and I bowed out, no loss.", "Someone suggested {a} again, thanks but no thanks.",
              "Still can't see the appeal of {a}, honestly.")
# (the person's belief about their own arrangement, the record quoted, a record that agrees)
RECORDS: tuple[tuple[str, str, str], ...] = (
    ("My train leaves at half past eight.", "The ticket you attached shows a departure at 07:05 from platform 2.",
     "The ticket you attached shows the 08:30 departure from platform 4."),
    ("Rent is due on the first of every month.", "Section 3 of the lease you pasted sets the due date as the fifteenth.",
     "Section 3 of the lease you pasted says rent is paid on the first, by standing order."),
    ("The laptop's warranty runs for three years.", "The receipt you uploaded lists a one-year manufacturer warranty.",
     "The receipt you uploaded lists a three-year warranty with accidental damage."),
    ("My parcel is coming on Monday.", "The tracking page you shared says delivery Thursday between 2 and 6.",
     "The tracking page you shared says Monday, out for delivery by noon."),
    ("I use the eye drops twice a day.", "The pharmacy label in your photo says four times daily, one drop each eye.",
     "The pharmacy label in your photo says twice daily for seven days."),
    ("Hotel checkout is at 2pm.", "Your booking confirmation states check-out by 11:00.",
     "Your booking confirmation states a late check-out at 14:00."),
    ("my exam is in room B12", "the timetable pdf you sent puts your exam in hall C3 at 9am",
     "the timetable pdf you sent puts your exam in B12 at 9am"),
    ("The optician is on the 12th.", "The reminder email you forwarded says the 21st at 9:30.",
     "The reminder email you forwarded says the 12th at 9:30."),
    ("The gym membership is monthly, I can cancel anytime.", "The contract you scanned has a twelve-month minimum term.",
     "The contract you scanned says rolling monthly, one month notice."),
    ("My passport is valid until 2031.", "The scan you sent shows an expiry date of March 2026.",
     "The scan you sent shows an expiry date of June 2031."),
)
RECORD_LATER = ("Right, so {b}", "Okay but {b}", "Sure, though I'm certain {b}", "{B}, I checked ages ago.")
# (a claim about the world, evidence against it said plainly)
MYTHS: tuple[tuple[str, str], ...] = (
    ("lemmings jump off cliffs together", "Lemming numbers rise and crash, but the mass leap was staged for a 1958 film."),
    ("fortune cookies come from China", "Fortune cookies were first baked by Japanese bakers in California."),
    ("one dog year equals seven human years", "A dog reaches adulthood within its first two years; the ratio shifts with size and age."),
    ("MSG gives people headaches", "Double-blind trials found people react to MSG no more often than to a placebo."),
    ("old window glass is thicker at the bottom because glass slowly flows",
     "Old panes are uneven because of how they were made; glass at room temperature does not flow measurably."),
    ("by the laws of physics bumblebees shouldn't be able to fly",
     "Bumblebee flight is fully explained by the vortices their wings make."),
    ("a full moon makes people behave strangely", "Hospital and police records show no rise in incidents on full-moon nights."),
    ("the Earth is closest to the sun in summer", "Earth is nearest the sun in early January, in the northern winter."),
    ("a penny dropped from a skyscraper can kill someone", "A falling penny tumbles and slows to a speed that only stings."),
    ("houseplants clean the air of a whole flat", "You would need hundreds of plants per room to match what opening a window does."),
    ("we swallow eight spiders a year in our sleep", "Spiders avoid sleeping people; the vibration of breathing drives them off."),
    ("mice love cheese more than anything", "Mice go for grains and sweet things first; cheese is low on their list."),
)
TRUTHS: tuple[tuple[str, str], ...] = (
    ("koalas sleep most of the day", "Koalas sleep up to twenty hours a day to save energy on their eucalyptus diet."),
    ("the Pacific is the biggest ocean", "The Pacific covers about a third of the planet's surface."),
    ("bananas are slightly radioactive", "Bananas carry a little potassium-40, far too little to matter."),
    ("some turtles breathe through their backsides", "Several river turtles take oxygen through the lining of the cloaca."),
)
CLAIM = ("{C}, so I plan around that.", "My teacher always said {c}.", "in my family we say {c}", "Everyone knows {c}.",
         "I was brought up to believe {c}, makes sense to me.", "{C}, that's why I'm careful.")
EVIDENCE = ("{E}", "From what has been recorded, {e}", "Vets and biologists describe it differently: {e}",
            "The historical record says otherwise. {E}", "{E} The old saying is a misunderstanding.")

CONFLICT_FAMILIES = ("trait_broken", "trait_kept", "bio_broken", "bio_kept", "taste_flipped", "taste_kept",
                     "record_belief", "record_agreed", "myth_free", "fact_free")


def _register(rng: random.Random, text: str) -> str:
    """Plain most of the time; sometimes terse lower case, or a learner's / typist's form."""
    r = rng.random()
    if r < 0.65:
        return text
    if r < 0.85:
        return text.lower().rstrip(".").replace("i'm ", "im ").replace("i've ", "ive ").replace("don't", "dont")
    if r < 0.93:
        return text.replace("I'm ", "I am ").replace("I've ", "I have ").replace(" the ", " ", 1)
    return text.replace("the ", "teh ", 1).replace("really", "realy")


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def conflict_turns(rng: random.Random, family: str, a: str) -> tuple[list[tuple[str, str]], dict[tuple[int, int], str]]:
    """The (role, text) turns of one dialogue of ``family`` (``a``: a liked thing of the synthetic slots) and its
    labelled (later, earlier) turn pairs; every other pair is unrelated."""
    broken = family in ("trait_broken", "bio_broken", "taste_flipped", "record_belief", "myth_free")
    lab = "conflicts_with" if broken else "unrelated"
    if family in ("trait_broken", "trait_kept", "bio_broken", "bio_kept"):
        said, br, kept = rng.choice(TRAITS if family.startswith("trait") else BIO)
        return [("user", _register(rng, said)), ("user", _register(rng, br if broken else kept))], {(1, 0): lab}
    if family in ("taste_flipped", "taste_kept"):
        if family == "taste_flipped" and rng.random() < 0.5:  # liked first, then "always has bored me"
            first = rng.choice(TASTE_LIKE).format(a=a, A=_cap(a))
            later = rng.choice(TASTE_HATE_ALWAYS).format(a=a, A=_cap(a))
        else:
            first = rng.choice(TASTE_HATE).format(a=a, A=_cap(a))
            later = rng.choice(TASTE_LIKE if broken else TASTE_KEPT).format(a=a, A=_cap(a))
        return [("user", _register(rng, first)), ("user", _register(rng, later))], {(1, 0): lab}
    if family in ("record_belief", "record_agreed"):
        belief, contra, agree = rng.choice(RECORDS)
        rec = contra if broken else agree
        if rng.random() < 0.5:  # the belief first, the record quoted after it
            return [("user", _register(rng, belief)), ("assistant", rec)], {(1, 0): lab}
        b = belief[:1].lower() + belief[1:] if not belief.startswith("I") else belief
        later = rng.choice(RECORD_LATER).format(b=b, B=_cap(b))
        return [("assistant", rec), ("user", _register(rng, later))], {(1, 0): lab}
    claim, ev = rng.choice(MYTHS if family == "myth_free" else TRUTHS)
    said = rng.choice(CLAIM).format(c=claim, C=_cap(claim))
    evid = rng.choice(EVIDENCE).format(e=ev[:1].lower() + ev[1:], E=ev)
    return [("user", _register(rng, said)), ("assistant", evid)], {(1, 0): lab}
