"""Secrets never stored: credentials and payment data are cut out of everything written to memory.

Every write path redacts before anything else sees the text, and reports what it removed as counts per
kind, never the value:

- sessions (induction/pipeline.py calls :func:`redact_session` first: the content hash, the extractor, the
  stored turns and every fact quote are built from the redacted text), so also ``POST .../sessions`` and
  the MCP ``add_session`` / ``add_memory`` tools;
- explicit edit batches (``POST /edits``, :func:`redact_batch`): turn texts and roles, concept names and
  descriptions (CREATE, SPLIT), every free-text field of an attached fact (statement, evidence, scope,
  holder, qualifier keys and values) and every reason (SUPERSEDE, CONFLICT, RESOLVE, RETRACT);
- forget reasons (induction/forget.py, so the CLI, HTTP and MCP forget);
- imported export files (:func:`redact_export`, ``evomem import``): turn texts, concept names and
  descriptions, fact fields, relation reasons and the free text inside edit payloads, before the commit.

Ids (user, session, turn, fact, concept, edit ids) are keys, kept as sent; they are not redacted.

What counts as a secret is induction/secrets.py: text is matched after normalisation (NFKC, zero-width
and other format characters removed, dash and quote look-alikes unified) and each secret's span is mapped
back, so the stored text is the original text with the secret replaced by ``[REDACTED:<kind>]``.
Detection uses the maintained provider rules of ``detect-secrets`` plus conversational rules written here
(see that module for the list).

A secret split across consecutive turns of one session is caught too (:func:`redact_texts`): when a
turn ends with a secret cue ("... my password is") the next turn of the same speaker is read as its
continuation, and when a turn ends with a secret, a token-shaped start of that speaker's next turn is
taken as the rest of it (a key pasted in two halves, a private key in two messages).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graph.edits import AttachFact, Conflict, CreateConcept, EditBatch, Resolve, Retract, SplitConcept, Supersede
from induction.secrets import _ABOUT, _ASIDE, _IS, _KEY_CUE, _PW_CUE, _pw_value, _random_token, find_secrets, normalise
from induction.secrets import iban_ok as iban_ok
from induction.secrets import luhn_ok as luhn_ok
from induction.session import Session

if TYPE_CHECKING:
    from graph.portable import UserExport

BuiltinKind = Literal["api_key", "bearer", "basic_auth", "private_key", "password", "card", "iban", "bank_account"]
BUILTIN_KINDS: tuple[BuiltinKind, ...] = ("api_key", "bearer", "basic_auth", "private_key", "password", "card",
                                          "iban", "bank_account")


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
    enabled: bool = Field(default=True, description="Redact secrets from everything written (sessions, edits, "
                          "forget reasons, imports) before it is stored or extracted.")
    kinds: tuple[BuiltinKind, ...] = Field(default=BUILTIN_KINDS, description="Built-in kinds to redact.")
    library: bool = Field(default=True, description="Also use detect-secrets' provider token rules.")
    split_turns: bool = Field(default=True, description="Catch a secret split across consecutive turns.")
    extra: tuple[RedactionPattern, ...] = Field(default=(), description="Additional patterns (e.g. internal ids).")


@lru_cache(maxsize=32)
def _extra(cfg: RedactConfig) -> tuple[tuple[str, re.Pattern[str], int], ...]:
    return tuple((p.kind, re.compile(p.regex, re.IGNORECASE), p.group) for p in cfg.extra)


def _spans(text: str, cfg: RedactConfig) -> list[tuple[int, int, str]]:
    spans = find_secrets(text, frozenset(cfg.kinds), cfg.library, _extra(cfg))
    if cfg.split_turns:  # a secret said in two pieces ("key: Ab3… Xy9…"): a secret-shaped next word goes too
        for i, (s, e, kind) in enumerate(spans):
            nxt = spans[i + 1][0] if i + 1 < len(spans) else len(text)
            m = _NEXT_TOKEN.match(text, e)
            if m and m.end(1) <= nxt and _secret_shaped(m.group(1), kind):
                spans[i] = (s, m.end(1), kind)
    return spans


def _apply(text: str, spans: Sequence[tuple[int, int, str]]) -> tuple[str, dict[str, int]]:
    out: list[str] = []
    counts: dict[str, int] = {}
    pos = 0
    for start, end, kind in sorted(spans):
        if start < pos:
            continue
        out += [text[pos:start], f"[REDACTED:{kind}]"]
        counts[kind] = counts.get(kind, 0) + 1
        pos = end
    out.append(text[pos:])
    return "".join(out), counts


def redact_text(text: str, cfg: RedactConfig | None = None) -> tuple[str, dict[str, int]]:
    """``text`` with every secret replaced, and how many of each kind were replaced."""
    cfg = cfg or RedactConfig()
    if not cfg.enabled or not text:
        return text, {}
    spans = _spans(text, cfg)
    return _apply(text, spans) if spans else (text, {})


def merge_counts(*counts: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for k, n in c.items():
            out[k] = out.get(k, 0) + n
    return dict(sorted(out.items()))


# -- a secret split across turns -------------------------------------------------------------------------
_CUE_TAIL = re.compile(r"(?:\b(?:" + _PW_CUE + "|" + _KEY_CUE + r"|card(?:\s+(?:number|no\.?))?|iban|"
                       r"(?:account|routing)\s+number|sort\s+code|pass\s?phrase|(?:seed|recovery)\s+phrase)"
                       + _ABOUT + _ASIDE + r"(?:" + _IS + r"|\s*(?:\.\.\.|…|-+)\s*)\s*$)", re.IGNORECASE)
_HERE_TAIL = re.compile(r"\bhere(?:'s| is| are)\s+(?:my|the|our)\s+(?:[\w-]+\s+){0,3}?(?:" + _PW_CUE + "|"
                        + _KEY_CUE + r"|card(?:\s+number)?)\s*[:.…-]*\s*$", re.IGNORECASE)
_LEAD_TOKEN = re.compile(r"^\s*(\S{4,})")
_NEXT_TOKEN = re.compile(r"[ \t]{1,3}(\S{6,})")
_PEM_REST = re.compile(r"^[\sA-Za-z0-9+/=\u200b-\u200d\ufeff]*(?:-----END [^\n]*?-----)?")


def _cue_tail(text: str) -> str | None:
    norm, _ = normalise(text)
    m = _CUE_TAIL.search(norm) or _HERE_TAIL.search(norm)
    if m is None:
        return None
    cue = m.group()
    return cue if cue.rstrip().endswith((":", "=", "-", "…", "...")) or re.search(r"\b(?:is|was|are|'s)\s*$", cue) \
        else cue.rstrip(" .") + " is"


def _continuation(prev: str, prev_spans: list[tuple[int, int, str]], text: str,
                  cfg: RedactConfig) -> list[tuple[int, int, str]]:
    """Spans of ``text`` that continue a secret begun at the end of ``prev``."""
    tail = _cue_tail(prev)
    if tail is not None:  # "my password is" | "hunter2-blue!": read the two as one
        joined = tail.rstrip() + " " + text
        off = len(joined) - len(text)
        return [(s - off, e - off, k) for s, e, k in _spans(joined, cfg) if s >= off]
    if not prev_spans or prev_spans[-1][1] < len(prev.rstrip(" \t\n.…-")):
        return []
    kind = prev_spans[-1][2]  # prev ends with a secret: a secret-shaped start of this turn is the rest of it
    if kind == "private_key":
        m = _PEM_REST.match(text)
        return [(0, m.end(), kind)] if m and m.end() else []
    m = _LEAD_TOKEN.match(text)
    return [(m.start(1), m.end(1), kind)] if m and _secret_shaped(m.group(1), kind) else []


def _secret_shaped(token: str, kind: str) -> bool:
    """A word that can be the rest of a secret of ``kind`` begun just before it."""
    tok, _ = normalise(token.rstrip(".,;!?)"))
    if kind in ("card", "iban", "bank_account"):
        return False  # their checksums say where they end
    return _random_token(tok) or (any(c.isdigit() for c in tok) and any(c.isalpha() for c in tok) and len(tok) >= 8
                                  and not re.search(r"[.:/@]", tok)) or (
        kind == "password" and _pw_value(tok) and not tok.isalpha() and len(tok) >= 6)


def redact_texts(texts: Sequence[str], roles: Sequence[str] | None = None,
                 cfg: RedactConfig | None = None) -> tuple[list[str], list[dict[str, int]]]:
    """The turns of one conversation, redacted one by one and across turns: a cue or a secret at the end
    of a turn carries to the next turn of the same speaker (the next one, or the one after a reply)."""
    cfg = cfg or RedactConfig()
    if not cfg.enabled:
        return list(texts), [{} for _ in texts]
    spans = [_spans(t, cfg) if t else [] for t in texts]
    if cfg.split_turns:
        roles = roles or ["" for _ in texts]
        for i in range(len(texts)):
            nxt = [j for j in (i + 1, i + 2) if j < len(texts) and roles[j] == roles[i]][:1]
            for j in nxt:
                extra = _continuation(texts[i], spans[i], texts[j], cfg)
                if extra:
                    spans[j] = sorted(spans[j] + extra)
    out = [_apply(t, s) if s else (t, {}) for t, s in zip(texts, spans)]
    return [t for t, _ in out], [c for _, c in out]


def redact_session(session: Session, cfg: RedactConfig | None = None) -> tuple[Session, dict[str, int]]:
    """The session with every turn's text redacted (the same object when nothing was found)."""
    texts, found = redact_texts([t.text for t in session.turns], [t.role for t in session.turns], cfg)
    roles = [redact_text(t.role, cfg) for t in session.turns]
    total = merge_counts(*found, *(c for _, c in roles))
    if not total:
        return session, {}
    turns = tuple(t.model_copy(update={"text": x, "role": r}) for t, x, (r, _) in zip(session.turns, texts, roles))
    return session.model_copy(update={"turns": turns}), total


class _Cleaner:
    def __init__(self, cfg: RedactConfig | None):
        self.cfg, self.found = cfg, []  # type: ignore[var-annotated]

    def __call__(self, text: str | None) -> Any:
        if not text:
            return text
        out, counts = redact_text(text, self.cfg)
        self.found.append(counts)
        return out

    def qualifiers(self, q: dict[str, str]) -> dict[str, str]:
        return {self(k): self(v) for k, v in q.items()}

    def fact(self, f: Any) -> Any:
        return f.model_copy(update={"statement": self(f.statement), "evidence": self(f.evidence),
                                    "scope": self(f.scope), "holder": self(f.holder),
                                    "qualifiers": self.qualifiers(f.qualifiers)})

    @property
    def total(self) -> dict[str, int]:
        return merge_counts(*self.found)


def _clean_edit(e: Any, clean: _Cleaner) -> Any:
    if isinstance(e, AttachFact):
        return e.model_copy(update={"fact": clean.fact(e.fact)})
    if isinstance(e, CreateConcept):
        return e.model_copy(update={"name": clean(e.name), "description": clean(e.description)})
    if isinstance(e, SplitConcept):
        return e.model_copy(update={"children": tuple(c.model_copy(update={"name": clean(c.name),
                                                                             "description": clean(c.description)})
                                                      for c in e.children)})
    if isinstance(e, (Supersede, Conflict, Resolve, Retract)):
        return e.model_copy(update={"reason": clean(e.reason)})
    return e


def redact_batch(batch: EditBatch, cfg: RedactConfig | None = None) -> tuple[EditBatch, dict[str, int]]:
    """An explicit edit batch (``POST /edits``) with every free-text field redacted: the turns' texts and
    roles, concept names and descriptions, the facts' statement, evidence, scope, holder and qualifiers,
    and every reason."""
    clean = _Cleaner(cfg)
    texts, found = redact_texts([t.text for t in batch.turns], [t.role for t in batch.turns], cfg)
    clean.found += found
    turns = [t.model_copy(update={"text": x, "role": clean(t.role)}) for t, x in zip(batch.turns, texts)]
    edits = [_clean_edit(e, clean) for e in batch.edits]
    total = clean.total
    return (batch.model_copy(update={"turns": turns, "edits": edits}) if total else batch), total


_ID_KEY = re.compile(r"(?:^|_)ids?$|^(?:moves|children|moved_facts|moved_children|src|dst|a|b)$")


def _clean_payload(value: Any, clean: _Cleaner, key: str = "") -> Any:
    if _ID_KEY.search(key):
        return value
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {k: _clean_payload(v, clean, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_payload(v, clean) for v in value]
    return value


def redact_export(data: UserExport, cfg: RedactConfig | None = None) -> tuple[UserExport, dict[str, int]]:
    """An export file about to be imported, with every free-text field redacted (turns, concepts, facts,
    relation reasons, edit payloads). A fact whose statement changed loses its embedding, so the import
    embeds the redacted statement. ``data`` itself is not changed."""
    from graph.portable import UserExport

    cfg = cfg or RedactConfig()
    if not cfg.enabled:
        return data, {}
    clean = _Cleaner(cfg)
    s = data.snapshot.clone()
    turns = sorted(data.turns, key=lambda t: (t.session_id, t.seq))
    texts, found = redact_texts([t.text for t in turns], [t.role for t in turns], cfg)
    clean.found += found
    new_turns = [t.model_copy(update={"text": x, "role": clean(t.role)}) for t, x in zip(turns, texts)]
    s.concepts = {k: c.model_copy(update={"name": clean(c.name), "description": clean(c.description)})
                  for k, c in s.concepts.items()}
    facts = {k: clean.fact(f) for k, f in s.facts.items()}
    embeddings = {k: v for k, v in data.embeddings.items() if k not in facts or facts[k].statement
                  == s.facts[k].statement}
    s.facts = facts
    s.relations = {k: r.model_copy(update={"reason": clean(r.reason)}) for k, r in s.relations.items()}
    s.edits = {k: e.model_copy(update={"payload": _clean_payload(e.payload, clean)}) for k, e in s.edits.items()}
    total = clean.total
    return (UserExport(s, new_turns, embeddings) if total else data), total
