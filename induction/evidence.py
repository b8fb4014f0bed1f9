"""Outside evidence in a dialogue: which assistant sentences and document excerpts become facts.

An assistant turn is mostly conversation ("I understand", "That gives you a clear direction"); a few
sentences carry evidence ("An independent evaluation found that Boreal preserved figures more
reliably"), a correction ("Vomitoriums were actually the entrances of stadiums") or a recommendation.
Only those become facts, held by the assistant (or by a ``document`` for the lines of a retrieved
``<information>`` block, with the source header as a qualifier), never by the user: they are
evidence the user's own beliefs can conflict with (paper §3.3), not the user's state.

Selection is a small, deterministic score per sentence (evidence cue words, numbers and proper
names count for it; addressing the user, hedging and chit-chat count against it) with a per-turn cap,
so a long assistant answer cannot flood the ontology.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_INFO = re.compile(r"<information>(.*?)(?:</information>|$)", re.S | re.I)
_TAGS = re.compile(r"<(search|information)>.*?(?:</\1>|$)", re.S | re.I)
_HEADER = re.compile(r"^\s*\[([^\]\n]{2,120})\]\s*$", re.M)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")

EVIDENCE_CUE = re.compile(
    r"\b(?:found|finds|showed|shows|shown|demonstrat\w+|stud(?:y|ies)|research\w*|evidence|according to|report(?:s|ed)?|"
    r"reviewers?|tested|trial(?:ed|s)?|pilot|evaluation|benchmark\w*|measured|survey\w*|data|percent|"
    r"reliab\w+|accura\w+|fewer|faster|slower|cheaper|costlier|better|worse|outperform\w*|higher|lower|"
    r"recommend\w*|myth|misconception|actually|in fact|contrary|(?:is|are|was|were) not|incorrect|correct|true|false|"
    r"caus(?:e|es|ed)|risk\w*|safe(?:r|ty)?|effective\w*|required|requires|supports?|lacks?|limited|"
    r"released|announced|documented|consensus|scientists?|experts?|historians?)\b", re.I)
CHATTER = re.compile(
    r"^\s*(?:I understand|I can see|I see|I'm glad|I am glad|I hear|It sounds like|It seems like|That's|That is|That gives|"
    r"That makes|That revision|That history|That threshold|That combination|You now|You can|Got it|Great|Absolutely|Sure|"
    r"Of course|Certainly|It's (?:completely |totally )?understandable|What a|Thanks?|Thank you|Happy to|Let me|Here's|Here is)\b",
    re.I)
YOU = re.compile(r"\b(?:you|your|you're|yours|yourself)\b", re.I)
HEDGE = re.compile(r"\b(?:might|may|perhaps|could|consider|wonder|maybe)\b", re.I)
_PROPER = re.compile(r"(?<=[a-z,;:] )[A-Z][a-zA-Z]+")
# A record of the user's own that the assistant quotes ("The receipt you scanned lists a one-year warranty", "the
# invoice you emailed says 3 June", "the label in your photo says"): the strongest evidence there is about the
# user's arrangements, yet it names no study and addresses the user, so it scored 0 (issue 44: a user's belief
# about their own booking, dose or deadline against the record they shared was never a fact). The "you" of the
# record's phrase is no address to the user.
RECORD = re.compile(
    r"\b(?:the|your|that)\s+(?:[\w'\-]+\s+){0,3}?(?:you(?:'ve)?|you have)\s+(?:just\s+)?(?:sent|shared|forwarded|uploaded|"
    r"pasted|attached|scanned|photographed|emailed|linked|posted|gave me)\b|\bin your (?:photo|screenshot|scan|upload|attachment)\b"
    r"|\byour (?:[\w\-]+\s+){0,2}?(?:booking|ticket|receipt|invoice|lease|contract|prescription|confirmation|itinerary|"
    r"statement|policy|letter|payslip|timetable)\b", re.I)
REPORTS = re.compile(r"\b(?:says?|said|shows?|showed|states?|stated|lists?|listed|puts?|sets?|gives?|reads|confirms?|"
                     r"mentions?|specifies|has)\b", re.I)
_NUMBER = re.compile(r"\d")


@dataclass(frozen=True)
class EvidenceSpan:
    """A sentence of an assistant turn chosen as evidence: its span in the turn, holder and source."""

    start: int
    end: int
    holder: str
    source: str | None
    score: float


def evidence_score(sentence: str) -> float:
    """How much ``sentence`` reads as a checkable claim rather than conversation (higher = more)."""
    s = sentence.strip()
    if not s or s.endswith("?") or CHATTER.match(s):
        return 0.0
    words = _WORD.findall(s)
    if len(words) < 6:
        return 0.0
    if not s.endswith((".", "!")) and sum(w[0].isupper() for w in words) * 2 >= len(words):
        return 0.0  # a heading ("Phase 5: Final Adjustments, Testing, and Deployment"), not a claim
    score = 1.5 * min(3, len(EVIDENCE_CUE.findall(s))) + 0.5 * min(4, len(_PROPER.findall(s)))
    score += 0.5 if _NUMBER.search(s) else 0.0
    record = RECORD.search(s)
    if record and REPORTS.search(s, record.end()):
        score += 3.0
        s = s[:record.start()] + s[record.end():]
    score -= 0.75 * min(3, len(YOU.findall(s))) + 0.5 * min(2, len(HEDGE.findall(s)))
    return score


def document_blocks(text: str) -> list[tuple[int, int, str | None]]:
    """(start, end, source header) of each excerpt inside ``<information>`` blocks of a turn."""
    out: list[tuple[int, int, str | None]] = []
    for block in _INFO.finditer(text):
        b0, body = block.start(1), block.group(1)
        heads = list(_HEADER.finditer(body))
        if not heads:
            out.append((b0, b0 + len(body), None))
            continue
        for i, h in enumerate(heads):
            end = heads[i + 1].start() if i + 1 < len(heads) else len(body)
            out.append((b0 + h.end(), b0 + end, h.group(1).strip()))
    return out


def select_evidence(text: str, spans: list[tuple[int, int]], holder: str, max_plain: int, max_document: int,
                    min_score: float, fallback: bool = False) -> list[EvidenceSpan]:
    """The evidence sentences of one assistant turn, in text order: document excerpts (holder
    ``document``, up to ``max_document``) and the assistant's own best sentences (up to ``max_plain``)
    outside any ``<search>``/``<information>`` markup. With ``fallback``, a turn where nothing reaches
    ``min_score`` still yields its best sentence that is not chatter (score above 0): the answer a
    later question asks about ("how did I fix the CSRF error?") is findable only through a fact of
    its own turn, and a long answer's best line usually names what it is about."""
    blocks = document_blocks(text)
    tagged = [(m.start(), m.end()) for m in _TAGS.finditer(text)]
    doc: list[EvidenceSpan] = []
    own: list[EvidenceSpan] = []
    for s, e in spans:
        sent = text[s:e]
        src = next((b for b in blocks if b[0] <= s < b[1]), None)
        if src is not None:
            sc = evidence_score(sent) + 1.0  # a retrieved excerpt is evidence by construction
            if sc >= min_score:
                doc.append(EvidenceSpan(s, e, "document", src[2], sc))
            continue
        if any(a <= s < b for a, b in tagged):
            continue  # the search query itself, or markup
        sc = evidence_score(sent)
        if sc >= min_score or (fallback and sc > 0):
            own.append(EvidenceSpan(s, e, holder, None, sc))
    if fallback and max_plain > 0:
        strong = [x for x in own if x.score >= min_score]
        own = strong if strong or doc else sorted(own, key=lambda x: (-x.score, x.start))[:1]
    keep = sorted(doc, key=lambda x: -x.score)[:max_document] + sorted(own, key=lambda x: -x.score)[:max_plain]
    return sorted(keep, key=lambda x: x.start)
