"""A request that fails for good stops the whole harvest at once: no shard queued behind it runs
its own retries against a server that is down or sends a revoked token again, the user hears
the first error, and what finished is kept for the rerun."""

import json
import threading
import time
from typing import Any

import pytest
from rewriting import Rewriting

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from mediaframe.exceptions import ServerError, TokenRejectedError
from mediaframe.harvest import engine
from mediaframe.harvest.stop import Stop, Stopped

from .fake import FakeService
from .test_engine import run
from .test_sync import NOW, first_harvest, run_sync

CONCURRENCY, RETRIES = 4, 2
# One call's worth: a request and its retries; the harvest's threads, each with one call at most.
CALL = 1 + RETRIES
THREADS = CONCURRENCY + engine._READERS
_DOWN = json.dumps(
    {
        "meta": {"http_code": 503, "error_type": "Service Unavailable", "error_message": "down"},
        "response": {},
    }
).encode()


class Front(Rewriting):
    """The emulator behind a front that keeps every answer's status, and answers 503 to every
    request after its ``down_after``-th (an outage) until told otherwise; each answer after
    ``delay`` seconds (a network between), when given."""

    def __init__(self, emu: Emulator, *, down_after: int | None = None, delay: float = 0.0) -> None:
        super().__init__(emu)
        self.down_after, self.delay = down_after, delay
        self.statuses: list[int] = []
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        time.sleep(self.delay)
        with self._lock:
            down = self.down_after is not None and len(self.statuses) >= self.down_after
            if down:
                self.statuses.append(503)

        def kept(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            with self._lock:
                self.statuses.append(int(status.split()[0]))
            return start_response(status, headers)

        if down:
            start_response(
                "503 Service Unavailable",
                [("Content-Type", "application/json"), ("Content-Length", str(len(_DOWN)))],
            )
            return [_DOWN]
        return super().__call__(environ, kept)

    def after_first_failure(self) -> int:
        """Requests answered after the first that failed."""
        first = next(i for i, status in enumerate(self.statuses) if status != 200)
        return len(self.statuses) - first - 1


def connect(emu: Emulator, front: Front, cache, **knobs: Any) -> mf.Client:
    settings = Settings.from_env({"HOME": str(cache)}).replace(
        cache_dir=cache,
        progress=False,
        per_page=100,
        concurrency=CONCURRENCY,
        retries=RETRIES,
        backoff=0.001,
        **knobs,
    )
    return mf.connect(
        emu.inprocess_url, token=emu.token, settings=settings, session=front.session()
    )


# 6,000 records under a cap of 200: ~40 shards of two pages. The outage begins while the plan
# is made (after 15 requests), or while shards are paged (after 100, of ~127 in all).
@pytest.mark.parametrize("down_after", [15, 100])
def test_an_outage_stops_the_harvest_within_a_call_of_each_thread(tmp_path, down_after):
    emu = Emulator(records=6000, seed=3, cap=200)
    front = Front(emu, down_after=down_after)
    with pytest.raises(ServerError):
        connect(emu, front, tmp_path / "cache").records()
    # a call in flight on each thread when the server went down may run out its retries, and
    # no other is begun (every shard queued ran its own: 44-47 more after 100; 19-24 after 15)
    assert front.after_first_failure() < THREADS * CALL, front.statuses[down_after:]


def test_the_rerun_after_an_outage_resumes_what_finished(tmp_path):
    emu = Emulator(records=6000, seed=3, cap=200)
    fresh = Front(emu)
    connect(emu, fresh, tmp_path / "fresh").records()
    front = Front(emu, down_after=100)
    with pytest.raises(ServerError):
        connect(emu, front, tmp_path / "cache").records()
    front.down_after, failed = None, len(front.statuses)
    report = mf.HarvestReport.from_frame(connect(emu, front, tmp_path / "cache").records())
    assert report.complete and report.resumed_shards > 0
    assert len(front.statuses) - failed < len(fresh.statuses) / 2, (
        len(front.statuses) - failed,
        len(fresh.statuses),
    )


@pytest.mark.parametrize("revoke_after", [20, 60])  # while planning; while paging
def test_a_revoked_token_is_sent_again_only_by_the_requests_in_flight(tmp_path, revoke_after):
    emu = Emulator(records=6000, seed=3, cap=200, revoke_after=revoke_after, delay_ms=(2, 6))
    front = Front(emu)
    with pytest.raises(TokenRejectedError):
        connect(emu, front, tmp_path / "cache").records()
    # the requests on the wire beside the first refused, and one that took the slot it
    # gave back before the harvest heard of it (13 and 22 were sent)
    refused = front.statuses.count(401)
    assert refused - 1 <= CONCURRENCY, front.statuses[revoke_after:]


class Failing:
    """``service``, whose ``at``-th search and every one after raise ``error``."""

    def __init__(self, service: FakeService, at: int, error: Exception) -> None:
        self.service, self.at, self.error = service, at, error
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, **params: Any) -> Any:
        with self._lock:
            self.calls += 1
            failing = self.calls >= self.at
        if failing:
            raise self.error
        return self.service(**params)


def test_a_failed_search_cancels_the_shards_queued_behind_it(tmp_path):
    service = FakeService.build(3000, cap=100)
    _, fresh = run(service, tmp_path / "fresh", concurrency=2)
    failing = Failing(FakeService.build(3000, cap=100), fresh.requests // 2, ServerError("down"))
    with pytest.raises(ServerError, match="down"):
        run(failing, tmp_path, concurrency=2)
    # no transport here: no retry, and only the searches begun beside it (two threads send,
    # two more read answers) come after the first that failed
    assert failing.calls - failing.at < 4, (failing.calls, failing.at, fresh.requests)


def test_a_stop_tells_its_first_failure_and_refuses_every_read_after_it():
    stop, reads = Stop(), []
    first = ServerError("first")

    def read(**params):
        reads.append(params)
        if params["n"] == 1:
            raise first
        return params["n"]

    guarded = stop.guarding(read)
    assert guarded(n=0) == 0 and not stop.stopped
    with pytest.raises(ServerError):
        guarded(n=1)
    with pytest.raises(Stopped):
        guarded(n=2)
    assert [r["n"] for r in reads] == [0, 1], "nothing sent once stopped"
    assert stop.fail(TokenRejectedError("later")) is first and stop.first is first
    slots = stop.slots(2)
    with pytest.raises(Stopped):
        slots.acquire()
    with pytest.raises(ValueError):
        slots.release()  # the slot refused was given back: none is left to release


def test_a_sync_stops_at_its_first_failed_search(tmp_path):
    service = FakeService.build(3000, cap=100, days=300)
    first_harvest(service, tmp_path / "h")
    service.touch(5, NOW)
    began, failed = service.requests, []

    def down(params):
        # the changed pass needs a few searches: those of the keys pass after them are refused
        if service.requests - began > 30:
            failed.append(params)
            raise ServerError("down")

    service.after_search = down
    with pytest.raises(ServerError, match="down"):
        run_sync(service, tmp_path / "h")
    # only the searches begun beside the first refused (24 more were asked: every shard queued)
    assert len(failed) - 1 < THREADS, len(failed)
