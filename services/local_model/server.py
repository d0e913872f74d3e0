"""Start llama-cpp-python's OpenAI-compatible server on Gemma 3 with its official template.

Run with .venv-llama's python (the only place llama_cpp is installed); the imports of
llama_cpp are inside the functions so Leaflab's venv can import this module.
"""

from __future__ import annotations

import argparse
from typing import Any

from services.local_model.template import (
    BOS_TOKEN,
    CHAT_FORMAT,
    EOS_TOKEN,
    GEMMA3_CHAT_TEMPLATE,
    STOP_TOKEN_IDS,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m services.local_model",
        description="llama.cpp's OpenAI-compatible server on a GGUF model, Gemma 3 template",
    )
    parser.add_argument("--model", required=True, help="path of the .gguf file")
    parser.add_argument("--alias", default="gemma-3-270m", help="model name served")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, default=8192, help="context window (tokens)")
    parser.add_argument("--n-threads", type=int, default=2)
    return parser.parse_args(argv)


def register_template() -> None:
    """Register Gemma 3's template under CHAT_FORMAT (the GGUF carries none)."""
    from llama_cpp import llama_chat_format

    formatter = llama_chat_format.Jinja2ChatFormatter(
        template=GEMMA3_CHAT_TEMPLATE,
        eos_token=EOS_TOKEN,
        bos_token=BOS_TOKEN,
        stop_token_ids=STOP_TOKEN_IDS,
    )
    llama_chat_format.LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        CHAT_FORMAT, formatter.to_chat_handler(), overwrite=True
    )


def build_app(args: argparse.Namespace) -> Any:
    """The server's FastAPI app: one model, single slot, llama.cpp's own behaviour."""
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    register_template()
    model = ModelSettings(
        model=args.model,
        model_alias=args.alias,
        n_ctx=args.n_ctx,
        n_threads=args.n_threads,
        n_threads_batch=args.n_threads,
        chat_format=CHAT_FORMAT,
        verbose=False,
    )
    server = ServerSettings(host=args.host, port=args.port)
    return create_app(server_settings=server, model_settings=[model])


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    args = parse_args(argv)
    app = build_app(args)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
