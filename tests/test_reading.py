"""Reading a statement (induction.reading): every pattern class has a sentence of its own, written for this
table in everyday wording and taken from no benchmark (LoCoMo, MemSyco, BEAM), and the regression cases below
keep what the relation gates read on the benchmarks they were found on."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import ModuleType

import pytest

from induction.reading import change, corrections, holder, instructions, negation, questions, responses, state
from induction.reading.change import continues, reverses
from induction.reading.corrections import corrects
from induction.reading.cues import CueSet
from induction.reading.holder import speaks_of_self, unprefixed
from induction.reading.instructions import STANDING_CLASSES, instructs, standing_instruction
from induction.reading.negation import negates
from induction.reading.state import holds_state, in_progress, may_replace

MODULES: tuple[ModuleType, ...] = (change, corrections, holder, instructions, negation, questions, responses, state)


def _one(f: Callable[[list[str]], bool]) -> Callable[[str], bool]:
    return lambda s: f([s])


def _strip(s: str) -> bool:
    return unprefixed(s) != s.strip()


def _not_state(s: str) -> bool:
    return not holds_state(s)


_standing = CueSet("standing instruction", STANDING_CLASSES, head="(?:", tail=")")

# (cue, class, sentence, what the public reading says of it, expected). One row per class, each sentence
# written here; the class must match it on its own and the public function must read it as expected.
CLASS_CASES: list[tuple[CueSet, str, str, Callable[[str], bool], bool]] = [
    (holder.HOLDER_PREFIX, "speaker label", "Grandma: I baked rye bread today.", _strip, True),
    (holder.SELF, "first person singular", "My bike has a flat tyre again.", speaks_of_self, True),
    (holder.SELF, "first person plural", "Our neighbours got a puppy.", speaks_of_self, True),
    (questions.QUESTION_START, "wh-question", "where did you leave the umbrella", _not_state, True),
    (questions.QUESTION_START, "yes-no question", "is the pharmacy still open", _not_state, True),
    (questions.QUESTION_START, "any-question", "any idea when the last bus leaves", _not_state, True),
    (questions.REQUEST, "imperative aimed at the speaker", "Bring me a coffee on your way back.", _not_state, True),
    (questions.ASKS, "plea for help", "I'd appreciate a hand moving the wardrobe on Saturday.", _not_state, True),
    (questions.ASKS, "wondering", "I was wondering whether the gym has a sauna.", _not_state, True),
    (questions.ASKS, "stated uncertainty", "I'm not sure which train gets me there faster.", _not_state, True),
    (responses.RESPONSE, "greeting", "Hi Tom, lovely weather for the market.", _not_state, True),
    (responses.RESPONSE, "welcoming an offer", "That'd be nice, thanks for offering.", _not_state, True),
    (responses.RESPONSE, "encouragement", "Don't worry about the deposit, it will work out.", _not_state, True),
    (responses.RESPONSE, "congratulation and good wishes", "Congrats on the new flat!", _not_state, True),
    (responses.RESPONSE, "addressing the listener", "You deserve a long holiday after that.", _not_state, True),
    (responses.RESPONSE, "evaluative remark", "That sounds lovely, enjoy the lake.", _not_state, True),
    (responses.RESPONSE, "thanks", "Thanks for lending me the ladder.", _not_state, True),
    (responses.RESPONSE, "acknowledging thanks", "No worries at all, happy to lend a hand with the move.", _not_state,
     True),
    (responses.RESPONSE, "reassurance", "I bet the kids loved the zoo.", _not_state, True),
    (responses.RESPONSE, "empathic must", "Moving house with a toddler must be hard.", _not_state, True),
    (responses.RESPONSE, "conjectured feeling of another", "The twins must adore that treehouse.", _not_state, True),
    (responses.SHARED_MEDIA, "image placeholder", "[photo: a birthday cake with seven candles]", _not_state, True),
    (responses.SHARED_MEDIA, "shared picture", "sent a photo of the new kitchen tiles", _not_state, True),
    (responses.COMPLIMENT, "compliment on the listener's thing", "By the way, your new haircut looks great.",
     _not_state, True),
    (responses.ANNOUNCEMENT, "news to share", "I've got some big news to share about the allotment.", _not_state, True),
    (responses.ANNOUNCEMENT, "offer to tell", "Let me fill you in on the weekend.", _not_state, True),
    (state.IN_PROGRESS, "attempt under way", "I'm trying to fix the dripping tap.", in_progress, True),
    (state.IN_PROGRESS, "difficulty", "I'm a bit stuck on the last crossword clue.", in_progress, True),
    (instructions.INSTRUCTION, "imperative verb", "Add a pinch of salt to the water.", instructs, True),
    (_standing, "adverb-led order", "From now on, keep your answers short.", standing_instruction, True),
    (_standing, "when-I-ask instruction", "Give me prices in euros when I ask about hotels.", standing_instruction, True),
    (change.REVERSAL, "contrast", "I liked the old gym, whereas this one feels cramped.", _one(reverses), True),
    (change.REVERSAL, "cessation", "I don't take sugar in my tea any more.", _one(reverses), True),
    (change.REVERSAL, "switch", "I switched to the night bus.", _one(reverses), True),
    (change.REVERSAL, "change of mind", "I changed my mind about the blue sofa.", _one(reverses), True),
    (change.REVERSAL, "giving up", "I gave up the piano last winter.", _one(reverses), True),
    (change.REVERSAL, "moved on", "I'm fed up with the long commute.", _one(reverses), True),
    (change.REVERSAL, "past habit", "I used to cycle to the office.", _one(reverses), True),
    (change.REVERSAL, "self-correction", "I know I said Friday; the plumber comes Thursday.", _one(reverses), True),
    (change.REVERSAL, "return", "I'm giving knitting another try this autumn.", _one(reverses), True),
    (change.REVERSAL, "preference or comparison", "I'd rather take the train to Leeds.", _one(reverses), True),
    (change.REVERSAL, "realisation or misfit", "Camping is just not for me.", _one(reverses), True),
    (change.MOVED_ON_CUES, "lost interest", "I've lost interest in crime dramas.", _one(reverses), True),
    (change.MOVED_ON_CUES, "weariness", "I'm sick of cooking every night.", _one(reverses), True),
    (change.CONTINUES, "persistence", "I still walk the dog before breakfast.", continues, True),
    (change.CONTINUES, "addition", "My sister plays the cello too.", continues, True),
    (change.CONTINUES, "agreement", "I completely agree with the new parking rules.", continues, True),
    # a concession or a "but" that asks is blanked: the sentence turns against nothing
    (change.CONCESSIVE, "concession to a difficulty", "The first week was exhausting, but I love the new job.",
     _one(reverses), False),
    (change.CONCESSIVE, "negated ease", "Learning the cello isn't always easy, but I love it.", _one(reverses), False),
    (change.BUT_ASKS, "but with a worry", "I planted the tomatoes, but I'm worried about the frost.",
     _one(reverses), False),
    (change.BUT_ASKS, "but with a wish to understand", "I booked the hotel, but I want to make sure it has parking.",
     _one(reverses), False),
    (change.BUT_ASKS, "but with a question", "I bought the flour, but which oven setting do I need.",
     _one(reverses), False),
    (corrections.CORRECTION, "correcting adverb", "Actually, the post office shuts at noon on Saturdays.", corrects, True),
    (corrections.CORRECTION, "myth", "That cold weather gives you a cold is a popular myth.", corrects, True),
    (corrections.CORRECTION, "negated truth", "That isn't quite right about the bus times.", corrects, True),
    (corrections.CORRECTION, "stated falsity", "The timetable on the website is outdated.", corrects, True),
    (corrections.CORRECTION, "reported evidence", "Surveys found most commuters prefer quieter carriages.", corrects, True),
    (corrections.CORRECTION, "debunking", "The idea that goldfish forget everything was debunked.", corrects, True),
    (corrections.CORRECTION, "attribution", "According to the council website, bins go out on Tuesday.", corrects, True),
    (negation.NEGATION, "not", "The heating is not working again.", negates, True),
    (negation.NEGATION, "never", "I never fly with budget airlines.", negates, True),
    (negation.NEGATION, "no longer", "I no longer drive to work.", negates, True),
    (negation.NEGATION, "aversion", "I avoid the high street on Saturdays.", negates, True),
    (negation.NEGATION, "stopping", "I quit the pub quiz team.", negates, True),
    (negation.NEGATION, "contracted not", "I don't eat red meat.", negates, True),
]


@pytest.mark.parametrize("cue,name,sentence,read,expected", CLASS_CASES,
                         ids=[f"{c[0].name}: {c[1]}" for c in CLASS_CASES])
def test_every_class_reads_its_own_sentence(cue: CueSet, name: str, sentence: str, read: Callable[[str], bool],
                                            expected: bool) -> None:
    assert cue.of(name).search(sentence), f"{cue.name} / {name} does not match {sentence!r}"
    assert read(sentence) is expected


def _cue_sets() -> list[CueSet]:
    found = [v for m in MODULES for v in vars(m).values() if isinstance(v, CueSet)]
    return list({id(c): c for c in found}.values()) + [_standing]


def test_no_pattern_class_is_left_without_a_sentence() -> None:
    covered = {(c[0].name, c[1]) for c in CLASS_CASES}
    every = {(c.name, n) for c in _cue_sets() for n in c.names()}
    assert every - covered == set()
    assert len(every) >= 50  # the check sees the cue sets (it can fail)


# The exceptions the classes carve out, each with a sentence of its own.
@pytest.mark.parametrize("read,sentence,expected", [
    (speaks_of_self, "The bakery closes early on Mondays.", False),
    (in_progress, "I'm planning a picnic by the river.", False),
    (instructs, "Test results were fine this time.", False),  # a noun before a finite verb, not an imperative
    (standing_instruction, "Never tried sushi, to be honest.", False),  # a clipped statement about oneself
    (_one(reverses), "I never gave up on the garden.", False),  # not giving up
    (_one(reverses), "Now I'm baking bread every Sunday.", False),  # "now" alone is progress, not a reversal
    (_one(reverses), "Walking the dog makes me realise how lucky I am.", False),  # a habitual realisation
    (_one(reverses), "I realised again what a good friend she is.", False),  # a renewed one
    (_one(reverses), "I've realised I'm happier without a car.", True),  # a realisation, once
    (_one(reverses), "The trip made me realise how much I need quiet weekends.", True),
    (continues, "I still like the flat, but I'd rather live nearer work.", False),  # it also turns against
    (corrects, "According to your message, the party starts at eight.", False),  # the person's own word
    (negates, "I'd never tried sushi before last night.", False),  # a first time, not a refusal
    (negates, "I can't wait for the concert.", False),  # emphasis
    (negates, "I couldn't be happier with the new flat.", False),  # a positive idiom
    (negates, "Not only did I paint the fence, I fixed the gate.", False),
    (negates, "I can't stop listening to that album.", False),
    (holds_state, "I moved to Leeds in March.", True),
    (holds_state, "", False),
])
def test_exceptions(read: Callable[[str], bool], sentence: str, expected: bool) -> None:
    assert read(sentence) is expected


def test_moved_on_is_one_list_for_the_extractor_and_the_reversal() -> None:
    from induction.offline import CHANGE
    for s in ("I've lost interest in crime dramas.", "I'm sick of cooking every night."):
        assert CHANGE.search(s) and reverses([s])
    assert all(re.compile(p, re.I).pattern in change.REVERSAL.pattern for p in change.MOVED_ON)


# ---- regression cases (moved from tests/test_rules.py; several come from benchmark rows they were found on)
@pytest.mark.parametrize("statement,ok", [
    ("assistant: Data in Transit: Use TLS/SSL encryption for all data transmitted over networks.", True),
    ("assistant: Check if the response is not ok and extract the error message.", True),
    ("assistant: Pilot Participation: Include Jessica in the pilot program.", True),
    ("Always keep a backup of the config.", True),
    ("assistant: Don't store passwords in plain text.", True),
    ("assistant: Research shows remote teams are less productive.", False),  # a noun before a finite verb
    ("Test coverage is 78% now.", False),
    ("Model Boreal was not the easiest candidate to introduce.", False),
    ("assistant: The error typically indicates a None value.", False),
    ("Independent testing found Atlas dropped numerical claims.", False)])
def test_instructs(statement: str, ok: bool) -> None:
    assert instructs(statement) is ok


CORRECTS_CASES = [
    ("assistant: Actually, the Great Wall is not visible from space with the naked eye.", True),
    ("assistant: That's a common misconception: bulls do not react to the colour red.", True),
    ("assistant: Studies show that cracking knuckles does not cause arthritis.", True),
    ("assistant: This is not the case in Flask 2.x.", True),
    ("assistant: According to the 2024 NIST guidance, SMS codes are a weak second factor.", True),
    ("assistant: According to your July 15 progress report, there has been a 10% improvement.", False),
    ("assistant: Scenario: You and Stephen are considering moving to a new city.", False),
    ("assistant: Error Handling: Specific error handling for HTTP 401 Unauthorized.", False),
    ("assistant: It is true that the library is popular.", False),
]


@pytest.mark.parametrize("statement,ok", CORRECTS_CASES)
def test_corrects(statement: str, ok: bool) -> None:
    assert corrects(statement) is ok


# (statement, holds state): questions and responses to someone else never supersede or get superseded.
HOLDS_STATE_CASES = [
    ("I switched to oat milk.", True),
    ("From now on, I'd rather watch horror films alone.", True),
    ("You know, reflecting on that event, I've decided I don't enjoy crowds.", True),
    ("I'm now looking for an online challenge about classic literature.", True),
    ("Wow, I finally finished my novel.", True),
    ("Joanna: I'm tempted to try dairy-free flavors now!", True),
    ("That was a great trip.", True),
    ("Audrey: How often are you able to go hiking now?", False),
    ("Got any favorite flavors for dairy-free desserts?", False),
    ("Have you always wanted a dog", False),
    ("Keep going and never give up!", False),
    ("Tim: Keep it up - you're gonna make a difference!", False),
    ("Don't be afraid to write and share, even if it's just with friends.", False),
    ("Glad you tried something new and it went well.", False),
    ("Nice, spotting pretty birds while hiking must be great.", False),
    ("Taking them on hikes must be awesome!", False),
    ("Your cats must love the new scratching post!", False),
    ("I must admit I love the new scratching post.", True),
    ("Definitely, keep me posted and let me know if you need any help.", False),
    ("I'm sure it was a memorable experience.", False),
    ("That sounds amazing!", False),
    ("Gina: Oof, that's tough, Jon.", False),
    ("Joanna: Hey Nate, long time no see!", False),
    ("Joanna: Yeah Nate, your cooking is amazing!", False),
    ("John: That'd be great, Maria!", False),
    ("Highlights of my trip were great.", True),
    # an announcement of news still to come says nothing yet
    ("I've been thinking about my plans again, and I have some updates I'd love to share!", False),
    ("I've got some exciting news to tell you.", False),
    ("Let me fill you in.", False),
    ("I have an update: I switched to tea.", True),
    ("I love sharing updates with my friends.", True),
    # a request for help or information asks; it states nothing to replace or dispute
    ("I'm not sure how to properly configure these variables in my Render.com deployment.", False),
    ("I'd appreciate any help you can provide in getting my weather app deployed.", False),
    ("I switched to Scrivener on May 5, and I'm wondering if this will help my drafts.", False),
    ("Can you help me plan the trip", False),
    ("I'm not a fan of crowds anymore.", True),
    ("I'm sure I prefer tea now.", True),
    # a shared photo shows something; it holds no state of its own
    ("Gina: shared an image: a photo of a clothing store with a variety of clothes on display", False),
    ("shared an image: a photography of a group of children making clay sculptures", False),
    ("[image: a dog on a beach]", False),
    ("I shared an image of my new store on my blog and love it.", True),
    ("I love taking photos of birds.", True),
    # a request to the other person
    ("Audrey: Take some pics and show me what you enjoy.", False),
    ("Send me the recipe when you can!", False),
    ("I take my dogs to the park to show them new trails.", True),
    # a line that introduces a pasted block claims nothing (BEAM: "And my JS chart code:" replaced
    # "I'm trying to integrate Chart.js v4.3.0 into my dashboard")
    ("And my JS chart code:", False),
    ("And here's a basic example of how I might set up my Chart.js pie chart:", False),
    ("My stack is: Flask and SQLite.", True),
    ("", False),
]


@pytest.mark.parametrize("statement,ok", HOLDS_STATE_CASES)
def test_holds_state(statement: str, ok: bool) -> None:
    assert holds_state(statement) is ok


@pytest.mark.parametrize("new, old, ok", [
    # a standing instruction gives way only to another instruction
    ("From now on, answer in French.", "Always answer in English when I ask about travel.", True),
    ("Given that I have to provide security best practices when discussing authentication features",
     "Always provide security best practices when I ask about authentication or authorization features.", False),
    ("Sure, let's proceed with measuring the metrics now.",
     "Always report exact performance metrics when I ask about site speed improvements.", False),
    # an instruction may replace a state (the user's new rule about their answers)
    ("Never suggest meat dishes when I ask about recipes.", "I love cooking steak.", True),
    # two tasks in progress do not replace each other; a state the task changes is replaced
    ("I'm trying to validate the area calculation of a triangular garden plot",
     "I'm trying to apply Heron's formula to find the area of a triangle", False),
    ("I'm kinda struggling with editing my drafts", "I'm trying to organize my essay draft better", False),
    ("I'm trying to switch from SQLite to PostgreSQL 15", "I'm using SQLite 3.39 as my database", True),
    # a first-person state is replaced by what the person says of themselves, not by a remark on a thing
    ("However, for the sake of keeping the app lightweight and under 2.5MB, this approach could be a starting point.",
     "I'm trying to keep my weather app under 2.5MB", False),
    ("Tea is my thing now.", "I drink coffee every morning.", True),
    ("The gym closed down last month.", "The gym opens at six.", True),
    # neither side may be a question or a response
    ("I switched to tea.", "I drink coffee every morning.", True),
    ("How often do you hike now?", "I hike every weekend.", False),
    ("I hike on Sundays now.", "Keep it up!", False),
])
def test_may_replace(new: str, old: str, ok: bool) -> None:
    assert may_replace(new, old) is ok


@pytest.mark.parametrize("turn,ok", [
    # a change of direction turns against something
    (["I've shifted my focus.", "I'm now really drawn to West African drumming."], True),
    (["I tried that playful approach, but it just didn't feel right for me."], True),
    (["I no longer enjoy jazz."], True),
    (["I'm actually more curious about Indian classical music theory now."], True),
    (["I really prefer techno now."], True),
    (["Lately I realized that theory isn't my forte."], True),
    # "now" / "lately" alone report progress on the same path (LoCoMo)
    (["Now I'm passionate about creating a safe, inviting place for people to grow."], False),
    (["Growing my customer base is the main focus right now."], False),
    (["We love painting together lately, especially nature-inspired ones."], False),
    (["I'm not giving up!", "I'm trying to juggle studying with my reading hobby."], False),
    (["After that book swap fiasco, I've given up on exchanging books entirely."], True),
    (["I haven't given up on my novel.", "I've never given up on it."], False),
    # taking back what one said earlier is a reversal even without a "but"
    (["I know I said I was uncomfortable sharing personal details.", "I now believe being open could help someone."], True),
    (["I decided to give podcasting another shot.", "It was so much more fun with a co-host."], True),
    (["After much contemplation, I've decided to step away from volunteering."], True),
    (["I've grown weary of those large community networking events."], True),
    (["I've been feeling a bit burned out on all the experimental indie films."], True),
    # a concessive "but" turns against a difficulty, not an earlier view
    (["It's been tough, but I'm living my true self.", "Dancing makes me so happy, and now I get to share that."], False),
    (["Finding self-acceptance was a long process, but now I'm ready to offer support."], False),
    (["It was hard to admit, but I no longer enjoy jazz."], True),
    # a "but" that opens a request or a worry turns against nothing (BEAM)
    (["I've set up Flask-Login, but I'm not sure how to handle sessions."], False),
    (["I agreed to stop at 10 PM, but how can I make sure I stick to this schedule?"], False),
    (["I'm using Bootstrap 5.3.0, but I want to make sure the navbar is accessible."], False),
    (["I tried fusion events, but they felt overproduced."], True),
    (["I'm not sure how to say it, but I no longer enjoy jazz."], True),
    ([], False),
])
def test_reverses(turn: list[str], ok: bool) -> None:
    assert reverses(turn) is ok


@pytest.mark.parametrize("statement,ok", [
    ("Still can't seem to find any dog-friendly spots to rent.", True),
    ("Now I want to help people go through it too.", True),
    ("I totally agree that we should fight for more money for our schools.", True),
    ("I also love baking.", True),
    ("I still like jazz, but I prefer techno now.", False),  # turns against the old view
    ("I switched to tea.", False),
    ("I love painting lately.", False),
])
def test_continues(statement: str, ok: bool) -> None:
    assert continues(statement) is ok


def test_acknowledging_thanks_is_a_formula_not_a_state() -> None:
    """Two replies to thanks hold no state (and so never dispute each other); the same words opening a
    statement about oneself still do."""
    assert not holds_state("Not a problem at all, glad I could help!")
    assert not holds_state("Anytime!")
    assert holds_state("No problem eating dairy these days.")
    assert holds_state("Anytime I go cycling I bring a spare tube.")
