"""A tiny local HTTP server answering Prometheus' instant-query API (GET /api/v1/query) with a result the test
sets: the `--throttle-guard` of the shared job. Not a real Prometheus on purpose: a test must know the very
moment the guard starts firing (to count the batches until the rate drops), and a real one would add a scrape
interval and a rule evaluation between the test's switch and the answer."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FIRING = [{"metric": {"__name__": "produce_latency_p99_seconds"}, "value": [0, "0.9"]}]


class QueryApiServer:
    def __init__(self):
        self.result = []  # what every query returns now; FIRING makes the guard fire
        self.queries = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                owner.queries += 1
                body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": owner.result}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
