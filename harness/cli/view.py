"""`fablab view LAB`: a page on 127.0.0.1 that shows the lab as it is now and looks again by
itself (harness.report.live). Its first line of output is the page's URL."""
from __future__ import annotations

import argparse
import threading
import time
from pathlib import Path

from harness.lab import Lab


class _Page:
    """The page, made at most once a second however many look at it."""

    def __init__(self, lab: Lab, results: Path) -> None:
        self.lab, self.results = lab, results
        self._lock = threading.Lock()
        self._made, self._html = 0.0, b""
        self._reading = None  # the last snapshot's counters: the next page shows what happened since

    def html(self) -> bytes:
        from harness.faults.store import shown
        from harness.report.live import page, snapshot

        with self._lock:
            if time.monotonic() - self._made >= 1.0:
                snap = snapshot(self.lab, self.lab.state.topology, self.lab.state.runtime, shown(self.lab),
                                self.results, self._reading)
                self._html, self._made, self._reading = page(snap).encode(), time.monotonic(), snap.reading
            return self._html


def serve(lab: Lab, port: int, results: Path, ready=print) -> None:
    import http.server  # here: every fablab command builds the parser that names this module

    page = _Page(lab, results)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path not in ("/", "/index.html"):
                self.send_error(404)
                return
            try:
                body, status = page.html(), 200
            except Exception as e:  # the lab went away, a node is gone: say so on the page
                body, status = f"<html><body><h1>{lab.name}</h1><p>cannot look at it: {e}</p></body></html>".encode(), 503
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # quiet: the URL line is what a caller reads
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    ready(f"http://127.0.0.1:{server.server_address[1]}/", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()


def cmd_view(args: argparse.Namespace) -> int:
    lab = Lab.attach(args.lab)
    try:
        serve(lab, args.port, Path(args.results))
    except KeyboardInterrupt:
        return 130
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("view", help="a live page of a running lab on 127.0.0.1 (its URL is the first line printed): "
                                    "topology, cable states and counters, sessions, faults, the last checks")
    s.add_argument("lab")
    s.add_argument("--port", type=int, default=0, help="the port to listen on (default: a free one)")
    s.add_argument("--results", default="results", metavar="DIR",
                   help="where `fablab check` wrote its runs (default: results), for the last verdicts")
    s.set_defaults(func=cmd_view)
