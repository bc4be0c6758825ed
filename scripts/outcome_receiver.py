#!/usr/bin/env python3
"""An outcome-webhook receiver for tests and benchmarks: verifies every request with the Standard Webhooks
reference library (PyPI `standardwebhooks`, from scripts/python-sdks' venv) and logs it.

    outcome_receiver.py --secret-file FILE --log FILE [--fail-first N] [--hold FILE]

Listens on an ephemeral loopback port and prints it on the first line of standard output. Each request is appended
to --log as one JSON line: {"id", "verified", "status" (the answer given), "received_at" (Unix ms), "data" (the
payload's items)}. It answers 503 with `Retry-After: 1` to the first --fail-first requests and to every request
while the --hold file exists, 401 to a request whose signature does not verify, and 204 otherwise.
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--secret-file", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--hold")
    options = parser.parse_args()
    webhook = Webhook(open(options.secret_file).read().strip())
    lock = threading.Lock()
    state = {"failures_left": options.fail_first}
    log = open(options.log, "a", buffering=1)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            headers = {name.lower(): value for name, value in self.headers.items()}
            try:
                payload = webhook.verify(body, headers)
                verified = True
            except WebhookVerificationError:
                payload, verified = json.loads(body), False
            with lock:
                if not verified:
                    status = 401
                elif state["failures_left"] > 0 or (options.hold and os.path.exists(options.hold)):
                    state["failures_left"] = max(0, state["failures_left"] - 1)
                    status = 503
                else:
                    status = 204
                log.write(json.dumps({
                    "id": headers.get("webhook-id"), "verified": verified, "status": status,
                    "received_at": int(time.time() * 1000), "type": payload.get("type"),
                    "data": payload.get("data", []),
                }) + "\n")
            self.send_response(status)
            if status == 503:
                self.send_header("Retry-After", "1")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *arguments):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
