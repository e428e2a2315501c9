"""A small, real HTTP server that speaks the parts of Ollama's API this package uses.

Used in-process by tests (``FakeOllama`` as a context manager or the ``fake_ollama``
fixture) and as a standalone process::

    python tests/fake_ollama.py --port 0 --delay 0.05 --print-port

prints the port on the first line of stdout, then serves until killed.

Endpoints: ``POST /api/embed``, ``POST /api/embeddings`` (legacy), ``GET /api/tags``,
``GET /api/version``, ``GET /``. An unpulled model gets 404 ``{"error": "model \\"x\\"
not found, try pulling it first"}`` as real Ollama answers.

Embeddings are deterministic and meaningful: lowercase word tokens (CJK characters
one by one, a few English stopwords dropped, known task prefixes such as
``search_document:`` ignored) are hashed with blake2b into a ``dim``-dimensional
bag of words (sublinear term frequency) plus a small dense random projection per
token, then L2-normalised. Texts that share words have a high cosine; texts that
share none have a cosine near 0.

Fault modes (``set_fault(name, **kw)``, changeable at any time, ``None`` clears):

- ``"http500"``: ``/api/embed`` answers 500 ``{"error": ...}``.
- ``"malformed_json"``: ``/api/embed`` answers 200 with a truncated JSON body.
- ``"wrong_dim"``: vectors have ``dim=`` (default 512) dimensions.
- ``"fewer_vectors"``: one vector fewer than inputs.
- ``"nan"``: the first vector holds a NaN (sent as the bare JSON token ``NaN``).
- ``"slow"``: every request waits ``seconds=`` (default 0.2) first.
- ``"hang"``: every request waits ``seconds=`` (default 60) or until ``stop()``.
- ``"fail_n_then_ok"``: the next ``n=`` (default 2) ``/api/embed`` requests answer 500.
- ``"drop"``: ``/api/embed`` closes the connection without answering.

``slow`` and ``hang`` hit every endpoint, the others only ``/api/embed``; pass
``paths=("/api/tags",)`` to choose. "Ollama down" is ``stop()`` (``start()`` binds
the same port again) or a URL built with :func:`unused_port`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import signal
import socket
import sys
import threading
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

DEFAULT_MODELS = ("nomic-embed-text:latest",)
DEFAULT_DIM = 768
FAULTS = (
    "http500",
    "malformed_json",
    "wrong_dim",
    "fewer_vectors",
    "nan",
    "slow",
    "hang",
    "fail_n_then_ok",
    "drop",
)
_ALL_PATHS_FAULTS = ("slow", "hang")
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+")
_TASK_PREFIX = re.compile(
    r"^\s*(search_query|search_document|query|passage|classification|clustering)\s*:\s*",
    re.IGNORECASE,
)
STOPWORDS = frozenset(
    "a an and are as at be by for from in is it of on or that the this to was were with".split()
)
PROJECTION_WEIGHT = 0.15


def unused_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on (right now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tokens(text: str) -> list[str]:
    """Return the tokens the fake model embeds (prefix dropped, lowercase, no stopwords)."""
    text = _TASK_PREFIX.sub("", text, count=1).lower()
    return [t for t in _TOKEN.findall(text) if t not in STOPWORDS]


def _hash(token: str, salt: str) -> int:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8, person=salt.encode()[:16])
    return int.from_bytes(digest.digest(), "little")


@lru_cache(maxsize=65536)
def _token_vector(token: str, dim: int) -> np.ndarray:
    vec = np.zeros(dim, dtype=np.float64)
    slot = _hash(token, "slot") % dim
    vec[slot] = 1.0 if _hash(token, "sign") & 1 else -1.0
    dense = np.random.default_rng(_hash(token, "proj")).standard_normal(dim)
    vec += PROJECTION_WEIGHT * dense / math.sqrt(dim)
    vec.setflags(write=False)
    return vec


def embed_text(text: str, dim: int = DEFAULT_DIM) -> list[float]:
    """Embed one text the way the fake server does (deterministic, unit length)."""
    counts: dict[str, int] = {}
    for token in tokens(text) or ["<empty>"]:
        counts[token] = counts.get(token, 0) + 1
    vec = np.zeros(dim, dtype=np.float64)
    for token, count in counts.items():
        vec += (1.0 + math.log(count)) * _token_vector(token, dim)
    norm = float(np.linalg.norm(vec))
    if norm > 0:
        vec /= norm
    return [round(float(x), 7) for x in vec]


def _with_latest(name: str) -> str:
    name = name.strip().lower()
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], fake: FakeOllama) -> None:
        self.fake = fake
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet: clients that time out and hang up are part of the tests."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection: stop() really cuts clients off
    server_version = "FakeOllama/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Silence per-request logging."""

    # -- plumbing --------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode("utf-8"))

    def _read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        return json.loads(raw or b"null")

    def _dispatch(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        fake._record_request(self.command, path)
        if not fake._before_request(path):
            return
        try:
            if self.command in ("GET", "HEAD") and path == "/":
                self._send(200, b"Ollama is running", "text/plain; charset=utf-8")
            elif self.command == "GET" and path == "/api/version":
                self._json(200, {"version": fake.version})
            elif self.command == "GET" and path == "/api/tags":
                self._json(200, fake._tags())
            elif self.command == "POST" and path in ("/api/embed", "/api/embeddings"):
                self._embed(path)
            else:
                self._send(404, b"404 page not found", "text/plain")
        except (BrokenPipeError, ConnectionResetError):
            pass

    do_GET = _dispatch  # noqa: N815
    do_POST = _dispatch  # noqa: N815
    do_HEAD = _dispatch  # noqa: N815

    def _embed(self, path: str) -> None:
        fake = self.server.fake
        legacy = path == "/api/embeddings"
        try:
            request = self._read_json()
        except (ValueError, UnicodeDecodeError) as exc:
            self._json(400, {"error": f"invalid request body: {exc}"})
            return
        if not isinstance(request, dict):
            self._json(400, {"error": "invalid request body"})
            return
        model = request.get("model")
        raw = request.get("prompt", "") if legacy else request.get("input", [])
        inputs = [raw] if isinstance(raw, str) else raw
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            self._json(400, {"error": "invalid input type"})
            return
        fault = fake._embed_fault(inputs)
        if not model:
            self._json(400, {"error": "model is required"})
            return
        if not fake.has_model(model):
            self._json(404, {"error": f'model "{model}" not found, try pulling it first'})
            return
        if fault == "http500":
            self._json(500, {"error": "llama runner process has terminated: exit status 2"})
            return
        if fault == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        dim = fake.dim_for(model)
        if fault == "wrong_dim":
            dim = int(fake.fault_kw.get("dim", 512))
        vectors = [embed_text(text, dim) for text in inputs]
        if fault == "fewer_vectors":
            vectors = vectors[:-1]
        if fault == "nan" and vectors:
            vectors[0][0] = float("nan")
        if legacy:
            payload: dict[str, Any] = {"embedding": vectors[0] if vectors else []}
        else:
            payload = {
                "model": model,
                "embeddings": vectors,
                "total_duration": 1_000_000,
                "load_duration": 100_000,
                "prompt_eval_count": sum(len(tokens(t)) + 2 for t in inputs),
            }
        body = json.dumps(payload).encode("utf-8")
        if fault == "malformed_json":
            body = body[: max(1, len(body) // 2)]
        self._send(200, body)


class FakeOllama:
    """An Ollama look-alike on 127.0.0.1, served from a daemon thread.

    Args:
        models: Pulled model names (``"x"`` means ``"x:latest"``).
        dim: Vector dimensions of every model not in ``model_dims``.
        model_dims: Per-model dimensions, e.g. ``{"mxbai-embed-large": 1024}``.
        port: Port to bind; 0 picks a free one (kept across ``stop()``/``start()``).
        delay: Seconds every request waits (a permanent ``slow``).

    Attributes:
        url: ``http://127.0.0.1:PORT`` once started.
        calls: Number of ``/api/embed`` (and ``/api/embeddings``) requests.
        embedded_texts: Every input string received, in order, prefixes included.
        requests: ``(method, path)`` of every request.
        fault: The active fault name or ``None``; ``fault_kw`` its options.
    """

    def __init__(
        self,
        models: tuple[str, ...] | list[str] = DEFAULT_MODELS,
        *,
        dim: int = DEFAULT_DIM,
        model_dims: dict[str, int] | None = None,
        port: int = 0,
        delay: float = 0.0,
        version: str = "0.12.6",
    ) -> None:
        self.models = list(models)
        self.dim = dim
        self.model_dims = {_with_latest(k): v for k, v in (model_dims or {}).items()}
        self.port = port
        self.delay = delay
        self.version = version
        self.fault: str | None = None
        self.fault_kw: dict[str, Any] = {}
        self.calls = 0
        self.embedded_texts: list[str] = []
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------
    @property
    def url(self) -> str:
        """Base URL of the server."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the server is accepting connections."""
        return self._server is not None

    def start(self) -> FakeOllama:
        """Start serving (again, on the same port after a ``stop()``)."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", self.port), self)
        self.port = int(server.server_address[1])
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.name = f"fake-ollama-{self.port}"
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: new connections are refused and hung requests are released."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- configuration ---------------------------------------------------
    def set_fault(self, name: str | None, **kw: Any) -> None:
        """Switch to fault ``name`` (see the module docstring) or clear faults with ``None``.

        Args:
            name: The fault, or ``None``.
            **kw: ``seconds`` (slow, hang), ``n`` (fail_n_then_ok), ``dim`` (wrong_dim),
                ``paths`` (endpoints the fault applies to).
        """
        if name is not None and name not in FAULTS:
            raise ValueError(f"unknown fault {name!r}; expected one of {FAULTS}")
        with self._lock:
            self.fault = name
            self.fault_kw = dict(kw)
            if name == "fail_n_then_ok":
                self.fault_kw["remaining"] = int(kw.get("n", 2))

    def clear_fault(self) -> None:
        """Serve normally again."""
        self.set_fault(None)

    def reset_counters(self) -> None:
        """Zero ``calls`` and empty ``embedded_texts`` and ``requests``."""
        with self._lock:
            self.calls = 0
            self.embedded_texts.clear()
            self.requests.clear()

    def has_model(self, name: str) -> bool:
        """Whether ``name`` (or ``name:latest``) is pulled."""
        return _with_latest(name) in {_with_latest(m) for m in self.models}

    def dim_for(self, model: str) -> int:
        """Dimensions of ``model``'s vectors."""
        return self.model_dims.get(_with_latest(model), self.dim)

    # -- used by the handler ---------------------------------------------
    def _record_request(self, method: str, path: str) -> None:
        with self._lock:
            self.requests.append((method, path))

    def _fault_applies(self, path: str) -> bool:
        if self.fault is None:
            return False
        default = ("*",) if self.fault in _ALL_PATHS_FAULTS else ("/api/embed", "/api/embeddings")
        paths = self.fault_kw.get("paths", default)
        return "*" in paths or path in paths

    def _before_request(self, path: str) -> bool:
        """Apply delays; return False when the request must get no answer at all."""
        if self.delay > 0:
            self._stopping.wait(self.delay)
        fault, kw = self.fault, self.fault_kw
        if fault in _ALL_PATHS_FAULTS and self._fault_applies(path):
            seconds = float(kw.get("seconds", 0.2 if fault == "slow" else 60.0))
            self._stopping.wait(seconds)
            if self._stopping.is_set():
                return False
        return True

    def _embed_fault(self, inputs: list[str]) -> str | None:
        """Count an embed request and return the fault that applies to it."""
        with self._lock:
            self.calls += 1
            self.embedded_texts.extend(inputs)
            fault = self.fault
            if fault is None or fault in _ALL_PATHS_FAULTS or not self._fault_applies("/api/embed"):
                return None
            if fault == "fail_n_then_ok":
                if self.fault_kw.get("remaining", 0) > 0:
                    self.fault_kw["remaining"] -= 1
                    return "http500"
                return None
            return fault

    def _tags(self) -> dict[str, Any]:
        models = []
        for name in self.models:
            full = _with_latest(name)
            models.append(
                {
                    "name": full,
                    "model": full,
                    "modified_at": "2025-01-01T00:00:00Z",
                    "size": 274302450,
                    "digest": hashlib.sha256(full.encode()).hexdigest(),
                    "details": {
                        "format": "gguf",
                        "family": "nomic-bert",
                        "families": ["nomic-bert"],
                        "parameter_size": "137M",
                        "quantization_level": "F16",
                    },
                }
            )
        return {"models": models}


def main(argv: list[str] | None = None) -> int:
    """Run a FakeOllama until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds every request waits")
    parser.add_argument("--dim", type=int, default=DEFAULT_DIM)
    parser.add_argument("--model", action="append", dest="models", help="pulled model (repeatable)")
    parser.add_argument("--fault", choices=FAULTS, default=None)
    parser.add_argument("--print-port", action="store_true", help="print the port first")
    args = parser.parse_args(argv)

    fake = FakeOllama(tuple(args.models or DEFAULT_MODELS), dim=args.dim, port=args.port)
    fake.delay = args.delay
    if args.fault:
        fake.set_fault(args.fault)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    fake.start()
    if args.print_port:
        print(fake.port, flush=True)
    try:
        while not done.wait(0.2):
            pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
