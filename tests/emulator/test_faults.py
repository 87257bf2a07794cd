"""Fault injection: 500s, dropped connections, truncated bodies, delays, revocation after N."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import threading

import pytest
import requests

from mediaframe.emulator.faults import Faults, parse_delay


def me(emu, **kwargs) -> requests.Response:
    return requests.get(
        f"{emu.base_url}/api/v1/me/", params={"oauth_token": emu.token}, timeout=10, **kwargs
    )


def test_dropped_connection_gets_no_answer_over_a_socket(fresh_emulator) -> None:
    emu = fresh_emulator(drop_rate=1.0)
    with pytest.raises(requests.exceptions.ConnectionError):
        me(emu)


def test_dropped_connection_in_process_raises_connection_error(fresh_emulator) -> None:
    emu = fresh_emulator(drop_rate=1.0)
    with emu.requests_session() as session, pytest.raises(requests.exceptions.ConnectionError):
        session.get(f"{emu.inprocess_url}/api/v1/me/", params={"oauth_token": emu.token})


def test_truncated_body_is_not_valid_json(fresh_emulator) -> None:
    emu = fresh_emulator(truncate_rate=1.0)
    answer = me(emu)
    assert answer.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(answer.content)


def test_fault_draws_repeat_with_the_same_seed(fresh_emulator) -> None:
    def statuses(seed: int) -> list[int]:
        emu = fresh_emulator(fail_rate=0.5, fault_seed=seed)
        return [me(emu).status_code for _ in range(30)]

    first = statuses(5)
    assert first == statuses(5)
    assert set(first) == {200, 500}


def test_faults_change_live_and_spare_oauth(fresh_emulator) -> None:
    emu = fresh_emulator()
    assert me(emu).status_code == 200
    emu.set_faults(fail_rate=1.0)
    assert me(emu).status_code == 500
    token = requests.post(
        f"{emu.base_url}/api/oauthv2/token",
        data={
            "grant_type": "password",
            "client_id": emu.client_id,
            "username": "demo",
            "password": emu.password,
        },
        timeout=10,
    )
    assert token.status_code == 200
    emu.set_faults(fail_rate=0.0)
    assert me(emu).status_code == 200


def test_token_is_revoked_after_n_requests(fresh_emulator) -> None:
    emu = fresh_emulator(revoke_after=3)
    assert [me(emu).status_code for _ in range(4)] == [200, 200, 200, 401]
    assert me(emu).content == b""


def test_exactly_n_requests_pass_when_they_arrive_at_once(fresh_emulator) -> None:
    emu = fresh_emulator(revoke_after=3)
    arrivals = threading.Barrier(6, timeout=5)
    look_up = emu.accounts.user_of

    def look_up_together(*args, **kwargs):
        # Every request has checked its token before any goes on: the widest race there is.
        user = look_up(*args, **kwargs)
        with contextlib.suppress(threading.BrokenBarrierError):
            arrivals.wait()
        return user

    emu.accounts.user_of = look_up_together
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        codes = list(pool.map(lambda _: me(emu).status_code, range(6)))
    assert sorted(codes) == [200, 200, 200, 401, 401, 401]


def test_delay_draws_stay_in_range() -> None:
    faults = Faults(delay_ms=(20, 40), seed=3)
    delays = [faults.draw().delay for _ in range(50)]
    assert all(0.020 <= d <= 0.040 for d in delays)


@pytest.mark.parametrize(("text", "pair"), [("10-50", (10, 50)), ("7", (7, 7)), ("0-0", (0, 0))])
def test_parse_delay(text, pair) -> None:
    assert parse_delay(text) == pair


@pytest.mark.parametrize("text", ["50-10", "a-b", "-5"])
def test_parse_delay_refuses_nonsense(text) -> None:
    with pytest.raises(ValueError, match="MIN-MAX"):
        parse_delay(text)


def test_rates_outside_zero_one_are_refused() -> None:
    with pytest.raises(ValueError, match="fail_rate"):
        Faults(fail_rate=1.5)


def test_set_faults_reseeds_under_the_constructors_name(fresh_emulator) -> None:
    """``set_faults(fault_seed=S)`` restarts the draws as ``Emulator(fault_seed=S)`` starts them."""
    first = fresh_emulator(fail_rate=0.5, fault_seed=5)
    expected = [me(first).status_code for _ in range(30)]
    later = fresh_emulator()
    later.set_faults(fail_rate=0.5, fault_seed=5)
    assert [me(later).status_code for _ in range(30)] == expected
    later.set_faults(seed=5)  # the older spelling still works
    assert [me(later).status_code for _ in range(30)] == expected


def test_set_faults_refuses_two_different_seeds(fresh_emulator) -> None:
    with pytest.raises(ValueError, match="fault_seed"):
        fresh_emulator().set_faults(fault_seed=1, seed=2)
