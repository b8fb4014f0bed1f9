"""Typed configuration of the induction pipeline (one object per step, all in one ``IngestConfig``).

The thresholds are cosine similarities of L2-normalized sentence embeddings (all-MiniLM-L6-v2 by
default). They were chosen by looking at how paraphrases, restatements and topic neighbours score,
not by fitting a benchmark; tests pin the behaviour they imply.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from induction.redact import RedactConfig


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SegmentConfig(_Cfg):
    max_turns: int = Field(default=400, ge=1, description="Turns per extraction segment (the LLM sees one segment per call).")
    max_chars: int = Field(default=24000, ge=200, description="Characters per segment; a longer session is split at turn boundaries.")


class OfflineExtractorConfig(_Cfg):
    skip_roles: tuple[str, ...] = Field(default=("system", "tool"),
                                        description="Roles whose turns never yield facts.")
    evidence_roles: tuple[str, ...] = Field(default=("assistant",),
                                            description="Roles whose turns yield only evidence facts (holder = the role, or "
                                            "'document' for <information> excerpts), never the user's beliefs.")
    max_evidence_facts_per_turn: int = Field(default=2, ge=0, description="Cap on the assistant's own sentences per turn "
                                             "(only informative ones: claims, findings, corrections, recommendations).")
    max_document_facts_per_turn: int = Field(default=6, ge=0, description="Cap on retrieved-document excerpts per turn.")
    evidence_min_score: float = Field(default=2.0, description="Minimum evidence score (induction/evidence.py) of an "
                                      "assistant sentence; chit-chat and advice addressed to the user score low.")
    min_words: int = Field(default=4, ge=1, description="Sentences shorter than this are chit-chat, not facts.")
    max_sentence_chars: int = Field(default=400, ge=40, description="Longer sentences are cut at a clause boundary for the statement.")
    clause_split_chars: int = Field(default=160, ge=0, description=(
        "A user's sentence longer than this is split at its clause joints into one fact per clause "
        "(induction/clauses.py; 0 = off): a run-on holds several propositions and a request."))
    turn_fallback: bool = Field(default=True, description="An informative turn without a first-person cue still yields its "
                                "most informative sentence, and an assistant turn with no sentence at evidence_min_score its best "
                                "non-chatter one, so every informative turn is findable (recall over precision).")
    max_facts_per_turn: int = Field(default=8, ge=1, description="Cap per turn, so one monologue cannot flood the ontology.")


class ResolveConfig(_Cfg):
    neighbours: int = Field(default=8, ge=1, le=100, description="Stored facts considered per candidate (vector search).")
    min_similarity: float = Field(default=0.30, ge=-1.0, le=1.0,
                                  description="Below this cosine a stored fact is not a candidate relation at all.")
    duplicate_similarity: float = Field(default=0.97, ge=0.0, le=1.0,
                                        description="Same holder and cosine at or above this = the same statement reworded.")

    @model_validator(mode="after")
    def _order(self) -> ResolveConfig:
        if self.duplicate_similarity <= self.min_similarity:
            raise ValueError("duplicate_similarity must be above min_similarity")
        return self


class RuleAdjudicatorConfig(_Cfg):
    change_similarity: float = Field(default=0.40, ge=-1.0, le=1.0,
                                     description="A fact with a change cue (\"no longer\", \"switched to\", \"now prefer\") "
                                     "supersedes older current facts of the same holder at or above this cosine.")
    same_concept_similarity: float = Field(default=0.85, ge=-1.0, le=1.0,
                                           description="Without a cue, a newer fact in the same concept supersedes an older one "
                                           "only at or above this cosine (a near restatement with new content).")
    conflict_similarity: float = Field(default=0.75, ge=-1.0, le=1.0,
                                       description="Opposite polarity (negation cue on one side only) at or above this "
                                       "cosine, without a change cue, is recorded as CONFLICTS_WITH.")
    max_superseded_per_fact: int = Field(default=6, ge=1, description="A change statement replaces at most this many facts.")
    split_min_facts: int = Field(default=40, ge=4, description="A concept with more facts than this is split by fact kind.")
    split_min_child: int = Field(default=5, ge=2, description="Each child of a SPLIT needs at least this many facts.")


class RelationModelConfig(_Cfg):
    """The learned relation model's use at ingest (induction/relations/); training is configs/relations-*.yaml."""

    kind: Literal["logistic", "cross"] = Field(default="logistic", description="logistic: the numpy classifier over "
                                               "structural pair features (artefact relations-v1); cross: the MiniLM "
                                               "cross-encoder that reads both statements together "
                                               "(induction/relations/cross.py, artefact relations-cross-v1).")
    artefact_dir: str | None = Field(default=None, description="Folder of the artefact (None = the one shipped in the package).")
    artefact_name: str | None = Field(default=None, description="Artefact file stem (<name>.npz + <name>.json); None = "
                                      "the kind's shipped one (relations-v1 / relations-cross-v1).")
    cue_gates: bool = Field(default=True, description="The reading cues (change evidence, questions and instructions "
                            "hold no state, contrast, corrections) veto the model's labels; off: they are only the "
                            "model's input features and graph.rules alone disposes (the cross kind's setting).")
    person_gate: bool = Field(default=True, description="Questions, responses and instructions never join a conflict "
                              "(induction.reading.state.holds_state / instructions), even with cue_gates off: a question "
                              "holds no state (\"Would a feather pillow be a bad idea for someone allergic to feathers?\" "
                              "does not dispute \"I'm allergic to feathers.\"). On the phrasing tuning half (cross kind) it "
                              "refuses 1 of 2 false look-alike edges and none of the 19 conflicts found.")
    cross_top_k: int = Field(default=4, ge=0, le=100, description="The cross kind scores only this many candidates per "
                             "new fact (0 = all): the ones the cheap screen (the shipped logistic model's P(related) "
                             "over the structural features; without it, similarity order) ranks first; the rest count as "
                             "unrelated. Keeps the cross pass to a few pairs per fact (issue 44: ingest <= 1.25x rules).")
    cross_screen_floor: float = Field(default=0.02, ge=0.0, le=1.0, description="The cross kind skips a candidate "
                                      "whose screen P(related) is below this (0 = none skipped). 0.02 keeps every "
                                      "related pair of the phrasing tuning half (and 94-99 % of BEAM's and MemSyco's) "
                                      "and skips 81 % of LoCoMo's unrelated pairs: a fact with none left takes no "
                                      "cross pass at all.")
    cross_holder_screen: bool = Field(default=True, description="The cross kind reads only pairs graph.rules could join "
                                      "(one holder, or a person against outside evidence; induction/adjudication/cross.py "
                                      "edge_possible): two different people never get an edge, so their pair is not read.")
    cross_tap: bool = Field(default=True, description="The cross kind takes each statement's lower MiniLM states from "
                            "the ingest embedder's own pass when the embedder is the same MiniLM (hooks; "
                            "induction/relations/cross.py CrossRelationModel.tap) instead of reading it a second time.")
    cross_thresholds: tuple[float, float, float] | None = Field(default=None, description="The cross kind's "
                                                                "(supersede, conflict, same-holder conflict) thresholds "
                                                                "in place of the three below; None = the artefact "
                                                                "manifest's (chosen on the phrasing tuning half), else "
                                                                "the three below.")
    cross_retype: bool = Field(default=False, description="The cross kind only: a new fact the model reads as "
                               "replacing a state (P(supersedes) at/above the threshold) whose own kind may not replace "
                               "it takes that state's kind, as a guessed kind already does, even when the extractor was "
                               "sure of its kind (its kinds are read from wording: \"so I'm pescatarian now\" is an event "
                               "to it); graph.rules still needs the same holder and a later statement. Likewise a person's statement the model "
                               "reads as disputed by outside evidence counts as a claim (a belief) for graph.rules.may_conflict "
                               "(its stored kind is left as it was). Off: with the cross-b artefact it raised the phrasing test half's "
                               "supersession F1 0.593 -> 0.678 and conflict F1 0.262 -> 0.394, but look-alike false relations "
                               "0.128 -> 0.154 and the MemSyco rows 40-89 one-fact leak 0.12 -> 0.14 (2 rows worse).")
    supersede_threshold: float = Field(default=0.5, ge=0.0, le=1.0, description="P(supersedes) at/above which a later "
                                       "fact of the same holder replaces a candidate partner.")
    conflict_threshold: float = Field(default=0.5, ge=0.0, le=1.0, description="P(conflicts_with) at/above which a conflict "
                                      "is recorded (same holder, or a person vs outside evidence).")
    same_holder_conflict_threshold: float = Field(default=0.8, ge=0.0, le=1.0, description="Stricter bar for a conflict "
                                                  "between two statements of one holder (a person rarely contradicts "
                                                  "themself without a change; a false dispute hides a current fact).")
    duplicate_threshold: float = Field(default=1.0, ge=0.0, le=1.0, description="P(duplicate) at/above which a new fact "
                                       "is dropped as a restatement of an older one of the same holder; 1.0 = never "
                                       "(default): a restatement keeps its own turn as evidence, and the class has "
                                       "30 training pairs (at 0.9 the structural model dropped two different "
                                       "photos of a table as one, costing LoCoMo category 1 two questions).")
    require_change_evidence: bool = Field(default=True, description="A replacement needs the newer statement to say "
                                          "something changed (graph.rules.change_evidenced); off = the model alone.")
    max_candidates: int = Field(default=12, ge=1, le=100, description="Candidate partners scored per new fact, closest first.")
    max_superseded_per_fact: int = Field(default=4, ge=1, description="A new fact replaces at most this many older ones "
                                         "(4: a change is often said against a turn of several sentences; "
                                         "docs/results/relations.md, revision 13).")
    supersede_turn: bool = Field(default=True, description="A replacement covers the replaced fact's whole turn: its "
                                 "other facts of the same holder that hold state and still are current are replaced too.")
    turn_min_similarity: float = Field(default=0.35, ge=0.0, le=1.0, description="A sibling of a replaced fact is "
                                       "replaced too only if its cosine to the new fact reaches this (0 = every sibling).")
    turn_overlap_siblings: float = Field(default=0.45, ge=0.0, le=1.0, description="A sibling below "
                                         "turn_min_similarity is replaced all the same when the two turns share "
                                         "their topic this much (features.turn_overlap; 0 = off): in a turn about "
                                         "one experience, a sentence about the crowd is far from \"I'd rather watch "
                                         "alone\" but part of what changed.")
    sibling_kinds_of_turn: bool = Field(default=True, description="Whole-turn replacement checks a sibling's kind "
                                        "against the kinds of every fact of the new turn (same holder), not only "
                                        "the new fact's own: the extractor tells kinds by wording, sentence by "
                                        "sentence, and a change turn replaces a turn as a whole.")
    sibling_circumstances: bool = Field(default=True, description="Whole-turn replacement also takes the replaced "
                                        "turn's circumstances (graph.rules.may_supersede_sibling), not only the "
                                        "kinds a new fact may replace on its own.")
    history_siblings_own_cue: bool = Field(default=False, description="An event or experience sibling of a replaced "
                                           "fact is replaced only when the new fact's own sentence carries the change "
                                           "cue (off: a cue elsewhere in its turn is enough). Off since revision 9: "
                                           "the structural model no longer replaces continuations through it "
                                           "(personalized use 0.94 either way), and cross-validated it left two "
                                           "more current items uncovered.")
    max_superseded_per_turn_change: int = Field(default=12, ge=1, description="Cap on the facts one new fact replaces "
                                                "once whole turns are included.")
    turn_change_evidence: bool = Field(default=True, description="A change cue on another sentence of the new fact's "
                                       "turn counts as the newer statement saying something changed.")
    turn_needs_reversal: bool = Field(default=True, description="Whole-turn replacement only when the new fact's turn "
                                      "turns against something (induction.reading.change.reverses: but, instead, no longer, "
                                      "switched, realized…); a turn that only says now / lately elaborates.")
    change_needs_reversal: bool = Field(default=True, description="Any replacement needs the new fact's turn to turn "
                                        "against something (induction.reading.change.reverses) or the opposite polarity; off: a "
                                        "now / lately shift word is enough for a state.")
    continuation_blocks: bool = Field(default=True, description="A statement that says the earlier state persists or "
                                      "adds to it (induction.reading.change.continues: still, too, also, as well) replaces nothing.")
    assistant_disputes_on_correction: bool = Field(default=True, description="The assistant's own line disputes a "
                                                   "person only when it says it corrects (induction.reading.corrections.corrects: "
                                                   "actually, a common myth, studies show…), and replaces its own earlier "
                                                   "line only then; a document disputes on the model's word. Off: any "
                                                   "claim of the assistant may.")
    model_overrides_cues: float = Field(default=0.9, ge=0.0, le=1.0, description="P(conflicts_with) at/above which the "
                                       "model's word alone is enough: the cue gates assistant_disputes_on_correction and "
                                       "conflict_needs_contrast stand only below it (a belief met by evidence in free "
                                       "phrasing, a person's own report that contradicts a constraint without 'not'); "
                                       "graph.rules.may_conflict still disposes. 1.0: the gates always stand.")
    conflict_needs_contrast: bool = Field(default=True, description="A conflict between two statements of one "
                                          "person needs opposite polarity or a newer statement that itself turns "
                                          "against something (induction.reading.change.reverses); restatements are not conflicts.")
    cache_vectors: int = Field(default=50000, ge=0, description="Sentence vectors of stored facts kept in memory "
                               "(stored facts carry no vectors in the snapshot; a miss is embedded again).")


class LivingConceptsConfig(_Cfg):
    """Concepts induced in the commit path (induction/ontology.py): cosines of normalized fact vectors."""

    enabled: bool = Field(default=True, description="Place facts in induced concepts under their topic and let CREATE, "
                          "MERGE and SPLIT edits follow the data; off: facts stay on the extractor's topic concept.")
    assign_sim: float = Field(default=0.45, ge=-1, le=1, description="A new fact joins the nearest induced concept "
                              "under its topic at this cosine to the concept's centroid or more.")
    radius: float = Field(default=0.45, ge=-1, le=1, description="New facts farther than this from every cluster "
                          "centre open another cluster (leader clustering).")
    min_cluster: int = Field(default=3, ge=2, description="New facts a cluster needs to become a concept (CREATE).")
    merge_sim: float = Field(default=0.7, ge=-1, le=1, description="Induced sibling concepts whose centroids are "
                             "this close merge (the smaller into the larger).")
    split_min: int = Field(default=16, ge=4, description="Direct facts a concept needs before it can be split.")
    split_gain: float = Field(default=0.03, ge=0, description="Cohesion gain (mean cosine to own centroid) a split "
                              "into two halves must bring.")
    split_child_min: int = Field(default=5, ge=2, description="Facts each half of a split needs.")
    rename_top: int = Field(default=3, ge=0, description="A concept whose members changed is named again when no "
                            "term of its name is among its members' this many most characteristic terms (0: never).")


class LLMCallConfig(_Cfg):
    max_tokens: int = Field(default=2048, ge=16, description="Completion budget of one call.")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="0 = deterministic decoding.")
    max_branch_facts: int = Field(default=12, ge=0, description="Representative facts shown from the local ontology branch.")
    max_branch_concepts: int = Field(default=12, ge=0, description="Concepts shown from the local ontology branch.")


class IngestConfig(_Cfg):
    extractor: Literal["offline", "llm"] = Field(default="offline", description="offline: deterministic rules (default); "
                                                 "llm: a chat model with a JSON schema.")
    adjudicator: Literal["model", "rules", "llm"] = Field(
        default="model", description="model: the trained relation model shipped in the package (the rules when its "
        "artefact is absent); rules: deterministic cue rules; llm: one batched call.")
    on_adjudication_error: Literal["keep_new", "rules"] = Field(
        default="keep_new", description="When the adjudicator fails or times out: keep every fact as new (never lost), "
        "or fall back to the deterministic rules.")
    segment: SegmentConfig = Field(default_factory=SegmentConfig)
    offline: OfflineExtractorConfig = Field(default_factory=OfflineExtractorConfig)
    resolve: ResolveConfig = Field(default_factory=ResolveConfig)
    rules: RuleAdjudicatorConfig = Field(default_factory=RuleAdjudicatorConfig)
    relations: RelationModelConfig = Field(default_factory=RelationModelConfig)
    llm: LLMCallConfig = Field(default_factory=LLMCallConfig)
    concepts: LivingConceptsConfig = Field(default_factory=LivingConceptsConfig)
    evidence_min_ratio: float = Field(default=0.9, ge=0.5, le=1.0,
                                      description="Share of the (normalized) evidence quote that must occur in its source turn.")
    commit_retries: int = Field(default=5, ge=1, le=50, description="Re-runs of resolve→commit after a concurrent writer.")
    redact: RedactConfig = Field(default_factory=RedactConfig, description="Secrets (keys, tokens, passwords, card and "
                                 "bank numbers) removed from sessions before they are stored or extracted.")

    @model_validator(mode="after")
    def _rules_need_rules(self) -> IngestConfig:
        if self.adjudicator == "rules" and self.on_adjudication_error == "rules":
            # Harmless, but say what it means rather than silently accept a no-op.
            object.__setattr__(self, "on_adjudication_error", "keep_new")
        return self


class ForgetConfig(_Cfg):
    match_threshold: float = Field(default=0.55, ge=0.0, le=1.0,
                                   description="A natural-language forget request matches a fact only at or above this cosine.")
    ambiguity_margin: float = Field(default=0.03, ge=0.0, le=1.0,
                                    description="If the runner-up is within this margin of the best match, refuse (ambiguous).")
    candidates: int = Field(default=5, ge=1, le=50, description="Facts shown when a request matches nothing or is ambiguous.")
