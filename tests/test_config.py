"""Settings come from MEDIAFRAME_* variables and refuse values that cannot work."""

from pathlib import Path

import pytest

from mediaframe.config import Settings
from mediaframe.exceptions import ConfigurationError


def test_defaults_follow_xdg():
    settings = Settings.from_env({"HOME": "/home/ada"})
    assert settings.config_dir == Path("/home/ada/.config/mediaframe")
    assert settings.cache_dir == Path("/home/ada/.cache/mediaframe")
    assert settings.profile == "default"
    assert settings.token_placement == "auto"
    assert settings.progress is True and settings.offline is False


def test_environment_overrides():
    settings = Settings.from_env(
        {
            "HOME": "/home/ada",
            "XDG_CONFIG_HOME": "/xdg",
            "MEDIAFRAME_CACHE_DIR": "/var/cache/mf",
            "MEDIAFRAME_PROFILE": "work",
            "MEDIAFRAME_TIMEOUT": "2.5",
            "MEDIAFRAME_RETRIES": "0",
            "MEDIAFRAME_TOKEN_PLACEMENT": "param",
            "MEDIAFRAME_CONCURRENCY": "8",
            "MEDIAFRAME_PROGRESS": "0",
            "MEDIAFRAME_OFFLINE": "yes",
        }
    )
    assert settings.config_dir == Path("/xdg/mediaframe")
    assert settings.cache_dir == Path("/var/cache/mf")
    assert (settings.profile, settings.timeout, settings.retries) == ("work", 2.5, 0)
    assert (settings.token_placement, settings.concurrency) == ("param", 8)
    assert settings.progress is False and settings.offline is True


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("MEDIAFRAME_TIMEOUT", "soon", "not a valid float"),
        ("MEDIAFRAME_TIMEOUT", "0", "timeout must be positive"),
        ("MEDIAFRAME_TIMEOUT", "1e10", "timeout must be at most"),  # was a bare OverflowError
        ("MEDIAFRAME_RETRIES", "-1", "retries must be at least 0"),
        ("MEDIAFRAME_CONCURRENCY", "0", "concurrency must be at least 1"),
        ("MEDIAFRAME_TOKEN_PLACEMENT", "cookie", "token_placement must be one of"),
        ("MEDIAFRAME_OFFLINE", "maybe", "is not a flag"),
    ],
)
def test_bad_values_say_what_to_do(name, value, fragment):
    with pytest.raises(ConfigurationError, match=fragment):
        Settings.from_env({"HOME": "/h", name: value})


def test_settings_are_frozen_and_replace_validates(tmp_path):
    settings = Settings(config_dir=tmp_path, cache_dir=tmp_path)
    with pytest.raises(AttributeError):
        settings.timeout = 1  # type: ignore[misc]
    assert settings.replace(per_page=50).per_page == 50
    with pytest.raises(ConfigurationError):
        settings.replace(per_page=0)
