"""Entry point: ``python -m reranker_server --model PATH_OR_HUB_ID [options]``."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

import uvicorn

from reranker_server.app import Limits, create_app
from reranker_server.scoring import Reranker


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="reranker_server", description=__doc__)
    parser.add_argument("--model", required=True, help="local path or hub id")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7788)
    parser.add_argument("--kind", choices=["auto", "causal", "cross-encoder"], default="auto")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--batch-tokens", type=int, default=8192)
    parser.add_argument("--max-documents", type=int, default=500)
    parser.add_argument("--max-query-chars", type=int, default=4000)
    parser.add_argument("--max-document-chars", type=int, default=20000)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    reranker = Reranker(
        args.model, kind=args.kind, max_length=args.max_length, batch_tokens=args.batch_tokens
    )
    limits = Limits(args.max_documents, args.max_query_chars, args.max_document_chars)
    uvicorn.run(create_app(reranker, limits), host=args.host, port=args.port, log_level="info")


if __name__ == "__main__":
    main()
