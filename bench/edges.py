"""Figures of the bounds on answers: hostile loopback servers against the transport.

Run: ``.venv/bin/python bench/edges.py [--limit-mib 64] [--bomb-mib 512] [--timeout 2]``

Prints, for each hostile server, how long the call was held, how many bytes crossed the socket,
and the peak Python memory (tracemalloc) of the call:

- a server dripping one byte a second (``timeout``, ``retries=0``): held about ``timeout``;
- a server dripping its status line and headers one byte a second: held about ``timeout`` too;
- an endless chunked body: cut at the size limit;
- a gzip bomb (``--bomb-mib`` decompressed from well under 1 MiB on the wire): cut at the
  limit, counted after decompression.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import socket
import socketserver
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

from mediaframe.config import Settings
from mediaframe.exceptions import MediaframeError
from mediaframe.http import Transport

Behaviour = Callable[[socket.socket], int]


def _head(sock: socket.socket, *headers: str) -> None:
    lines = ["HTTP/1.1 200 OK", "Content-Type: application/json", *headers, "", ""]
    sock.sendall("\r\n".join(lines).encode())


def drip(sock: socket.socket) -> int:
    _head(sock, "Content-Length: 3600")
    for _ in range(3600):  # an hour, if nobody hangs up
        sock.sendall(b" ")
        time.sleep(1)
    return 3600


def drip_head(sock: socket.socket) -> int:
    head = b"HTTP/1.1 200 OK\r\nX-Padding: " + b"." * 3600 + b"\r\n\r\n"
    for byte in head[:3600]:  # an hour of status line and headers, if nobody hangs up
        sock.sendall(bytes([byte]))
        time.sleep(1)
    return 3600


def endless(sock: socket.socket) -> int:
    _head(sock, "Transfer-Encoding: chunked")
    chunk, sent = b"[" * 65536, 0
    while sent < 64 << 30:
        sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        sent += len(chunk)
    return sent


def bomb(expanded: int) -> tuple[Behaviour, int]:
    packed = gzip.compress(b" " * expanded, compresslevel=9)

    def behave(sock: socket.socket) -> int:
        _head(sock, "Content-Encoding: gzip", f"Content-Length: {len(packed)}")
        sock.sendall(packed)
        return len(packed)

    return behave, len(packed)


@contextlib.contextmanager
def serving(behaviour: Behaviour, sent: list[int]) -> Iterator[str]:
    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.recv(65536)
            with contextlib.suppress(OSError):  # the client hung up: that is the point
                sent.append(behaviour(self.request))

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def measure(name: str, behaviour: Behaviour, settings: Settings) -> None:
    sent: list[int] = []
    with serving(behaviour, sent) as url:
        tracemalloc.start()
        started = time.monotonic()
        try:
            Transport(url, token="bench-t0ken", settings=settings).get("/api/v1/me/")
            outcome = "answered"
        except MediaframeError as err:
            outcome = type(err).__name__
        held = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    print(f"{name:<28} {outcome:<22} held {held:6.2f} s   peak {peak / 2**20:7.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit-mib", type=int, default=64, help="MEDIAFRAME_MAX_RESPONSE_BYTES")
    parser.add_argument("--bomb-mib", type=int, default=512, help="the bomb, decompressed")
    parser.add_argument("--timeout", type=float, default=2.0, help="MEDIAFRAME_TIMEOUT")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp())
    settings = Settings.from_env({"HOME": str(home)}).replace(
        timeout=args.timeout, retries=0, max_response_bytes=args.limit_mib << 20
    )
    print(f"timeout {args.timeout} s, retries 0, limit {args.limit_mib} MiB")
    measure("drip, 1 byte/s", drip, settings)
    measure("header drip, 1 byte/s", drip_head, settings)
    measure("endless chunked body", endless, settings.replace(timeout=120.0))
    behaviour, packed = bomb(args.bomb_mib << 20)
    name = f"gzip bomb {packed / 2**10:.0f} KiB->{args.bomb_mib} MiB"
    measure(name, behaviour, settings.replace(timeout=120.0))


if __name__ == "__main__":
    main()
