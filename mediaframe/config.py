"""Frozen settings, and the only reader of ``MEDIAFRAME_*`` environment variables."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from mediaframe.exceptions import ConfigurationError

__all__ = ["TOKEN_PLACEMENTS", "Connection", "Settings", "process_tricks"]

_N = TypeVar("_N", int, float)

#: Longest attempt: far above any answer, and far below what a socket timeout can hold.
_MAX_TIMEOUT = 7 * 24 * 3600

#: Where the token goes: ``auto`` tries the ``Authorization: OAuth`` header and falls back to the
#: ``oauth_token`` parameter when an older server refuses the header.
TOKEN_PLACEMENTS = ("auto", "header", "param")

#: The default largest answer, counted decompressed. An answer costs about 3.5 times its size
#: while it is read (the chunks, their joined copy, the parsed value), for each request in
#: flight: at 1 GiB a 1 MB gzip body could cost 3.5 GB. The largest page of any server the
#: emulator plays, 1,000 extended records pretty-printed as 3.x servers write them, is about
#: 14.5 MB: 768 MiB stays more than 50 times above it.
MAX_RESPONSE_BYTES = 768 << 20


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything that tunes mediaframe; build it with :meth:`from_env` or directly.

    Environment variables (all optional):

    ``MEDIAFRAME_CONFIG_DIR``   token profiles (default ``$XDG_CONFIG_HOME/mediaframe``)
    ``MEDIAFRAME_CACHE_DIR``    parquet cache (default ``$XDG_CACHE_HOME/mediaframe``)
    ``MEDIAFRAME_PROFILE``      profile to load when none is named (default ``default``)
    ``MEDIAFRAME_TIMEOUT``      seconds one attempt may take, connecting to last byte (default 30,
                                at most a week)
    ``MEDIAFRAME_RETRIES``      retries of a failed read (default 5)
    ``MEDIAFRAME_BACKOFF``      first backoff in seconds, doubled each retry (default 0.5)
    ``MEDIAFRAME_TOKEN_PLACEMENT``  ``auto``, ``header`` or ``param`` (default ``auto``)
    ``MEDIAFRAME_CONCURRENCY``  shards paged at once by a harvest (default 4)
    ``MEDIAFRAME_PER_PAGE``     page size of a harvest (default 1000, the usual cap)
    ``MEDIAFRAME_PROGRESS``     ``0`` silences progress bars (default ``1``)
    ``MEDIAFRAME_OFFLINE``      ``1`` reads only the cache, never the network (default ``0``)
    ``MEDIAFRAME_CACHE_TTL``    seconds a cached result is used as is before it is synced (3600)
    ``MEDIAFRAME_SYNC_LAG``     seconds re-read before the last sync, for clock skew (default 300)
    ``MEDIAFRAME_MAX_RESPONSE_BYTES``  largest answer read, counted decompressed (default 768 MiB)

    ``MEDIAFRAME_PROCESS_TRICKS`` (``0`` turns off the process-wide tricks) is read by
    :func:`process_tricks`, as it concerns the whole process rather than one client.
    """

    config_dir: Path
    cache_dir: Path
    profile: str = "default"
    timeout: float = 30.0
    retries: int = 5
    backoff: float = 0.5
    token_placement: str = "auto"
    concurrency: int = 4
    per_page: int = 1000
    progress: bool = True
    offline: bool = False
    cache_ttl: float = 3600.0
    sync_lag: float = 300.0
    #: An answer larger than this (after decompression) is dropped with ResponseTooLargeError:
    #: an endless body or a compression bomb cannot exhaust memory (see MAX_RESPONSE_BYTES).
    max_response_bytes: int = MAX_RESPONSE_BYTES

    def __post_init__(self) -> None:
        for name, kinds in _NUMBERS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, kinds):
                raise ConfigurationError(
                    f"{name} must be a {kinds[0].__name__}, not {type(value).__name__} {value!r}"
                )
            if not math.isfinite(value):  # type: ignore[arg-type]  # a number, checked above
                raise ConfigurationError(f"{name} must be a finite number, not {value!r}")
        if self.token_placement not in TOKEN_PLACEMENTS:
            raise ConfigurationError(
                f"token_placement must be one of {', '.join(TOKEN_PLACEMENTS)}, "
                f"not {self.token_placement!r}"
            )
        if self.timeout <= 0:
            raise ConfigurationError(f"timeout must be positive, not {self.timeout!r}")
        if self.timeout > _MAX_TIMEOUT:
            # past some 1e10 s the socket layer fails with a bare OverflowError on every call
            raise ConfigurationError(
                f"timeout must be at most {_MAX_TIMEOUT:,} s (a week), not {self.timeout!r}"
            )
        if self.cache_ttl < 0 or self.sync_lag < 0:
            raise ConfigurationError("cache_ttl and sync_lag must not be negative")
        if self.backoff < 0:
            raise ConfigurationError(f"backoff must not be negative, not {self.backoff!r}")
        for name in ("retries", "concurrency", "per_page", "max_response_bytes"):
            value = getattr(self, name)
            minimum = 0 if name == "retries" else 1
            if value < minimum:
                raise ConfigurationError(f"{name} must be at least {minimum}, not {value!r}")

    def replace(self, **changes: object) -> Settings:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``MEDIAFRAME_*`` variables, defaults elsewhere."""
        env = os.environ if environ is None else environ
        home = Path(env.get("HOME") or Path.home())
        xdg_config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
        xdg_cache = Path(env.get("XDG_CACHE_HOME") or home / ".cache")
        return cls(
            config_dir=Path(env.get("MEDIAFRAME_CONFIG_DIR") or xdg_config / "mediaframe"),
            cache_dir=Path(env.get("MEDIAFRAME_CACHE_DIR") or xdg_cache / "mediaframe"),
            profile=env.get("MEDIAFRAME_PROFILE") or "default",
            timeout=_number(env, "MEDIAFRAME_TIMEOUT", 30.0, float),
            retries=_number(env, "MEDIAFRAME_RETRIES", 5, int),
            backoff=_number(env, "MEDIAFRAME_BACKOFF", 0.5, float),
            token_placement=env.get("MEDIAFRAME_TOKEN_PLACEMENT") or "auto",
            concurrency=_number(env, "MEDIAFRAME_CONCURRENCY", 4, int),
            per_page=_number(env, "MEDIAFRAME_PER_PAGE", 1000, int),
            progress=_flag(env, "MEDIAFRAME_PROGRESS", True),
            offline=_flag(env, "MEDIAFRAME_OFFLINE", False),
            cache_ttl=_number(env, "MEDIAFRAME_CACHE_TTL", 3600.0, float),
            sync_lag=_number(env, "MEDIAFRAME_SYNC_LAG", 300.0, float),
            max_response_bytes=_number(
                env, "MEDIAFRAME_MAX_RESPONSE_BYTES", MAX_RESPONSE_BYTES, int
            ),
        )


@dataclasses.dataclass(frozen=True)
class Connection:
    """Where to connect when no profile is named: ``MEDIAFRAME_BASE_URL`` and ``MEDIAFRAME_TOKEN``.

    Read by the command line (a scheduler passes a token through the environment rather than a
    stored profile). The token never appears in the repr.
    """

    base_url: str | None = None
    token: str | None = dataclasses.field(default=None, repr=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Connection:
        env = os.environ if environ is None else environ
        return cls(
            base_url=env.get("MEDIAFRAME_BASE_URL") or None,
            token=(env.get("MEDIAFRAME_TOKEN") or "").strip() or None,
        )


_NUMBERS: dict[str, tuple[type, ...]] = {
    "timeout": (float, int),
    "retries": (int,),
    "backoff": (float, int),
    "concurrency": (int,),
    "per_page": (int,),
    "cache_ttl": (float, int),
    "sync_lag": (float, int),
    "max_response_bytes": (int,),
}


def _number(env: Mapping[str, str], name: str, default: _N, kind: Callable[[str], _N]) -> _N:
    raw = env.get(name)
    if raw in (None, ""):
        return default
    try:
        return kind(raw)
    except ValueError:
        raise ConfigurationError(
            f"{name}={raw!r} is not a valid {getattr(kind, '__name__', 'number')}; "
            "unset it or give a number"
        ) from None


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = (env.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigurationError(f"{name}={raw!r} is not a flag; use 1 or 0")


def process_tricks(environ: Mapping[str, str] | None = None) -> bool:
    """``MEDIAFRAME_PROCESS_TRICKS``: whether mediaframe may play its process-wide tricks (gc
    pauses, ``malloc_trim``, reader threads kept for the process; see ``mediaframe._process``).
    On unless it says ``0``; ``mediaframe.process_tricks()`` overrides it at run time.
    """
    return _flag(os.environ if environ is None else environ, "MEDIAFRAME_PROCESS_TRICKS", True)
