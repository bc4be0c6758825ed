#!/usr/bin/env python3
"""A legacy FCM endpoint as a small gateway runs it: Python's ThreadingHTTPServer with an accept queue of 5
(request_queue_size), HTTP/1.1 keep-alive, and a handler that takes --delay-ms to answer. A client that opens dozens
of connections in the same instant overflows that queue: the connections left out wait in TCP's SYN retries (1, 3,
7, 15, 31 s), and their requests arrive late or after the client has given up and sent them again. For
Tests/IntegrationTests/ConnectionRampIntegrationTests.swift.

    python3 small-backlog-fcm.py [--delay-ms 50]

POST /fcm/send answers FCM's legacy 200 with one result per request and counts the request by its message's
data.id. Prints one JSON line {"port": P} once listening (127.0.0.1, ephemeral). POST /stats answers
{"received": N, "distinct": N, "duplicates": N} (duplicates: requests whose data.id had arrived before).
"""
import argparse
import json
import os
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--delay-ms", type=int, default=50)
options = parser.parse_args()

counts = {}
lock = threading.Lock()


class Server(ThreadingHTTPServer):
    request_queue_size = 5
    daemon_threads = True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/stats":
            with lock:
                return self.answer({"received": sum(counts.values()), "distinct": len(counts),
                                    "duplicates": sum(count - 1 for count in counts.values())})
        ident = str((json.loads(body or b"{}").get("data") or {}).get("id"))
        with lock:
            counts[ident] = counts.get(ident, 0) + 1
        time.sleep(options.delay_ms / 1000)
        self.answer({"multicast_id": 1, "success": 1, "failure": 0, "canonical_ids": 0,
                     "results": [{"message_id": "0:" + ident}]})

    def answer(self, value):
        reply = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *arguments):
        pass


# A test stops it with SIGTERM, which the process starting it may have blocked or ignored (and this one inherits).
signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
server = Server(("127.0.0.1", 0), Handler)
print(json.dumps({"port": server.server_address[1]}), flush=True)
server.serve_forever()
