"""Secrets never stored: credentials and payment data are cut out of a session before anything else sees it.

The ingestion pipeline (induction/pipeline.py) calls :func:`redact_session` first: the content hash,
the extractor (offline or an LLM), the stored turns and every fact quote are built from the redacted
text, so a secret said in a conversation reaches no store, no model prompt, no log and no response.
The report says what was removed as counts per kind, never the value.

Built-in kinds (each can be switched off; extra patterns come from the typed config):

- ``api_key``: provider key shapes (OpenAI/Anthropic ``sk-…``, GitHub ``ghp_/gho_/ghu_/ghs_/ghr_…`` and
  ``github_pat_…``, AWS ``AKIA…/ASIA…``, Slack ``xox?-…``, Google ``AIza…``) and any value after "api key",
  "secret" or "token" + is/:/=.
- ``bearer``: ``Bearer <token>`` and JSON Web Tokens.
- ``password``: the value after password/passwd/passcode/pin + is/:/= (the word itself stays, so the
  memory can still say "has a password for X").
- ``card``: 13–19 digit numbers (spaces or dashes allowed) that pass the Luhn check.
- ``iban``: IBANs that pass the ISO 13616 mod-97 check.
- ``bank_account``: digits after "account number", "acct", "routing number", "sort code".

Matches become ``[REDACTED:<kind>]``; overlapping matches are merged (the earliest, then longest, wins).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graph.edits import AttachFact, EditBatch
from induction.session import Session

BuiltinKind = Literal["api_key", "bearer", "password", "card", "iban", "bank_account"]
BUILTIN_KINDS: tuple[BuiltinKind, ...] = ("api_key", "bearer", "password", "card", "iban", "bank_account")


class RedactionPattern(BaseModel):
    """An extra pattern: every match (or its ``group``) is replaced by ``[REDACTED:<kind>]``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: str = Field(min_length=1, max_length=40, pattern=r"^[a-z0-9_]+$", description="Label shown in reports.")
    regex: str = Field(min_length=1, description="Python regular expression (case-insensitive).")
    group: int = Field(default=0, ge=0, description="Which group is the secret (0 = the whole match).")

    @field_validator("regex")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as e:
            raise ValueError(f"not a valid regular expression: {e}") from None
        return v


class RedactConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = Field(default=True, description="Redact secrets from sessions before they are stored or extracted.")
    kinds: tuple[BuiltinKind, ...] = Field(default=BUILTIN_KINDS, description="Built-in kinds to redact.")
    extra: tuple[RedactionPattern, ...] = Field(default=(), description="Additional patterns (e.g. internal ids).")


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum every payment card number satisfies.

    >>> luhn_ok("4111111111111111"), luhn_ok("4111111111111112")
    (True, False)
    """
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(text: str) -> bool:
    """ISO 13616 mod-97 check.

    >>> iban_ok("DE89 3704 0044 0532 0130 00"), iban_ok("DE89 3704 0044 0532 0130 01")
    (True, False)
    """
    s = re.sub(r"\s", "", text).upper()
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{11,30}", s):
        return False
    moved = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


# the value: a quoted string, or the next word without its closing punctuation
_VALUE = r"(\"[^\"\n]{1,100}\"|'[^'\n]{1,100}'|[^\s\"',;]+?)(?=[.,;!?)\]]*(?:\s|$))"
_IS = r"\s*(?:\bis\b|\bwas\b|\bare\b|:|=)\s*"
_ABOUT = r"(?:\s+(?:for|to|of|on|at)\b[^.:=\n]{0,40}?)?"  # "password for the wifi at home is …"

# (kind, regex, group, check on the matched group)
_BUILTIN: list[tuple[str, str, int, Callable[[str], bool] | None]] = [
    ("api_key", r"\b(?:sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
                r"|(?:AKIA|ASIA)[A-Z0-9]{16}|xox[abprs]-[A-Za-z0-9\-]{10,}|AIza[0-9A-Za-z_\-]{35})", 0, None),
    ("api_key", r"\b(?:api[\s_-]?key|secret(?:[\s_-]?key)?|access[\s_-]?token|auth[\s_-]?token|token)" + _ABOUT + _IS
     + _VALUE,
     1, lambda v: len(v) >= 8 and any(c.isdigit() for c in v)),
    ("bearer", r"\bbearer\s+([A-Za-z0-9\-._~+/]{8,}=*)", 1, None),
    ("bearer", r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", 0, None),
    ("password", r"\b(?:password|passwd|passphrase|passcode|pin(?:\s+code)?)" + _ABOUT + _IS + _VALUE, 1,
     lambda v: v.lower() not in {"is", "was", "a", "the", "my", "and", "or", "to", "for", "it"}),
    ("card", r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])", 0, lambda v: luhn_ok(re.sub(r"\D", "", v))),
    ("iban", r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}\b", 0, iban_ok),
    ("bank_account", r"\b(?:account\s*(?:number|no\.?|#)|acct\.?|routing\s*(?:number|no\.?)|"
                     r"sort\s*code|bsb)" + r"\s*(?:\bis\b|:|=|#)?\s*" + r"(\d[\d -]{4,}\d)", 1, None),
]


@lru_cache(maxsize=32)
def _compiled(cfg: RedactConfig) -> list[tuple[str, re.Pattern[str], int, Callable[[str], bool] | None]]:
    # IBAN and key shapes are case-sensitive on purpose (upper-case letters are part of the shape)
    sensitive = {"iban"}
    out: list[tuple[str, re.Pattern[str], int, Callable[[str], bool] | None]] = [
        (k, re.compile(rx, 0 if k in sensitive or g == 0 and k == "api_key" else re.IGNORECASE), g, chk)
        for k, rx, g, chk in _BUILTIN if k in cfg.kinds]
    out += [(p.kind, re.compile(p.regex, re.IGNORECASE), p.group, None) for p in cfg.extra]
    return out


def redact_text(text: str, cfg: RedactConfig | None = None) -> tuple[str, dict[str, int]]:
    """``text`` with every secret replaced, and how many of each kind were replaced."""
    cfg = cfg or RedactConfig()
    if not cfg.enabled:
        return text, {}
    spans: list[tuple[int, int, str]] = []
    for kind, rx, group, check in _compiled(cfg):
        for m in rx.finditer(text):
            g = group if group <= (rx.groups or 0) else 0
            start, end = m.span(g)
            if start < 0 or end <= start or (check is not None and not check(m.group(g))):
                continue
            spans.append((start, end, kind))
    if not spans:
        return text, {}
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    out: list[str] = []
    counts: dict[str, int] = {}
    pos = 0
    for start, end, kind in spans:
        if start < pos:  # overlaps a secret already cut out
            continue
        out.append(text[pos:start])
        out.append(f"[REDACTED:{kind}]")
        counts[kind] = counts.get(kind, 0) + 1
        pos = end
    out.append(text[pos:])
    return "".join(out), counts


def merge_counts(*counts: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for k, n in c.items():
            out[k] = out.get(k, 0) + n
    return dict(sorted(out.items()))


def redact_session(session: Session, cfg: RedactConfig | None = None) -> tuple[Session, dict[str, int]]:
    """The session with every turn's text redacted (the same object when nothing was found)."""
    turns, found = [], []
    for t in session.turns:
        text, counts = redact_text(t.text, cfg)
        turns.append(t if not counts else t.model_copy(update={"text": text}))
        found.append(counts)
    total = merge_counts(*found)
    return (session.model_copy(update={"turns": tuple(turns)}) if total else session), total


def redact_batch(batch: EditBatch, cfg: RedactConfig | None = None) -> tuple[EditBatch, dict[str, int]]:
    """An explicit edit batch (``POST /edits``) with its turns' texts and its facts' statements and
    evidence redacted: the other write path, held to the same rule."""
    found: list[dict[str, int]] = []

    def clean(text: str) -> str:
        out, counts = redact_text(text, cfg)
        found.append(counts)
        return out

    turns = [t.model_copy(update={"text": clean(t.text)}) for t in batch.turns]
    edits = [e.model_copy(update={"fact": e.fact.model_copy(update={"statement": clean(e.fact.statement),
                                                                   "evidence": clean(e.fact.evidence)})})
             if isinstance(e, AttachFact) else e for e in batch.edits]
    total = merge_counts(*found)
    return (batch.model_copy(update={"turns": turns, "edits": edits}) if total else batch), total
