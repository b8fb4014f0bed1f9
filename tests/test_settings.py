"""The one settings object: every configurable part is reachable from it, and the extraction model
role reaches ingestion (CLI and HTTP build their ingestor from it)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evomem.settings import Settings
from induction.adjudication.llm import LLMAdjudicator
from induction.adjudication.rules import RuleAdjudicator
from induction.extract import LLMExtractor
from induction.offline import OfflineExtractor
from induction.pipeline import build_ingestor
from memcore.memory import Memory


def test_defaults_ingest_offline_and_reach_every_part() -> None:
    s = Settings.from_env({})
    assert (s.ingest.extractor, s.ingest.adjudicator) == ("offline", "model")  # the shipped relation model
    assert s.models.extraction.connection == "local" and s.models.extraction.policy_kind == "model"
    assert s.models.policy.policy_kind == "shipped"
    assert s.pipeline.k == 10 and s.api.require_auth and s.store.backend == "embedded"


def test_extraction_role_from_env_builds_the_llm_ingestor(embedded_memory: Memory) -> None:
    env = {"EVOMEM_EXTRACTOR": "llm", "EVOMEM_EXTRACTION_URL": "http://127.0.0.1:9/v1",
           "EVOMEM_EXTRACTION_MODEL": "extractor"}
    s = Settings.from_env(env)
    assert (s.ingest.extractor, s.ingest.adjudicator) == ("llm", "llm")
    assert (s.models.extraction.connection, s.models.extraction.model) == ("openai", "extractor")
    ing = build_ingestor(embedded_memory, s.ingest, s.models.extraction)  # the client connects lazily
    assert isinstance(ing.extractor, LLMExtractor) and isinstance(ing.adjudicator, LLMAdjudicator)
    assert ing.extractor.chat.name == "extractor"
    off = build_ingestor(embedded_memory, Settings.from_env({}).ingest, s.models.extraction)
    assert isinstance(off.extractor, OfflineExtractor) and isinstance(off.adjudicator, RuleAdjudicator)


def test_extraction_model_cannot_be_the_rule_policy() -> None:
    with pytest.raises(ValidationError, match="extraction model cannot be policy_kind 'rule'"):
        Settings.from_env({"EVOMEM_EXTRACTION_KIND": "rule"})
