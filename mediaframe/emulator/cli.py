"""The ``mediaframe emulator`` commands: serve the emulator, write its ground truth."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

import click

from mediaframe.emulator.faults import parse_delay
from mediaframe.emulator.flavours import FLAVOURS
from mediaframe.emulator.service import Emulator


def _delay(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, int]:
    try:
        return parse_delay(value) if value else (0, 0)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None


@click.group()
def emulator() -> None:
    """Run the Media Asset Service emulator (a local stand-in for a real server).

    \b
    Example:
      mediaframe emulator serve --records 5000 --cap 1000
    """


@emulator.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=0, show_default=True, help="Port; 0 picks a free one.")
@click.option("--records", default=5000, show_default=True, type=click.IntRange(min=0))
@click.option("--seed", default=0, show_default=True, help="Seed of the synthetic catalogue.")
@click.option(
    "--cap",
    default=1000,
    show_default=True,
    type=click.IntRange(min=0),
    help="Retrieval cap of searches.",
)
@click.option(
    "--flavour",
    default="contract",
    show_default=True,
    type=click.Choice(FLAVOURS),
    help="Server generation to speak: the contract's shape, a current or a legacy server.",
)
@click.option(
    "--fail-rate", default=0.0, type=click.FloatRange(0, 1), help="Share of answers that are 500."
)
@click.option(
    "--drop-rate", default=0.0, type=click.FloatRange(0, 1), help="Share of connections dropped."
)
@click.option(
    "--truncate-rate", default=0.0, type=click.FloatRange(0, 1), help="Share of bodies cut short."
)
@click.option(
    "--delay-ms", default=None, callback=_delay, metavar="MIN-MAX", help="Delay range per answer."
)
@click.option(
    "--revoke-after",
    default=None,
    type=click.IntRange(min=1),
    help="Revoke tokens after N requests.",
)
@click.option("--fault-seed", default=None, type=int, help="Seed of the fault draws.")
def serve(
    host: str,
    port: int,
    records: int,
    seed: int,
    cap: int,
    flavour: str,
    fail_rate: float,
    drop_rate: float,
    truncate_rate: float,
    delay_ms: tuple[int, int],
    revoke_after: int | None,
    fault_seed: int | None,
) -> None:
    """Serve until SIGINT or SIGTERM; print the demo credentials as one JSON line first.

    On stderr, a few lines say how to connect from Python and from the command line.

    \b
    Example:
      mediaframe emulator serve --records 5000 --port 8080
    """
    emu = Emulator(
        records=records, seed=seed, cap=cap, flavour=flavour, fail_rate=fail_rate,
        drop_rate=drop_rate, truncate_rate=truncate_rate, delay_ms=delay_ms,
        revoke_after=revoke_after, fault_seed=fault_seed, host=host, port=port,
    )  # fmt: skip
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    emu.start()
    try:
        print(json.dumps(emu.credentials), flush=True)
        click.echo(_how_to_connect(emu.base_url, records), err=True)
        while not stop.wait(0.2):
            pass
    finally:
        emu.stop()


def _how_to_connect(base_url: str, records: int) -> str:
    # The token and password are in the JSON line on stdout only: logs of stderr never hold them.
    return (
        f"Emulator serving {records:,} records at {base_url}; the JSON line on stdout holds its "
        "demo credentials (token, username, password, client_id, client_secret).\n"
        f'  From Python:  mf.connect("{base_url}", token=TOKEN)\n'
        f"  From the CLI: MEDIAFRAME_BASE_URL={base_url} MEDIAFRAME_TOKEN=TOKEN "
        "mediaframe records\n"
        f"                (or: mediaframe login --url {base_url} --token-stdin, then paste TOKEN)\n"
        "Stop it with Ctrl-C."
    )


@emulator.command()
@click.option("--records", default=5000, show_default=True, type=click.IntRange(min=0))
@click.option("--seed", default=0, show_default=True)
@click.option(
    "--kind", default="records", show_default=True, type=click.Choice(["records", "stories"])
)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Parquet file to write.")  # fmt: skip
def catalogue(records: int, seed: int, kind: str, output: Path) -> None:
    """Write the ground truth of a server with the same flags (`visible`: seen by demo).

    \b
    Example:
      mediaframe emulator catalogue --records 5000 -o truth.parquet
    """
    frame = Emulator(records=records, seed=seed).ground_truth(kind, user="*")
    frame.to_parquet(output, index=False)
    click.echo(f"wrote {len(frame)} {kind} to {output}")
