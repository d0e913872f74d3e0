"""Export a sentence-transformers BERT-family model to ONNX from its local
weights, once, into a models directory (nothing is downloaded).

Why not sentence-transformers' own ``backend="onnx"``: it needs ``optimum``,
whose current release pins transformers 4.x and would downgrade the shared
environment (transformers 5). The export below is torch's own exporter, the
graph is fused by onnxruntime's transformer optimizer, and int8 is
onnxruntime's dynamic quantisation (per-channel weights); pooling and
normalisation run in numpy (see ``onnx_backend``).

The files land under ``<models_dir>/<slug>/`` via a temporary name and an
atomic rename, so concurrent first uses by several processes are safe (the
last rename wins with identical content).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

EXPORT_VERSION = "1"  # bump when the export recipe changes: old files are ignored


def export_dir(models_dir: Path, model_path: str) -> Path:
    """The export's folder, keyed by the weights it was made from: the cache is shared
    by every home on the machine, so reinstalled or changed weights export anew."""
    key = f"{EXPORT_VERSION}\0{model_path}\0{weights_stamp(model_path)}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return models_dir / f"{Path(model_path).name or 'model'}-{digest}"


def weights_stamp(model_path: str) -> str:
    """Size and modification time of each weights file under ``model_path``."""
    root = Path(model_path)
    files = sorted(
        p for pattern in ("*.safetensors", "*.bin") for p in root.glob(pattern) if p.is_file()
    )
    return ";".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files)


def check_mean_pooling(model_path: str) -> None:
    """The numpy pooling implements mean pooling + normalisation only."""
    config = Path(model_path) / "1_Pooling" / "config.json"
    if config.is_file() and not json.loads(config.read_text()).get("pooling_mode_mean_tokens"):
        raise ValueError(f"{model_path}: the ONNX backend supports mean pooling only")


def ensure_exported(models_dir: Path, model_path: str, *, int8: bool) -> Path:
    """The ONNX file for ``model_path`` (fp32 fused, or int8), exporting it if missing."""
    target = export_dir(models_dir, model_path)
    fp32 = target / "model.onnx"
    if not fp32.is_file():
        _export_fp32(model_path, fp32)
    if not int8:
        return fp32
    quantised = target / "model-int8.onnx"
    if not quantised.is_file():
        _quantise(fp32, quantised)
    return quantised


def _atomic_target(final: Path) -> Path:
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{final.name}.", dir=final.parent)
    os.close(fd)
    return Path(name)


def _export_fp32(model_path: str, final: Path) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from onnxruntime.transformers.optimizer import optimize_model
    from transformers import AutoConfig, AutoModel

    log.info("embedding: exporting %s to ONNX (once) under %s", model_path, final.parent)
    check_mean_pooling(model_path)
    config = AutoConfig.from_pretrained(model_path)
    # Eager attention traces to plain ops the optimizer fuses into one Attention node.
    model = AutoModel.from_pretrained(model_path, attn_implementation="eager").eval()

    class _Hidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            return self.inner(input_ids=ids, attention_mask=mask, token_type_ids=types)[0]

    ids = torch.ones((2, 8), dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    raw = _atomic_target(final)
    try:
        with torch.no_grad():
            torch.onnx.export(
                _Hidden(model),
                (ids, torch.ones_like(ids), torch.zeros_like(ids)),
                str(raw),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes={n: {0: "batch", 1: "seq"} for n in [*names, "last_hidden_state"]},
                opset_version=17,
                dynamo=False,
            )
        fused = optimize_model(
            str(raw),
            model_type="bert",
            num_heads=int(config.num_attention_heads),
            hidden_size=int(config.hidden_size),
            opt_level=1,
        )
        fused.save_model_to_file(str(raw))
        os.replace(raw, final)
    finally:
        raw.unlink(missing_ok=True)


def _quantise(fp32: Path, final: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    log.info("embedding: quantising %s to int8 (once)", fp32)
    tmp = _atomic_target(final)
    try:
        quantize_dynamic(
            str(fp32),
            str(tmp),
            weight_type=QuantType.QInt8,
            per_channel=True,  # per-tensor int8 cost ~0.06 cosine on MiniLM; per-channel ~0.005
            # The fused Attention node is a com.microsoft op shape inference cannot type.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
