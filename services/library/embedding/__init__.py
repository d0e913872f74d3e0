"""Dense embeddings: PyTorch or ONNX Runtime (fp32 / int8) backends, loaded once
per process, batched by length; nothing is ever downloaded.

See ``base`` (shared batching), ``torch_backend``, ``onnx_backend`` +
``onnx_export``, ``hash_cache`` (Postgres, once per chunk text) and
``disk_cache`` (eval and benches).
"""

from services.library.embedding.base import BACKENDS, Backend, Embedder, default_model_path
from services.library.embedding.disk_cache import CachedEmbedder
from services.library.embedding.factory import build_embedder, embedder_from_settings
from services.library.embedding.hash_cache import HashCachedEmbedder
from services.library.embedding.onnx_backend import OnnxEmbedder
from services.library.embedding.torch_backend import TorchEmbedder

__all__ = [
    "BACKENDS",
    "Backend",
    "CachedEmbedder",
    "Embedder",
    "HashCachedEmbedder",
    "OnnxEmbedder",
    "TorchEmbedder",
    "build_embedder",
    "default_model_path",
    "embedder_from_settings",
]
