"""Hostile HTTP servers on loopback sockets: drips, endless bodies, compression bombs.

Each serves one scripted behaviour per connection, bounded in bytes and time so that a client
that fails to stop still lets the test end.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator

Behaviour = Callable[[socket.socket], None]

ENVELOPE = json.dumps({"meta": {"http_code": 200}, "response": {"ok": True}}).encode()


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.settimeout(30)
        with contextlib.suppress(OSError):
            _read_request(self.request)
            self.server.behaviour(self.request)  # type: ignore[attr-defined]


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@contextlib.contextmanager
def serving(behaviour: Behaviour) -> Iterator[str]:
    """Serve ``behaviour`` on 127.0.0.1; yields the base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.behaviour = behaviour  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _read_request(sock: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            missing = int(line.split(b":")[1]) - len(body)
            while missing > 0:
                chunk = sock.recv(missing)
                if not chunk:
                    return
                missing -= len(chunk)


def _head(sock: socket.socket, *headers: str, status: str = "200 OK") -> None:
    lines = [f"HTTP/1.1 {status}", "Content-Type: application/json", *headers, "", ""]
    sock.sendall("\r\n".join(lines).encode())


def drip(byte_every: float = 0.25, total: int = 40) -> Behaviour:
    """Headers at once, then one byte of the body every ``byte_every`` seconds."""

    def behave(sock: socket.socket) -> None:
        body = (b" " * total + ENVELOPE)[:total]
        _head(sock, f"Content-Length: {total}")
        for byte in body:
            sock.sendall(bytes([byte]))
            time.sleep(byte_every)

    return behave


def drip_head(byte_every: float = 0.25, total: int = 120) -> Behaviour:
    """The status line and headers one byte every ``byte_every`` seconds (``total`` bytes of
    them, then the body): each byte comes well within a read timeout, the whole never does."""

    def behave(sock: socket.socket) -> None:
        padding = "X-Padding: " + "." * total
        head = f"HTTP/1.1 200 OK\r\n{padding}\r\nContent-Length: {len(ENVELOPE)}\r\n\r\n"
        for byte in head.encode()[:total]:
            sock.sendall(bytes([byte]))
            time.sleep(byte_every)

    return behave


def endless_chunks(most: int = 64 << 20) -> Behaviour:
    """A chunked body that never ends (well: ``most`` bytes, then the server gives up)."""

    def behave(sock: socket.socket) -> None:
        _head(sock, "Transfer-Encoding: chunked")
        chunk = b"[" * 65536
        sent = 0
        while sent < most:
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
        sock.sendall(b"0\r\n\r\n")

    return behave


def gzip_bomb(expanded: int = 64 << 20) -> Behaviour:
    """A small gzip body that expands to ``expanded`` bytes of spaces."""
    bomb = gzip.compress(b" " * expanded, compresslevel=9)

    def behave(sock: socket.socket) -> None:
        _head(sock, "Content-Encoding: gzip", f"Content-Length: {len(bomb)}")
        sock.sendall(bomb)

    return behave


def gzipped(body: bytes) -> Behaviour:
    """A well-behaved gzip answer."""
    packed = gzip.compress(body)

    def behave(sock: socket.socket) -> None:
        _head(sock, "Content-Encoding: gzip", f"Content-Length: {len(packed)}")
        sock.sendall(packed)

    return behave


def answering(status: str, body: bytes) -> Behaviour:
    """Always the same answer, e.g. ``answering("400 Bad Request", envelope)``."""

    def behave(sock: socket.socket) -> None:
        _head(sock, f"Content-Length: {len(body)}", "Connection: close", status=status)
        sock.sendall(body)

    return behave


def silent_after_headers(seconds: float = 10) -> Behaviour:
    """Headers announcing a body, then nothing for ``seconds``."""

    def behave(sock: socket.socket) -> None:
        _head(sock, "Content-Length: 100")
        time.sleep(seconds)

    return behave


def raw(head: bytes, body: bytes) -> Behaviour:
    """The status line and headers exactly as given (bytes a header parser may read oddly),
    then ``body`` and the end of the connection."""

    def behave(sock: socket.socket) -> None:
        sock.sendall(head.rstrip(b"\r\n") + b"\r\nConnection: close\r\n\r\n" + body)

    return behave
