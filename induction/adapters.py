"""Benchmark files -> typed ``Session``s plus their questions and gold evidence, in typed form.

The datasets' own turn ids become our Turn ids (LoCoMo ``dia_id`` such as ``D1:3``, BEAM message ids
as strings), so evaluation can match retrieved evidence to gold evidence directly. Answer keys
(questions, answers, MemSyco ``memory`` items) live beside the sessions, never inside them: ingest
sees only the dialogue.

    convs = load_locomo("../shared/data/locomo/locomo10.json")   # list[LocomoConversation]
    rows = load_memsyco("../shared/data/memsyco-bench/valid_memory_selection.jsonl")
    beam = load_beam("../shared/data/beam/100K")                 # list[BeamConversation]
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from induction.session import Session, SessionFormatError, _field_path


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise SessionFormatError(str(path), None, "", f"cannot read: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise SessionFormatError(str(path), None, "", f"not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None


def _need(obj: Any, key: str, typ: type | tuple[type, ...], src: str, rec: int | None, path: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise SessionFormatError(src, rec, f"{path}.{key}" if path else key, "field required")
    v = obj[key]
    if not isinstance(v, typ):
        names = "/".join(t.__name__ for t in (typ if isinstance(typ, tuple) else (typ,)))
        raise SessionFormatError(src, rec, f"{path}.{key}" if path else key, f"expected {names}, got {type(v).__name__}")
    return v


def _session(data: dict[str, Any], src: str, rec: int | None, prefix: str = "") -> Session:
    try:
        return Session.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        path = _field_path(err["loc"])
        raise SessionFormatError(src, rec, f"{prefix}{path}" if prefix else path, err["msg"]) from None


# ---------------------------------------------------------------- LoCoMo
_LOCOMO_TIME = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I)
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")
# BEAM's generator left its plan index in 4 of 10 messages ("... by then? ->-> 1,21"): bookkeeping of
# how the chat was made, not something the user said, so it is not stored (nor spent in a context).
_BEAM_MARKER = re.compile(r"\s*->->\s*[\w/]+,\s*[\w/]+")


def parse_locomo_time(text: str) -> datetime | None:
    """``'1:56 pm on 8 May, 2023'`` -> 2023-05-08 13:56 (None when the free text does not parse)."""
    m = _LOCOMO_TIME.search(text or "")
    if not m:
        return None
    hh, mm, ampm, day, month, year = m.groups()
    try:
        mon = datetime.strptime(month[:3].title(), "%b").month
    except ValueError:
        return None
    h = int(hh) % 12 + (12 if ampm.lower() == "pm" else 0)
    return datetime(int(year), mon, int(day), h, int(mm))


def normalize_evidence(raw: Any) -> tuple[str, ...]:
    """LoCoMo evidence strings -> dia ids: splits ``'D8:6; D9:17'``, mends ``'D:11:26'`` and ``'D30:05'``.

    >>> normalize_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D"])
    ('D8:6', 'D9:17', 'D11:26', 'D30:5')
    """
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        for m in _EVIDENCE.finditer(str(item)):
            tid = f"D{int(m.group(1))}:{int(m.group(2))}"
            if tid not in out:
                out.append(tid)
    return tuple(out)


class LocomoQuestion(_M):
    question: str
    answer: str | None = Field(description="Gold answer (missing on most category-5 items).")
    category: int = Field(ge=1, le=5, description="1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.")
    evidence_ids: tuple[str, ...] = Field(description="Normalized dia ids, i.e. our Turn ids.")
    raw_evidence: tuple[str, ...] = ()
    adversarial_answer: str | None = None


class LocomoConversation(_M):
    sample_id: str
    user_id: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[LocomoQuestion, ...]


def load_locomo(path: str | Path, user_prefix: str = "", image_captions: bool = True) -> list[LocomoConversation]:
    """Each conversation becomes one memory user (``user_prefix + sample_id``) with one Session per
    ``session_N`` that has turns. A shared photo's caption is kept in the turn text as ``[image: ...]``."""
    p = Path(path)
    src = str(p)
    data = _read_json(p)
    if not isinstance(data, list):
        raise SessionFormatError(src, None, "", "expected a list of conversations")
    out: list[LocomoConversation] = []
    for ci, conv in enumerate(data):
        sample = _need(conv, "sample_id", str, src, ci, "")
        c = _need(conv, "conversation", dict, src, ci, "")
        speakers = (_need(c, "speaker_a", str, src, ci, "conversation"), _need(c, "speaker_b", str, src, ci, "conversation"))
        uid = f"{user_prefix}{sample}"
        nums = sorted(int(k.split("_")[1]) for k, v in c.items() if re.fullmatch(r"session_\d+", k) and isinstance(v, list) and v)
        sessions: list[Session] = []
        for n in nums:
            key = f"session_{n}"
            turns = []
            for ti, t in enumerate(c[key]):
                path = f"conversation.{key}[{ti}]"
                text = _need(t, "text", str, src, ci, path)
                caption = t.get("blip_caption")
                if image_captions and isinstance(caption, str) and caption.strip():
                    text = f"{text} [image: {caption.strip()}]" if text.strip() else f"[image: {caption.strip()}]"
                turns.append({"role": _need(t, "speaker", str, src, ci, path), "text": text,
                              "turn_id": _need(t, "dia_id", str, src, ci, path)})
            started = parse_locomo_time(str(c.get(f"{key}_date_time", "")))
            sessions.append(_session({"session_id": f"{sample}-s{n}", "user_id": uid, "started_at": started,
                                      "turns": turns, "source": f"locomo:{sample}"}, src, ci, f"conversation.{key}:"))
        qs: list[LocomoQuestion] = []
        for qi, q in enumerate(conv.get("qa", [])):
            raw = q.get("evidence") or []
            raw_list = tuple(str(x) for x in (raw if isinstance(raw, list) else [raw]))
            ans = q.get("answer")
            try:
                qs.append(LocomoQuestion(question=str(q.get("question", "")), answer=None if ans is None else str(ans),
                                         category=int(q.get("category", 0)), evidence_ids=normalize_evidence(raw_list),
                                         raw_evidence=raw_list, adversarial_answer=q.get("adversarial_answer")))
            except (ValidationError, ValueError, TypeError) as e:
                raise SessionFormatError(src, ci, f"qa[{qi}]", str(e).splitlines()[0]) from None
        out.append(LocomoConversation(sample_id=sample, user_id=uid, speakers=speakers, sessions=tuple(sessions),
                                      questions=tuple(qs)))
    return out


# ---------------------------------------------------------------- MemSyco-Bench
class MemsycoItem(_M):
    content: str
    type: str
    status: Literal["active", "current", "outdated"]

    def parts(self) -> list[str]:
        """Gold items sometimes pack several statements joined by ';' — score each on its own."""
        return [p.strip() for p in self.content.split(";") if len(p.strip()) > 3] or [self.content]


class MemsycoRow(_M):
    id: str
    task: str
    session: Session = Field(description="The past dialogue only: this is all ingest may see.")
    question: str = Field(description="The new request posed after the dialogue.")
    policy: str = Field(description="Answer key: use / update / defer_to_evidence / constrain_to_scope / ignore_as_evidence.")
    items: tuple[MemsycoItem, ...] = Field(description="Answer key: the gold memory items (never shown to the system).")
    reference_answer: str = ""
    preference_aligned_answer: str | None = None
    subtype: str | None = None
    topic: str | None = None

    def items_with(self, status: str) -> list[MemsycoItem]:
        return [i for i in self.items if i.status == status]


def load_memsyco(path: str | Path, user_prefix: str = "memsyco-") -> list[MemsycoRow]:
    """One row = one user (``user_prefix + id``) with one session (the row's dialogue, no timestamps)."""
    p = Path(path)
    src = str(p)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise SessionFormatError(src, None, "", f"cannot read: {e.strerror or e}") from None
    rows: list[MemsycoRow] = []
    for n, line in enumerate(x for x in lines if x.strip()):
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            raise SessionFormatError(src, n, "", f"not JSON: {e.msg}") from None
        rid = _need(r, "id", str, src, n, "")
        dialogue = _need(r, "dialogue", list, src, n, "")
        turns = [{"role": _need(t, "role", str, src, n, f"dialogue[{i}]"),
                  "text": _need(t, "content", str, src, n, f"dialogue[{i}]")} for i, t in enumerate(dialogue)]
        sess = _session({"session_id": rid, "user_id": f"{user_prefix}{rid}", "turns": turns,
                         "source": f"memsyco:{rid}"}, src, n, "dialogue:")
        mem = _need(r, "memory", dict, src, n, "")
        ev = r.get("evaluation") or {}
        meta = r.get("metadata") or {}
        try:
            items = tuple(MemsycoItem.model_validate(i) for i in _need(mem, "items", list, src, n, "memory"))
        except ValidationError as e:
            raise SessionFormatError(src, n, "memory.items", e.errors()[0]["msg"]) from None
        rows.append(MemsycoRow(id=rid, task=str(r.get("task", "")), session=sess,
                               question=_need(r, "question", str, src, n, ""), policy=str(mem.get("policy", "")),
                               items=items, reference_answer=str(ev.get("reference_answer", "")),
                               preference_aligned_answer=ev.get("preference_aligned_answer"),
                               subtype=meta.get("subtype"), topic=meta.get("topic")))
    return rows


# ---------------------------------------------------------------- BEAM
_GOLD_FIELDS = ("answer", "ideal_answer", "ideal_response", "ideal_summary")


class BeamQuestion(_M):
    ability: str = Field(description="knowledge_update, temporal_reasoning, abstention, ...")
    index: int = Field(description="Position within its ability's list.")
    question: str
    gold: str | None = Field(description="answer / ideal_answer / ideal_response / ideal_summary, whichever is present.")
    rubric: tuple[str, ...] = ()
    difficulty: str | None = None
    evidence_ids: tuple[str, ...] = Field(default=(), description="All evidence message ids (our Turn ids), flattened.")
    evidence_groups: dict[str, tuple[str, ...]] = Field(
        default_factory=dict, description="For grouped evidence (first/second statement, original/updated info).")


class BeamConversation(_M):
    conversation: str
    user_id: str
    sessions: tuple[Session, ...]
    questions: tuple[BeamQuestion, ...]
    topic: dict[str, Any] = Field(default_factory=dict)


def parse_beam_time(text: str | None) -> datetime | None:
    """``'March-15-2024'`` -> 2024-03-15."""
    if not text:
        return None
    for fmt in ("%B-%d-%Y", "%b-%d-%Y", "%B %d, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
    return None


def _beam_ids(raw: Any) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    if raw is None:
        return (), {}
    if isinstance(raw, dict):
        groups = {k: tuple(str(x) for x in (v if isinstance(v, list) else [v])) for k, v in raw.items()}
        flat = tuple(dict.fromkeys(x for v in groups.values() for x in v))
        return flat, groups
    return tuple(dict.fromkeys(str(x) for x in (raw if isinstance(raw, list) else [raw]))), {}


def load_beam(root: str | Path, user_prefix: str = "beam-", conversations: list[str] | None = None) -> list[BeamConversation]:
    """``root`` is a tier folder (e.g. ``beam/100K``) of ``<n>/chat.json`` + ``probing_questions.json``.
    Each batch becomes one session dated by its time anchor; message ids become Turn ids."""
    base = Path(root)
    dirs = sorted((d for d in base.iterdir() if d.is_dir() and (d / "chat.json").exists()),
                  key=lambda d: (len(d.name), d.name)) if base.is_dir() else []
    if not dirs:
        raise SessionFormatError(str(base), None, "", "no <n>/chat.json folders here")
    out: list[BeamConversation] = []
    for d in dirs:
        if conversations and d.name not in conversations:
            continue
        src = str(d / "chat.json")
        chat = _read_json(d / "chat.json")
        if not isinstance(chat, list):
            raise SessionFormatError(src, None, "", "expected a list of batches")
        uid = f"{user_prefix}{d.name}"
        sessions: list[Session] = []
        last_time: datetime | None = None
        for bi, batch in enumerate(chat):
            exchanges = _need(batch, "turns", list, src, bi, "")
            msgs = [(ei, mi, m) for ei, ex in enumerate(exchanges) for mi, m in enumerate(ex if isinstance(ex, list) else [ex])]
            anchor = batch.get("time_anchor") or next((m.get("time_anchor") for _, _, m in msgs
                                                       if isinstance(m, dict) and m.get("time_anchor")), None)
            started = parse_beam_time(anchor) or last_time
            last_time = started
            turns = []
            for ei, mi, m in msgs:
                path = f"turns[{ei}][{mi}]"
                mid = _need(m, "id", (int, str), src, bi, path)
                raw = _need(m, "content", str, src, bi, path)
                text = _BEAM_MARKER.sub("", raw)
                text = text if text.strip() else raw  # a message that is only a marker stays as it was
                turns.append({"role": _need(m, "role", str, src, bi, path), "text": text,
                              "turn_id": str(mid), "at": parse_beam_time(m.get("time_anchor"))})
            num = batch.get("batch_number", bi + 1)
            sessions.append(_session({"session_id": f"{uid}-b{num}", "user_id": uid, "started_at": started, "turns": turns,
                                      "source": f"beam:{d.name}"}, src, bi, "batch:"))
        qs: list[BeamQuestion] = []
        pq = d / "probing_questions.json"
        if pq.exists():
            data = _read_json(pq)
            for ability, items in (data.items() if isinstance(data, dict) else []):
                for qi, q in enumerate(items if isinstance(items, list) else []):
                    flat, groups = _beam_ids(q.get("source_chat_ids"))
                    gold = next((str(q[k]) for k in _GOLD_FIELDS if k in q), None)
                    rubric = q.get("rubric") or []
                    qs.append(BeamQuestion(ability=ability, index=qi, question=str(q.get("question", "")), gold=gold,
                                           rubric=tuple(str(x) for x in (rubric if isinstance(rubric, list) else [rubric])),
                                           difficulty=q.get("difficulty"), evidence_ids=flat, evidence_groups=groups))
        topic = _read_json(d / "topic.json") if (d / "topic.json").exists() else {}
        out.append(BeamConversation(conversation=d.name, user_id=uid, sessions=tuple(sessions), questions=tuple(qs),
                                    topic=topic if isinstance(topic, dict) else {}))
    return out


def load_any(path: str | Path, fmt: Literal["json", "jsonl", "locomo", "memsyco", "beam"],
             user_id: str | None = None, conversation: str | None = None) -> list[Session]:
    """Sessions from any supported format (answer keys dropped), for ``evomem ingest``.

    ``conversation`` keeps one LoCoMo sample / BEAM folder / MemSyco row. ``user_id`` renames the
    dataset's user; refusing to pour several conversations into one user keeps their turn ids apart."""
    from induction.session import load_sessions

    if fmt in ("json", "jsonl"):
        return load_sessions(path, fmt, user_id)
    if fmt == "locomo":
        convs = load_locomo(path)
        sessions = [s for c in convs if conversation in (None, c.sample_id) for s in c.sessions]
    elif fmt == "memsyco":
        sessions = [r.session for r in load_memsyco(path) if conversation in (None, r.id)]
    else:
        sessions = [s for c in load_beam(path) if conversation in (None, c.conversation) for s in c.sessions]
    if not sessions:
        raise SessionFormatError(str(path), None, "", f"no conversation {conversation!r} in this {fmt} file"
                                 if conversation else f"no sessions in this {fmt} file")
    if user_id is not None:
        users = {s.user_id for s in sessions}
        if len(users) > 1:
            raise SessionFormatError(str(path), None, "", f"{len(users)} conversations would share user {user_id!r}; "
                                     "pick one with --conversation, or omit --user to keep one user per conversation")
        sessions = [s.model_copy(update={"user_id": user_id}) for s in sessions]
    return sessions
