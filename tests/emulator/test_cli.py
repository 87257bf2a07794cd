"""The `mediaframe emulator` commands, run as a user would."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import requests
from click.testing import CliRunner

from mediaframe.cli import main

KEYS = {"base_url", "client_id", "client_secret", "redirect_uri", "username", "password", "token"}


def test_serve_prints_credentials_serves_and_stops_on_sigterm() -> None:
    command = [
        str(Path(sys.executable).parent / "mediaframe"),
        "emulator",
        "serve",
        "--records",
        "200",
        "--cap",
        "50",
    ]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            creds = json.loads(proc.stdout.readline())
            human = [proc.stderr.readline() for _ in range(5)]
            assert f'mf.connect("{creds["base_url"]}", token=TOKEN)' in human[1]
            assert f"MEDIAFRAME_BASE_URL={creds['base_url']} MEDIAFRAME_TOKEN=TOKEN" in human[2]
            assert creds["token"] not in "".join(human)
            assert set(creds) == KEYS
            assert creds["base_url"].startswith("http://127.0.0.1:")
            answer = requests.get(
                f"{creds['base_url']}/api/v1/search/",
                params={"oauth_token": creds["token"], "per_page": 5},
                timeout=10,
            )
            assert answer.status_code == 200
            assert answer.json()["response"]["available_results"] == 50
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 0


def test_catalogue_writes_ground_truth_with_visibility(tmp_path) -> None:
    out = tmp_path / "truth.parquet"
    result = CliRunner().invoke(
        main, ["emulator", "catalogue", "--records", "300", "--seed", "3", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    frame = pd.read_parquet(out)
    assert len(frame) == 300
    assert {"databox_id", "record_id", "base_id", "sha256", "title", "visible"} <= set(
        frame.columns
    )
    assert frame["visible"].any() and not frame["visible"].all()
