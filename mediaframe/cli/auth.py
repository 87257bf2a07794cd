"""``login``, ``logout`` and ``whoami``: profiles of stored tokens; secrets never as arguments."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from mediaframe import auth
from mediaframe.auth import Token, TokenStore
from mediaframe.cli.app import State, chosen_base_url, chosen_profile, main, once, reported
from mediaframe.cli.table import printable
from mediaframe.client import Client, connect
from mediaframe.config import Settings
from mediaframe.exceptions import ConfigurationError

# C1 controls (U+0080-U+009F), which json.dumps leaves as they are; some terminals obey them
_C1 = re.compile("[\x80-\x9f]")


def _no_plain_argument(ctx: click.Context, name: str, value: str | None) -> str | None:
    # A secret typed as an argument is visible to every user in `ps` and kept in shell history.
    if value is not None and ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE:
        raise click.UsageError(
            f"do not pass --{name.replace('_', '-')} a value on the command line (others can read "
            f"it in ps): give the option alone to be prompted, or set "
            f"MEDIAFRAME_{name.upper()}"
        )
    return value


def _stdin_line(what: str) -> str:
    line = sys.stdin.readline().rstrip("\r\n")
    if not line:
        raise click.UsageError(f"no {what} on standard input")
    return line


def _profile_name(state: State, profile: str | None, settings: Settings) -> str:
    """The profile a command acts on: ``--profile`` after the command or before it (the two
    must agree), else ``MEDIAFRAME_PROFILE``, else ``default``."""
    return chosen_profile(state, profile) or settings.profile


@main.command()
@click.option(
    "--url",
    "base_url",
    multiple=True,
    callback=once("service addresses"),
    help="Service root, e.g. https://assets.example.org (or --base-url before the command).",
)
@click.option(
    "--profile",
    multiple=True,
    callback=once("profiles"),
    help="Profile name to store (default: MEDIAFRAME_PROFILE or 'default').",
)
@click.option("--username", help="Log in with the password grant as this user.")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input.")
@click.option(
    "--password",
    envvar="MEDIAFRAME_PASSWORD",
    hidden=True,
    callback=lambda ctx, _, value: _no_plain_argument(ctx, "password", value),
)
@click.option("--oob", "flow", flag_value="oob", help="Open a URL anywhere, paste the code shown.")
@click.option("--browser", "flow", flag_value="browser", help="Open the browser here (loopback).")
@click.option("--implicit", "flow", flag_value="implicit", help="Paste the #access_token address.")
@click.option("--token-stdin", is_flag=True, help="Store a token read from standard input.")
@click.option("--client-id", envvar="MEDIAFRAME_CLIENT_ID", help="OAuth application client id.")
@click.option(
    "--client-secret",
    envvar="MEDIAFRAME_CLIENT_SECRET",
    prompt="Client secret",
    prompt_required=False,
    hide_input=True,
    default=None,
    help="Give the option alone to be prompted, or set MEDIAFRAME_CLIENT_SECRET.",
    callback=lambda ctx, _, value: _no_plain_argument(ctx, "client_secret", value),
)
@click.option("--redirect-uri", help="Registered callback (--browser: http://127.0.0.1:PORT/...).")
@click.pass_obj
@reported
def login(
    state: State,
    base_url: str | None,
    profile: str | None,
    username: str | None,
    password_stdin: bool,
    password: str | None,
    flow: str | None,
    token_stdin: bool,
    client_id: str | None,
    client_secret: str | None,
    redirect_uri: str | None,
) -> None:
    """Log in and store a token profile (file mode 0600); see docs/auth.md.

    \b
    Pick one way:
      --username U [--password-stdin]   password grant (prompted for the password otherwise)
      --oob                             remote kernels: open the URL anywhere, paste the code
      --browser --redirect-uri URI      a local browser and a loopback callback
      --implicit --redirect-uri URI     paste the address holding #access_token=
      --token-stdin                     a token you already have

    \b
    Example:
      mediaframe login --url https://assets.example.org --username ada --profile work
    """
    settings = state.settings
    name = _profile_name(state, profile, settings)
    base_url = chosen_base_url(state, base_url, option="--url")
    if not base_url:
        raise click.UsageError("give the service's address: --url https://assets.example.org")
    base_url = auth.check_base_url(base_url)
    token_stdin = token_stdin or state.token_stdin
    chosen = (username and "--username", flow and f"--{flow}", token_stdin and "--token-stdin")
    ways = [way for way in chosen if way]
    if len(ways) != 1:
        raise click.UsageError(
            "choose exactly one way to log in: --username, --oob, --browser, --implicit or "
            "--token-stdin (see `mediaframe login --help`)"
        )
    if not token_stdin and not client_id:
        raise click.UsageError("--client-id (or MEDIAFRAME_CLIENT_ID) is needed for this login")
    # Before any flow: a token the service issues cannot be taken back from here, and a name or
    # a folder refused only afterwards would throw away a login the person has just completed.
    TokenStore(settings.config_dir).check_writable(name)
    if username:
        if password_stdin:
            password = _stdin_line("password")
        elif password is None:
            password = click.prompt("Password", hide_input=True)
        client = connect(
            base_url,
            client_id=client_id,
            client_secret=client_secret,
            username=username,
            password=password,
            settings=settings,
        )
    else:
        if token_stdin:
            token = Token(_stdin_line("token"))
        else:
            assert client_id is not None and flow is not None
            token = _flow_login(
                state, base_url, settings, flow, client_id, client_secret, redirect_uri
            )
        client = connect(
            base_url,
            token=token,
            client_id=client_id,
            client_secret=client_secret,
            settings=settings,
        )
    with client:
        # Check the token works before storing it: a stored dead token only fails later.
        user = client.whoami()
        path = _save(client, name)
    click.echo(f"Logged in to {base_url} as {_who(user)}; profile {name!r} saved in {path}")


def _save(client: Client, name: str) -> Path:
    """Store the login as profile ``name``. The folder passed its check before the login, but
    the disk may have filled since: at a terminal the person may make room and try again
    rather than lose the login just completed; else the error says what to do."""
    while True:
        try:
            return client.save_profile(name)
        except ConfigurationError as err:
            if _at_a_terminal():
                click.echo(f"Not saved: {printable(err, one_line=True)}", err=True)
                question = "The login is held until you answer: try again"
                if click.confirm(question, default=True, err=True):
                    continue
            raise ConfigurationError(
                f"{err}, then run `mediaframe login --profile {name}` again"
            ) from err


def _at_a_terminal() -> bool:
    # a password or token read from standard input means no one is there to answer
    return sys.stdin.isatty()


def _flow_login(
    state: State,
    base_url: str,
    settings: Settings,
    flow: str,
    client_id: str,
    client_secret: str | None,
    redirect_uri: str | None,
) -> Token:
    """A token from one of the OAuth flows a person completes in a browser."""
    timeout = settings.timeout
    if flow == "oob":
        return auth.login_oob(
            base_url, client_id=client_id, client_secret=client_secret, ask=_ask, timeout=timeout
        )
    if not redirect_uri:
        raise click.UsageError(f"--{flow} needs --redirect-uri, the application's registered one")
    if flow == "browser":
        state.say("Opening the browser; waiting for the login to come back ...")
        return auth.login_browser(
            base_url,
            client_id=client_id,
            client_secret=client_secret,
            redirect_uri=redirect_uri,
            timeout=timeout,
        )
    return auth.login_implicit(base_url, client_id=client_id, redirect_uri=redirect_uri, ask=_ask)


def _ask(url: str) -> str:
    click.echo(
        f"Open this address in a browser, log in, and paste what you get:\n\n  {url}\n", err=True
    )
    return str(click.prompt("Code or address", err=True))


def _who(user: dict[str, Any]) -> str:
    login = user.get("login") or user.get("id") or "?"
    name, email = user.get("display_name"), user.get("email")
    extra = " ".join(part for part in (name, f"<{email}>" if email else None) if part)
    # the server's text, printed: no escape sequence of it may reach the terminal
    return printable(f"{login} ({extra})" if extra else login, one_line=True)


@main.command()
@click.option(
    "--profile",
    multiple=True,
    callback=once("profiles"),
    help="Profile to remove (default: MEDIAFRAME_PROFILE or 'default').",
)
@click.pass_obj
@reported
def logout(state: State, profile: str | None) -> None:
    """Forget a stored profile (the token stays valid until revoked in the service).

    \b
    Example:
      mediaframe logout --profile work
    """
    settings = state.settings
    name = _profile_name(state, profile, settings)
    store = TokenStore(settings.config_dir)
    if store.delete(name):
        click.echo(
            f"Logged out: profile {name!r} removed from {store.directory}. To invalidate the "
            "token itself, revoke it in the service's account settings."
        )
    else:
        click.echo(f"No profile {name!r} in {store.directory}; nothing to do.")


@main.command()
@click.option(
    "--profile",
    multiple=True,
    callback=once("profiles"),
    help="Profile to use (default: MEDIAFRAME_PROFILE or 'default').",
)
@click.option("--json", "as_json", is_flag=True, help="Print the user as JSON.")
@click.pass_obj
@reported
def whoami(state: State, profile: str | None, as_json: bool) -> None:
    """Print the user a stored profile (or a token) logs in as, never the token.

    \b
    Example:
      mediaframe whoami --profile work
    """
    if profile:
        state.profile = _profile_name(state, profile, state.settings)
    with state.connect() as client:
        user = client.whoami()
        if as_json:
            text = json.dumps(user, ensure_ascii=False, indent=2)  # escapes C0 controls
            click.echo(_C1.sub(lambda m: f"\\u{ord(m[0]):04x}", text))  # and now C1 ones
        else:
            where = f" [profile {client.profile}]" if client.profile else ""
            click.echo(f"{_who(user)} on {client.base_url}{where}")
