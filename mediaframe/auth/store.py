"""The token store: named profiles, one private file each, written atomically."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from mediaframe.exceptions import ConfigurationError
from mediaframe.files import replace_atomically
from mediaframe.tokens import Token, check_base_url, register_secret

__all__ = ["Profile", "TokenStore"]


_PROFILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


@dataclasses.dataclass(frozen=True, repr=False)
class Profile:
    """What a stored profile holds: the service URL, the token and how to refresh it."""

    base_url: str
    token: Token
    client_id: str | None = None
    #: Stored only with a refresh token, which cannot be used without it.
    client_secret: str | None = None

    def __post_init__(self) -> None:
        register_secret(self.client_secret)

    def __repr__(self) -> str:
        return f"Profile({self.base_url!r}, token={self.token!r}, client_id={self.client_id!r})"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"base_url": self.base_url, **self.token.to_dict()}
        if self.client_id:
            data["client_id"] = self.client_id
        if self.client_secret and self.token.refresh_token:
            data["client_secret"] = self.client_secret
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Profile:
        return cls(
            base_url=check_base_url(data["base_url"]),
            token=Token.from_oauth(data),
            client_id=data.get("client_id"),
            client_secret=data.get("client_secret"),
        )


class TokenStore:
    """Named profiles, one JSON file each, in ``<config_dir>/profiles/`` (directory 0700).

    Files are created with mode 0600 from the first byte (never loosened then tightened) and
    replaced atomically, so a crash leaves the old profile or the new one, never half of one.

    Examples
    --------
    >>> store = TokenStore(Settings.from_env().config_dir)             # doctest: +SKIP
    >>> store.save("work", Profile("https://assets.example.org", Token("...")))  # doctest: +SKIP
    """

    def __init__(self, config_dir: Path | str) -> None:
        self.directory = Path(config_dir) / "profiles"

    def __repr__(self) -> str:
        return f"TokenStore({str(self.directory)!r})"

    def path(self, name: str) -> Path:
        """The file of profile ``name`` (which must be a plain name, not a path)."""
        if not isinstance(name, str) or not _PROFILE_NAME.fullmatch(name):
            raise ConfigurationError(
                f"profile name {name!r} is not valid: use letters, digits, '_', '-' and '.'"
            )
        return self.directory / f"{name}.json"

    def names(self) -> list[str]:
        """The stored profile names, sorted."""
        if not self.directory.is_dir():
            return []
        return sorted(p.stem for p in self.directory.glob("*.json"))

    def load(self, name: str) -> Profile:
        """Read profile ``name``.

        Raises
        ------
        ConfigurationError
            No such profile, a damaged file, or a file others may read.
        """
        path = self.path(name)
        problem = None
        try:
            mode = path.stat().st_mode
            # a FIFO would block the read for ever, a device (a link to /dev/zero) never end it
            raw = path.read_bytes() if stat.S_ISREG(mode) else None
        except FileNotFoundError:
            raise ConfigurationError(
                f"no profile {name!r} in {self.directory}: run `{login_command(name)}` (the "
                "service's address, your OAuth application's client id and your user; "
                "`mediaframe login --help` shows the other ways in), or try mediaframe on a local "
                "service: `mediaframe emulator serve`"
            ) from None
        except OSError as err:  # not readable by this user (written by `sudo`?), a link loop
            problem = err.strerror or type(err).__name__
        if problem is not None or raw is None:
            raise ConfigurationError(
                f"cannot read profile file {path} ({problem or 'not a regular file'}): check "
                f"what it is and who owns it, or remove it and run `{login_command(name)}` again"
            )
        if os.name == "posix" and mode & 0o077:
            raise ConfigurationError(
                f"{path} can be read by other users: run `chmod 600 {path}` (or log in again)"
            )
        try:
            return Profile.from_dict(json.loads(raw))
        # OverflowError: an expiry or lifetime of 400 digits, which no float holds
        except (ValueError, KeyError, TypeError, OverflowError) as err:
            damage = type(err).__name__
        # raised out here, not in the except block: a JSONDecodeError keeps the whole file (the
        # token, the client secret) in its `doc`, and would ride along as __context__
        raise ConfigurationError(
            f"profile file {path} is damaged ({damage}): run `{login_command(name)}` again"
        )

    def save(self, name: str, profile: Profile) -> Path:
        """Write profile ``name`` atomically with mode 0600; return its path.

        A write that fails (a full disk) leaves the old profile, or none, and raises
        :class:`ConfigurationError`; the caller still holds the token and decides what to keep.
        """
        path = self.path(name)
        self._make_directory()
        payload = json.dumps(profile.to_dict(), indent=2).encode()
        try:
            # created 0600 from the first byte, flushed, renamed over the old one, and the rename
            # flushed too: a crash cannot bring back a refresh token the service has since retired
            replace_atomically(str(path), payload, durable=True)
        except OSError as err:  # a full or read-only disk, a folder in the file's place
            raise ConfigurationError(
                f"cannot write profile {name!r} in {self.directory} ({_reason(err)}): "
                f"{_WRITABLE_ADVICE}"
            ) from err
        return path

    def check_writable(self, name: str) -> Path:
        """Refuse now, before a login spends a token, a profile :meth:`save` could not write.

        Checks the name, creates the folder and asks the system whether this user may write in
        it; returns the profile's path. A full disk still shows only when :meth:`save` writes.
        """
        path = self.path(name)
        self._make_directory()
        if path.is_dir() or not os.access(self.directory, os.W_OK | os.X_OK):
            why = "a folder has the profile's name" if path.is_dir() else "not writable"
            raise ConfigurationError(
                f"cannot write profile {name!r} in {self.directory} ({why}): {_WRITABLE_ADVICE}"
            )
        return path

    @contextlib.contextmanager
    def locked(self, name: str) -> Iterator[None]:
        """Hold profile ``name`` against other processes (and other clients of this one).

        A refresh is done under it: two notebooks of one profile would otherwise both spend
        the same refresh token, and a service that rotates refresh tokens refuses the second
        (which then has to log in again). The lock file sits beside the profile, mode 0600.
        """
        self.path(name)  # the name checked before it names a file
        self._make_directory()
        try:
            fd = os.open(self.directory / f".{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as err:
            raise ConfigurationError(
                f"cannot lock profile {name!r} in {self.directory} ({err.strerror}): check "
                "who owns that directory"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def delete(self, name: str) -> bool:
        """Remove profile ``name``; whether there was one."""
        path = self.path(name)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError as err:  # a read-only disk, a folder of another user, a folder named so
            raise ConfigurationError(
                f"cannot remove profile {name!r} from {self.directory} ({_reason(err)}): check "
                f"what {path} is and who owns that folder, or remove the file yourself"
            ) from err
        return True

    def _make_directory(self) -> None:
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            if os.name == "posix" and self.directory.stat().st_mode & 0o077:
                os.chmod(self.directory, 0o700)
        except OSError as err:  # a file in the folder's place, a read-only disk, another owner
            raise ConfigurationError(
                f"cannot create the profile folder {self.directory} ({_reason(err)}): "
                f"{_WRITABLE_ADVICE}"
            ) from err


_WRITABLE_ADVICE = (
    "make it a folder this user can write in (no file in its place or its parents', space on "
    "its disk, not read-only), or set MEDIAFRAME_CONFIG_DIR to a folder you can write"
)


def login_command(name: str) -> str:
    """The login that makes profile ``name`` anew: a profile that is missing or damaged gives
    none of what it needs, so the command names each."""
    return f"mediaframe login --profile {name} --url URL --client-id ID --username NAME"


def _reason(err: OSError) -> str:
    return err.strerror or type(err).__name__
