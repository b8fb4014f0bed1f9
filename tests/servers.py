"""Test helpers: real servers on 127.0.0.1 (random free ports), a tiny offline model, a fault server.

- ``build_tiny_model(dir)``: a 2-layer Llama with a byte-level BPE tokenizer trained in-process and a
  ChatML template — loads in well under a second, generates random-but-valid tokens. For plumbing
  tests only (it answers nonsense, which also makes it a convenient "garbage" model).
- ``start_model_server(...)`` / ``start_api_server(...)``: ``evomem serve-model`` / ``evomem serve`` as
  real subprocesses, waited on until /health answers; ``.stop()`` ends exactly that process.
- ``FaultServer``: a threaded HTTP server whose /v1/chat/completions misbehaves on purpose
  (garbage body, non-JSON, 500s, slow) to test the client's and the API's error paths.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_tiny_model(folder: Path, seed: int = 0) -> Path:
    """A tiny random Llama + a real (small) tokenizer, saved as a normal HF folder. ~1 s, fully offline."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    if (folder / "config.json").is_file():
        return folder
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    corpus = ["Maya enjoys hiking and beach trips.", "Leo is allergic to peanuts.", "The answer is yes or no.",
              '{"answer": "ok", "city": "Paris"}', "system user assistant memory facts evidence"] * 4
    tk.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                  pad_token="<|im_end|>", unk_token="<|endoftext|>")
    tok.chat_template = CHATML_TEMPLATE
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                      eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
                      pad_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
                      bos_token_id=tok.convert_tokens_to_ids("<|im_start|>"), tie_word_embeddings=True)
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    return folder


def shared_tiny_model(base_temp: Path) -> Path:
    """One tiny model per pytest session (``tmp_path_factory.getbasetemp()``), shared by test modules."""
    import fcntl

    base_temp.mkdir(parents=True, exist_ok=True)
    with (base_temp / ".tiny-model.lock").open("a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        return build_tiny_model(base_temp / "tiny-model")


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1",
                "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"})
    # Servers under test answer with the rule baseline unless a test asks otherwise: the default, shipped
    # learned policy loads SmolLM2 into every server process and costs seconds per request on 2 cores
    # (the main job's test and the CLI's answer test run the default).
    env.setdefault("EVOMEM_POLICY_KIND", "rule")
    for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(k, None)
    env.update(extra or {})
    return env


@dataclass
class ServerProcess:
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def start_process(args: Sequence[str], log_path: Path, port: int, timeout_s: float,
                  env: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> ServerProcess:
    """``python -m evomem.cli ARGS`` (a server listening on ``port``), waited on until /health is 200."""
    log = log_path.open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "evomem.cli", *args], cwd=str(REPO), env=_env(env),
                            stdout=log, stderr=subprocess.STDOUT)
    srv = ServerProcess(proc, port, log_path, headers or {})
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{srv.log()[-3000:]}")
        try:
            if httpx.get(f"{srv.url}/health", timeout=1.0, trust_env=False).status_code == 200:
                return srv
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    srv.stop()
    raise RuntimeError(f"server not healthy after {timeout_s}s:\n{srv.log()[-3000:]}")


def start_model_server(log_dir: Path, model_path: Path | None = None, served_name: str | None = None,
                       api_key: str | None = None, cache_dir: Path | None = None, timeout_s: float = 180,
                       extra_args: Sequence[str] = ()) -> ServerProcess:
    """``evomem serve-model`` on a free loopback port (SmolLM2 when ``model_path`` is None)."""
    port = free_port()
    args = ["serve-model", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    if model_path is not None:
        args += ["--model-path", str(model_path)]
    if served_name:
        args += ["--served-model-name", served_name]
    if api_key:
        args += ["--api-key", api_key]
    if cache_dir is not None:
        args += ["--cache-dir", str(cache_dir)]
    return start_process([*args, *extra_args], log_dir / f"model-server-{port}.log", port, timeout_s)


def start_api_server(log_dir: Path, store_path: Path, answer_url: str | None, answer_model: str | None,
                     api_keys_file: Path | None = None, api_key: str | None = None,
                     extra_args: Sequence[str] = (), env: dict[str, str] | None = None,
                     timeout_s: float = 60) -> ServerProcess:
    """``evomem serve`` (hash embedder, embedded store at ``store_path``) on a free loopback port."""
    port = free_port()
    args = ["serve", "--host", "127.0.0.1", "--port", str(port), "--store", "embedded", "--store-path",
            str(store_path), "--embedder", "hash", "--log-level", "warning"]
    if answer_url:
        args += ["--answer-url", answer_url, "--answer-model", answer_model or "model", "--answer-timeout-s", "30",
                 "--answer-retries", "0"]
    if api_keys_file is not None:
        args += ["--api-keys-file", str(api_keys_file)]
    headers = {}
    if api_key is not None:
        args += ["--api-key", api_key]
        headers["Authorization"] = f"Bearer {api_key}"
    return start_process([*args, *extra_args], log_dir / f"api-server-{port}.log", port, timeout_s, env, headers)


class FaultServer:
    """A loopback HTTP server that answers chat completions badly, by ``mode``:
    garbage (200 + JSON that is not a completion), nonjson (200 + HTML), error500, slow (sleeps
    ``delay_s`` then answers well), ok (a well-formed completion saying ``text``, or ``reply(body)``
    when given — a scripted model). Every request body is kept in ``requests``."""

    def __init__(self, mode: str = "garbage", delay_s: float = 5.0, text: str = "fine",
                 reply: Callable[[dict[str, Any]], str] | None = None):
        self.mode, self.delay_s, self.text, self.reply = mode, delay_s, text, reply
        self.hits = 0
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:  # noqa: N802
                self._send(200, b'{"status": "ok"}')

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                outer.hits += 1
                try:
                    outer.requests.append(json.loads(raw))
                except ValueError:
                    outer.requests.append({"raw": raw.decode(errors="replace")})
                if outer.mode == "garbage":
                    self._send(200, json.dumps({"choices": [], "note": "not a completion"}).encode())
                elif outer.mode == "nonjson":
                    self._send(200, b"<html>gateway says hi</html>", "text/html")
                elif outer.mode == "error500":
                    self._send(500, b'{"error": {"message": "CUDA out of memory", "type": "server_error"}}')
                else:
                    if outer.mode == "slow":
                        time.sleep(outer.delay_s)
                    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "fault",
                            "choices": [{"index": 0, "message": {"role": "assistant", "content":
                                                                 outer.reply(outer.requests[-1]) if outer.reply
                                                                 else outer.text},
                                         "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                    self._send(200, json.dumps(body).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
