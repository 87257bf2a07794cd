"""Benchmark of redaction: a long text scanned for known secrets and runs of them.

Run: ``.venv/bin/python bench/redact.py [--megabytes 1] [--secrets 5]``

Every message, log line and error mediaframe shows passes through ``tokens.redact``, which hides
known secrets whole and any run of :func:`~mediaframe.tokens.least_run` of their characters. It
prints the time to redact a long text holding one cut secret at its end, against one plain
``str.replace`` scan of the same text per secret form (the least any redaction costs), and the
ratio for a text twice as long (about 2 when the scan is linear).
"""

from __future__ import annotations

import argparse
import secrets
import timeit

from mediaframe.tokens import Token, redact


def timed(work, repeat: int = 5) -> float:
    return min(timeit.repeat(work, number=1, repeat=repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=1.0, help="length of the text")
    parser.add_argument("--secrets", type=int, default=5, help="tokens known to the process")
    args = parser.parse_args()
    tokens = [secrets.token_hex(16) for _ in range(args.secrets)]
    for token in tokens:
        Token(token)
    line = "Lorem ipsum dolor sit amet, 0123456789abcdef. "
    text = line * int(args.megabytes * 1e6 / len(line)) + tokens[0][:20]
    assert redact(text).endswith(". ***"), "the cut token was not hidden"
    took = timed(lambda: redact(text))
    baseline = timed(lambda: [text.replace(token, "***") for token in tokens * 6])
    twice = timed(lambda: redact(text + text))
    print(f"redact {len(text) / 1e6:.1f} MB, {args.secrets} secrets: {took * 1e3:.1f} ms")
    print(f"plain scans, one per secret form: {baseline * 1e3:.1f} ms ({took / baseline:.1f} x)")
    print(f"twice the text: {twice * 1e3:.1f} ms ({twice / took:.2f} x; linear is about 2)")


if __name__ == "__main__":
    main()
