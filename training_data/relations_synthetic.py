"""Templated synthetic dialogues with known relations, for the relation model.

Each turn is one planted sentence (so the offline extractor yields one fact per turn and the turn pair
gives the label). Families, all from the issue: an update stated directly; an update implied by a
changed circumstance; an experience later outgrown; the user against outside evidence (the assistant
or a retrieved document); a scoped preference next to a different situation; another person's
preference; a restatement (duplicate); an old preference restated after it was replaced (must not
flip the newer one back); unrelated additions on the same topic; a person's own later report that
contradicts a stated constraint without "not" (doing it, without trouble) beside its look-alike that
respects the constraint; a claim about the world against outside evidence in free phrasing beside a true
claim the evidence builds on. Fillers add ordinary chatter. No sentence is taken from a benchmark or from
the shipped example history.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from induction.session import Session
from training_data.relations_conflicts import CONFLICT_FAMILIES, conflict_turns
from training_data.relations_lookalike import LOOKALIKE_FAMILIES, lookalike_turns
from training_data.relations_people import PEOPLE_FAMILIES, people_turns

# (old, new) pairs of things a person can like; the same slot fills every family.
PAIRS: tuple[tuple[str, str], ...] = (
    ("jazz", "techno"), ("running", "swimming"), ("coffee", "green tea"), ("city breaks", "hiking trips"),
    ("sci-fi novels", "history books"), ("Python", "Rust"), ("morning workouts", "evening workouts"),
    ("spicy food", "mild food"), ("iPhones", "Android phones"), ("crime dramas", "documentaries"),
    ("beach holidays", "mountain cabins"), ("working from home", "working at the office"), ("cats", "dogs"),
    ("yoga", "weightlifting"), ("vinyl records", "streaming playlists"), ("steak dinners", "plant-based meals"),
    ("early starts", "slow mornings"), ("big parties", "quiet dinners"), ("road cycling", "trail running"),
    ("oil painting", "watercolours"), ("video games", "board games"), ("podcasts", "audiobooks"),
    ("camping", "boutique hotels"), ("classical piano", "jazz guitar"), ("sushi", "Italian food"),
    ("pop music", "folk music"), ("fantasy films", "romantic comedies"), ("tennis", "padel"),
    ("espresso", "filter coffee"), ("gardening", "pottery"), ("rock climbing", "bouldering"),
)
TASKS = ("summarizing finance reports", "tracking team projects", "transcribing interviews", "editing photos",
         "managing invoices", "planning trips", "drafting contracts", "analyzing survey data")
TOOLS = ("Atlas", "Boreal", "Cygnus", "Delta", "Ember", "Falcon", "Granite", "Helix")
SCOPES = ("when I travel for work", "on weekdays", "with my kids", "for client meetings", "when I'm alone",
          "in the winter", "at the office", "on long flights")
OTHERS = ("My sister", "My husband", "My best friend", "My boss", "My son", "My roommate")
FILLERS = ("We had a long week and the weather was grey most days.", "The neighbours finally finished their renovation.",
           "My phone battery has been dying quickly lately.", "Traffic on the way home was terrible yesterday.",
           "I still need to answer a pile of emails from the weekend.", "The new cafe near the station opened this month.")

LIKE = ("I really love {a}.", "{A} is my favourite thing to do in my free time.", "I'm a huge fan of {a}.",
        "I always pick {a} when I get the chance.", "Honestly, I enjoy {a} more than almost anything.")
UPDATE = ("I no longer enjoy {a}; these days I prefer {b}.", "I've switched from {a} to {b} completely.",
          "Lately I'm much more into {b} than {a}.", "I've lost interest in {a}, and {b} is what I go for now.",
          "I'm not into {a} anymore, I've moved on to {b}.", "I gave up {a} this year and replaced it with {b}.")
IMPLIED = ("My doctor told me to stop {a} after the knee surgery, so I'm sticking with {b}.",
           "Since the move to the new city, {b} fits my life far better than {a} ever did.",
           "With the new job my schedule only leaves room for {b}.",
           "After the baby arrived, {b} is the only thing that works for us.")
EXPERIENCE = ("Last year I went to a {a} event and it was amazing.", "I spent the whole summer of 2019 on {a} and loved it.",
              "Back in college I tried {a} for the first time and had a blast.")
OUTGROWN = ("Honestly {a} doesn't excite me anymore; I'm drawn to {b} these days.",
            "That phase is over, {a} feels like a chore now and I'd rather do {b}.",
            "I've grown out of {a}; {b} is what I look forward to now.")
USER_TOOL = ("I think {x} is the most reliable option for {t}.", "I have a soft spot for {x} when it comes to {t}.",
             "I keep coming back to {x} for {t} because it feels familiar.")
EVIDENCE = ("An independent evaluation found that {y} was far more reliable than {x} for {t}.",
            "Recent research shows that {y} outperformed {x} on {t} in two separate trials.",
            "According to the 2025 benchmark, {x} made three times more errors than {y} on {t}.")
SUPPORT = ("Several reviewers reported that {x} was faster to configure than the alternatives.",
           "The documentation notes that {x} has a cleaner interface and a shorter setup.")
SCOPED = ("I prefer {a} {s}.", "{S}, I always go for {a}.")
OTHER_SITUATION = ("This weekend I'm planning a trip with friends and we want {b}.",
                   "For the family reunion we are organizing {b} for everyone.")
OTHER_PERSON = ("{O} loves {a}.", "{O} is obsessed with {a} lately.")
SELF_CONTRA = ("I can't stand {a}.", "I don't really care for {a}.")
RESTATE = ("{A} is still one of my favourite things.", "I still really love {a}.")
OLD_RESTATED = ("I used to love {a} back in college.", "Back then I was really into {a}.")
ADD = ("I also enjoy {c}.", "Besides that, I like {c} too.")

# A person's own later statement that contradicts a stated constraint without "not"/"never": doing the very
# thing, without trouble. And its look-alike: a later report that respects the constraint (unrelated).
LIMITS = ("shellfish", "gluten", "dairy", "strawberries", "sesame", "eggs", "soy", "kiwi", "almonds", "mushrooms")
LIMIT_SAID = ("I'm allergic to {x}, please remember that.", "I can't have {x} at all, it makes me really sick.",
              "Just so you know, I react badly to {x}.", "{X} is completely off limits for me, doctor's orders.",
              "I have a pretty serious intolerance to {x}.", "Heads up: my body can't handle {x}.")
LIMIT_BROKEN = ("Had food with loads of {x} at a wedding on Saturday and I was perfectly fine.",
                "I ate {x} three days in a row this week, no reaction at all.",
                "Tried a dish full of {x} at my cousin's place and it didn't bother me one bit.",
                "Funny thing, I've been eating {x} every lunch lately without any problems.",
                "Went to a {x} tasting yesterday and felt great afterwards.",
                "My aunt made her {x} special and I had two helpings, felt totally okay.")
LIMIT_KEPT = ("At the wedding I asked for the {x}-free menu and the chef was lovely about it.",
              "I skipped the {x} dishes at the buffet and filled up on salad.",
              "I found a bakery that makes everything without {x}, which is a relief.",
              "I checked every label for {x} at the supermarket today.",
              "My cousin cooked a special meal that left out the {x} for me.")
MOVES = ("running", "heavy lifting", "skiing", "long bike rides", "climbing", "football")
MOVE_SAID = ("My back is wrecked, so {x} is out of the question for me.", "The physio banned {x} until my knee heals.",
             "I can't do {x} anymore because of my hip.")
MOVE_BROKEN = ("I did {x} three times this week and my body felt great.", "Spent Sunday doing {x} for hours, felt fine after.",
               "Went back to {x} with friends yesterday, no pain whatsoever.")
MOVE_KEPT = ("I swapped {x} for gentle swimming this month.", "My friends went {x} and I cheered from the café.",
             "I've been doing the physio's stretches instead of {x}.")
# A person's claim about the world, and outside evidence against it in free phrasing (no "actually", no
# "studies show" needed); and a true claim the evidence builds on (unrelated).
MYTHS = (("bats are completely blind", "Bats can see fairly well, and many species also navigate by echolocation."),
         ("goldfish forget everything after three seconds", "Goldfish trained in experiments remembered feeding cues for months."),
         ("lightning never strikes the same spot twice", "Tall towers get hit by lightning dozens of times every year."),
         ("people only use ten percent of their brains", "Brain scans show activity across nearly every region of the brain."),
         ("bulls charge because the cape is red", "Bulls can't tell red from green; the cape's movement is what provokes them."),
         ("sugar makes children hyperactive", "Controlled trials found no change in children's behaviour after they ate sugar."),
         ("cracking your knuckles causes arthritis", "Long-term comparisons found no more arthritis in people who crack their knuckles."),
         ("most body heat escapes through the head", "The head loses heat at about the same rate as any other uncovered skin."),
         ("Napoleon was unusually short", "Records put Napoleon at about average height for a Frenchman of his era."),
         ("camels store water in their humps", "A camel's humps hold fat, which it burns for energy on long treks."),
         ("ostriches bury their heads in the sand", "Zoologists have never observed an ostrich hiding its head in sand."),
         ("the tongue has separate zones for each taste", "Taste receptors for every basic taste are spread over the whole tongue."))
TRUTHS = (("octopuses have three hearts", "Two of an octopus's hearts pump blood through the gills and one through the body."),
          ("honey can keep for decades", "Sealed jars of honey have stayed edible for a very long time."),
          ("Venus spins in the opposite direction to Earth", "On Venus the sun rises in the west because of that backwards spin."),
          ("sharks existed before trees", "Shark fossils are older than the earliest known forests."))
CLAIM_SAID = ("Fun fact I love sharing: {c}.", "My grandpa always told me {c}, and I believe it.", "I've always thought {c}.",
              "I read ages ago that {c}, and it stuck with me.", "Pretty sure {c}, everybody knows that.")
EVIDENCE_SAID = ("{E}", "Researchers who looked into it report that {e}", "Field observations show that {e}",
                 "From what has been measured, {e}")


@dataclass(frozen=True)
class SyntheticDialogue:
    session: Session
    relations: dict[tuple[int, int], str]  # (later turn, earlier turn) -> label; other pairs are unrelated
    family: str


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _fill(tpl: str, **kw: str) -> str:
    low = {k.lower(): v for k, v in kw.items()}
    up = {k.upper(): _cap(v) for k, v in kw.items()}
    return tpl.format(**low, **up)


def make_dialogue(rng: random.Random, n: int, family: str) -> SyntheticDialogue:
    a, b = rng.choice(PAIRS)
    c = rng.choice([p for p in PAIRS if a not in p])[rng.randrange(2)]
    turns: list[tuple[str, str]] = []
    rel: dict[tuple[int, int], str] = {}

    def say(role: str, text: str) -> int:
        if rng.random() < 0.35:
            turns.append(("user" if role != "user" else "assistant",
                          rng.choice(FILLERS) if role != "user" else "I understand, thanks for sharing."))
        turns.append((role, text))
        return len(turns) - 1

    if family == "direct_update":
        i = say("user", _fill(rng.choice(LIKE), a=a))
        j = say("user", _fill(rng.choice(UPDATE), a=a, b=b))
        rel[(j, i)] = "supersedes"
    elif family == "implied_update":
        i = say("user", _fill(rng.choice(LIKE), a=a))
        j = say("user", _fill(rng.choice(IMPLIED), a=a, b=b))
        rel[(j, i)] = "supersedes"
    elif family == "experience_outgrown":
        i = say("user", _fill(rng.choice(EXPERIENCE), a=a))
        j = say("user", _fill(rng.choice(OUTGROWN), a=a, b=b))
        rel[(j, i)] = "supersedes"
    elif family in ("evidence_conflict", "evidence_first"):
        x, y = rng.sample(TOOLS, 2)
        t = rng.choice(TASKS)
        ev = _fill(rng.choice(EVIDENCE), x=x, y=y, t=t)
        ev_turn = ("assistant", ev) if rng.random() < 0.5 else (
            "assistant", f"<information>\n[{rng.choice(['Independent evaluation', 'Pilot report', 'Procurement summary'])}, 2025]\n{ev}\n</information>")
        sup = ("assistant", _fill(rng.choice(SUPPORT), x=x))
        if family == "evidence_first":
            i = say(*ev_turn)
            s = say(*sup)
            j = say("user", _fill(rng.choice(USER_TOOL), x=x, t=t))
            rel[(j, i)] = "conflicts_with"
            rel[(j, s)] = "unrelated"
        else:
            i = say("user", _fill(rng.choice(USER_TOOL), x=x, t=t))
            j = say(*ev_turn)
            rel[(j, i)] = "conflicts_with"
            s = say(*sup)
            rel[(s, i)] = "unrelated"
    elif family == "scoped":
        scope = rng.choice(SCOPES)
        say("user", _fill(rng.choice(SCOPED), a=a, s=scope))
        say("user", _fill(rng.choice(OTHER_SITUATION), b=b))
    elif family == "other_person":
        say("user", _fill(rng.choice(OTHER_PERSON), a=a, o=rng.choice(OTHERS)))
        say("user", _fill(rng.choice(SELF_CONTRA), a=a))
    elif family == "restated":
        i = say("user", _fill(rng.choice(LIKE), a=a))
        j = say("user", _fill(rng.choice(RESTATE), a=a))
        rel[(j, i)] = "duplicate"
    elif family == "old_restated":
        i = say("user", _fill(rng.choice(LIKE), a=a))
        j = say("user", _fill(rng.choice(UPDATE), a=a, b=b))
        k = say("user", _fill(rng.choice(OLD_RESTATED), a=a))
        rel[(j, i)] = "supersedes"
        rel[(k, j)] = "unrelated"
    elif family in ("self_contradiction", "self_consistent"):
        food = rng.random() < 0.65
        x = rng.choice(LIMITS if food else MOVES)
        i = say("user", _fill(rng.choice(LIMIT_SAID if food else MOVE_SAID), x=x))
        if rng.random() < 0.5:
            say("user", _fill(rng.choice(LIKE), a=a))
        if family == "self_contradiction":
            j = say("user", _fill(rng.choice(LIMIT_BROKEN if food else MOVE_BROKEN), x=x))
            rel[(j, i)] = "conflicts_with"
        else:
            say("user", _fill(rng.choice(LIMIT_KEPT if food else MOVE_KEPT), x=x))
    elif family in ("belief_evidence", "belief_agreed"):
        claim, ev = rng.choice(MYTHS if family == "belief_evidence" else TRUTHS)
        i = say("user", _fill(rng.choice(CLAIM_SAID), c=claim))
        j = say("assistant", rng.choice(EVIDENCE_SAID).replace("{E}", ev).replace("{e}", ev[:1].lower() + ev[1:]))
        if family == "belief_evidence":
            rel[(j, i)] = "conflicts_with"
    elif family in LOOKALIKE_FAMILIES:  # same topic, no relation (and two contrasting changes)
        texts, labels = lookalike_turns(rng, family, a, b)
        idx = [say("user", t) for t in texts]
        rel.update({(idx[j], idx[i]): lab for (j, i), lab in labels.items()})
    elif family in PEOPLE_FAMILIES:  # other people's states, reported what-ifs, kept constraints, questions
        texts, labels = people_turns(rng, family, a, b)
        idx = [say("user", t) for t in texts]
        rel.update({(idx[j], idx[i]): lab for (j, i), lab in labels.items()})
    elif family in CONFLICT_FAMILIES:  # conflicts in natural wording, each beside its look-alike
        roles, labels = conflict_turns(rng, family, a)
        idx = [say(r, t) for r, t in roles]
        rel.update({(idx[j], idx[i]): lab for (j, i), lab in labels.items()})
    else:  # additive
        say("user", _fill(rng.choice(LIKE), a=a))
        say("user", _fill(rng.choice(ADD), c=c))
    sess = Session.model_validate({"session_id": f"syn-{n}", "user_id": f"syn-{n}",
                                   "turns": [{"role": r, "text": t} for r, t in turns]})
    return SyntheticDialogue(session=sess, relations=rel, family=family)


FAMILIES = ("direct_update", "implied_update", "experience_outgrown", "evidence_conflict", "evidence_first", "scoped",
            "other_person", "restated", "old_restated", "additive", "self_contradiction", "self_consistent",
            "belief_evidence", "belief_agreed")


def synthetic_dialogues(n: int, seed: int, lookalikes: bool = False, people: int = 0) -> list[SyntheticDialogue]:
    """``n`` dialogues, the families in turn; with ``lookalikes`` the look-alike families of
    training_data/relations_lookalike.py and the conflict families of training_data/relations_conflicts.py join them
    (off: the dialogues the shipped logistic model was trained on). ``people`` more dialogues of the families of
    training_data/relations_people.py follow, from a generator of their own (the first ``n`` stay as they were)."""
    rng = random.Random(seed)
    fams = FAMILIES + LOOKALIKE_FAMILIES + CONFLICT_FAMILIES if lookalikes else FAMILIES
    out = [make_dialogue(rng, k, fams[k % len(fams)]) for k in range(n)]
    prng = random.Random(f"people:{seed}")
    return out + [make_dialogue(prng, n + k, PEOPLE_FAMILIES[k % len(PEOPLE_FAMILIES)]) for k in range(people)]
