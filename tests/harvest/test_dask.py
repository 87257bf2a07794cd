"""Shards run on a multi-process Dask cluster give the same dataset as threads."""

import os
import socket
import time

import pandas as pd
import pytest

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from mediaframe.emulator.server import LoopbackServer
from mediaframe.exceptions import TokenRejectedError

from .test_stop import Front

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="session")
def flavour() -> str:
    """The contract's server only: the cluster does not depend on the answers' shape.

    (A current server, without a cap, answers in one shard.)
    """
    return "contract"


@pytest.fixture(scope="module")
def cluster():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as dask_client,
    ):
        yield dask_client


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # raised inside distributed itself
def test_dask_harvest_equals_the_threaded_one(cluster, fresh_emulator, tmp_path):
    # The default page (1,000) is bigger than the cap: a small shard counted by its whole page
    # would be fetched by the planner, every leaf, and nothing would be left for the cluster.
    emu = fresh_emulator(records=1500, seed=4, cap=150)
    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(progress=False)
    client = mf.connect(emu.base_url, token=emu.token, settings=settings)
    on_dask = client.records(cache_dir=str(tmp_path / "shared"), dask=cluster)
    threaded = client.records(cache_dir=str(tmp_path / "local"))
    pd.testing.assert_frame_equal(on_dask, threaded)
    report = mf.HarvestReport.from_frame(on_dask)
    assert report.complete and len(report.shards) > 2
    workers = {entry["worker"] for entry in report.shards}
    assert len(workers) == 2, "both worker processes fetched shards"
    here = f"{socket.gethostname()}:{os.getpid()}"
    assert here not in workers, "every shard is fetched on the cluster, none by the planner"
    truth = emu.ground_truth()
    assert len(on_dask) == len(truth)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # raised inside distributed itself
def test_pages_read_on_workers_are_counted_in_the_report(cluster, fresh_emulator, tmp_path):
    emu = fresh_emulator(records=1500, seed=4, cap=150)
    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(progress=False, per_page=50)
    client = mf.connect(emu.base_url, token=emu.token, settings=settings)
    on_dask = mf.HarvestReport.from_frame(
        client.records(cache_dir=str(tmp_path / "shared"), dask=cluster)
    )
    threaded = mf.HarvestReport.from_frame(client.records(cache_dir=str(tmp_path / "local")))
    paged = sum(entry["requests"] for entry in on_dask.shards)
    assert paged > len(on_dask.shards), "shards of several pages, paged on the workers"
    read = on_dask.page_reads["native"] + on_dask.page_reads["decoded"]
    assert read == threaded.page_reads["native"] + threaded.page_reads["decoded"]
    assert read >= paged, on_dask.page_reads


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # raised inside distributed itself
def test_offset_windows_paged_on_workers_meet(cluster, tmp_path):
    # a server without a cap is paged in offset windows; each worker keeps in its shard's entry
    # the keys its window begins after and ends on, and the windows are proven to meet on them
    with Emulator(records=1500, seed=4, flavour="current") as emu:
        settings = Settings.from_env({"HOME": str(tmp_path)}).replace(progress=False, per_page=100)
        client = mf.connect(emu.base_url, token=emu.token, settings=settings)
        frame = client.records(cache_dir=str(tmp_path / "shared"), dask=cluster)
        report = mf.HarvestReport.from_frame(frame)
        assert report.complete and len(frame) == len(emu.ground_truth())
        assert len(report.shards) == 4 and all(s["shard"]["window"] for s in report.shards)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # raised inside distributed itself
def test_a_token_revoked_on_the_cluster_cancels_the_shards_still_queued(cluster, tmp_path):
    emu = Emulator(records=3000, seed=4, cap=150)
    front = Front(emu, delay=0.02)  # a refusal takes longer than a cancel to reach the workers
    server = LoopbackServer(front)
    server.start()
    try:
        settings = Settings.from_env({"HOME": str(tmp_path)}).replace(progress=False, per_page=50)
        client = mf.connect(server.base_url, token=emu.token, settings=settings)
        client.records(cache_dir=str(tmp_path / "fresh"), dask=cluster)
        needed = len(front.statuses)
        emu.set_faults(revoke_after=needed // 2)  # while the workers page
        client = mf.connect(server.base_url, token=emu.token_for("demo"), settings=settings)
        front.statuses.clear()
        with pytest.raises(TokenRejectedError):
            client.records(cache_dir=str(tmp_path / "shared"), dask=cluster)
        idle(cluster)  # what the cluster still runs once the error is told asks the server too
    finally:
        server.stop()
    # a few a worker: its request in flight, and the tasks it began before the cancels reached
    # it (a task that runs is not stopped); every shard still queued sent the dead token: 23-24
    refused = front.statuses.count(401)
    assert refused <= 10, (refused, needed)


def idle(dask_client, timeout: float = 30.0) -> None:
    """Wait until no task is left on the cluster."""
    deadline = time.monotonic() + timeout
    while any(dask_client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.05)
