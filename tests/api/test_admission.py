"""Admission control: a few heavy requests execute at once, the rest wait in
order of arrival shifted by their lane's lead, and cheap requests never wait.

The queue is driven directly on an event loop with a clock the test moves; the
routes are driven through the app with a recall held inside the engine on an
event, so every interleaving is certain and nothing depends on timing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from hippocampus.api.admission import LEAD_S, Admission, Lane
from hippocampus.api.app import create_app
from hippocampus.api.errors import OverloadedError
from hippocampus.config import AdmissionSettings, HippoSettings
from hippocampus.errors import StoreUnavailableError
from hippocampus.service import Hippocampus
from tests.api.helpers import ALPHA, OPERATOR, AuditingClient, make_settings

WAIT = 60.0
C = "team:alpha"
BASE = f"/v1/collections/{C}"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def hold(admission: Admission, lane: Lane = Lane.DEFAULT) -> Callable[[], None]:
    """Take a slot; returns what gives it back."""
    slot = admission.slot(lane)
    await slot.__aenter__()

    def give_back() -> None:
        asyncio.get_running_loop().create_task(slot.__aexit__(None, None, None))

    return give_back


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def request(
    admission: Admission, served: list[str], name: str, lane: Lane = Lane.DEFAULT
) -> None:
    """A heavy request that notes its name in ``served`` once admitted."""
    async with admission.slot(lane):
        served.append(name)


def served_in_order(arrivals: list[tuple[str, Lane, float]]) -> list[str]:
    """The order in which requests arriving while the one slot is taken get it;
    each arrival is (name, lane, seconds after the one before)."""

    async def scenario() -> list[str]:
        clock = Clock()
        admission = Admission(1, max_wait_s=WAIT, clock=clock)
        order: list[str] = []
        give_back = await hold(admission)
        tasks = []
        for name, lane, after in arrivals:
            clock.now += after
            tasks.append(asyncio.create_task(request(admission, order, name, lane)))
            await settle()
        assert admission.waiting == len(arrivals)
        give_back()
        await asyncio.gather(*tasks)
        assert admission.running == 0
        return order

    return asyncio.run(scenario())


def test_requests_of_one_lane_are_served_in_order_of_arrival() -> None:
    arrivals = [(f"search{i}", Lane.DEFAULT, 0.01) for i in range(5)]
    assert served_in_order(arrivals) == [name for name, _, _ in arrivals]


def test_a_conversation_message_goes_ahead_of_heavy_requests_that_came_just_before() -> None:
    order = served_in_order(
        [
            ("remember", Lane.DEFAULT, 0.0),
            ("search", Lane.DEFAULT, 0.1),
            ("message", Lane.CONVERSATION, 0.1),
            ("second message", Lane.CONVERSATION, 0.1),
        ]
    )
    assert order == ["message", "second message", "remember", "search"]


def test_a_search_that_waited_longer_than_its_lead_goes_before_a_later_message() -> None:
    order = served_in_order(
        [
            ("search", Lane.DEFAULT, 0.0),
            ("message", Lane.CONVERSATION, LEAD_S[Lane.DEFAULT] + 0.1),
        ]
    )
    assert order == ["search", "message"]


def test_a_second_heavy_request_waits_until_the_first_leaves() -> None:
    async def scenario() -> None:
        admission = Admission(1, max_wait_s=WAIT)
        give_back = await hold(admission)
        served: list[str] = []
        task = asyncio.create_task(request(admission, served, "second"))
        await settle()
        assert not served and admission.waiting == 1 and admission.running == 1
        give_back()
        await task
        assert served == ["second"] and admission.waiting == 0 and admission.running == 0

    asyncio.run(scenario())


def test_as_many_requests_as_slots_execute_at_once() -> None:
    async def scenario() -> None:
        admission = Admission(3, max_wait_s=WAIT)
        for _ in range(3):
            await hold(admission)
        assert admission.running == 3 and admission.waiting == 0

    asyncio.run(scenario())


def test_a_request_that_waits_too_long_is_refused_and_takes_no_slot_with_it() -> None:
    async def scenario() -> None:
        admission = Admission(1, max_wait_s=0.01)
        give_back = await hold(admission)
        with pytest.raises(OverloadedError) as refused:
            async with admission.slot(Lane.CONVERSATION):
                pytest.fail("admitted while the slot was taken")
        assert refused.value.status_code == 503
        assert refused.value.headers["Retry-After"]
        give_back()
        await settle()
        assert admission.running == 0 and admission.waiting == 0
        async with admission.slot(Lane.DEFAULT):
            assert admission.running == 1

    asyncio.run(scenario())


def test_a_waiter_cancelled_as_it_is_handed_the_slot_passes_it_on() -> None:
    async def scenario() -> None:
        admission = Admission(1, max_wait_s=WAIT)
        give_back = await hold(admission)
        served: list[str] = []
        first = asyncio.create_task(request(admission, served, "first"))
        await settle()
        second = asyncio.create_task(request(admission, served, "second"))
        await settle()
        give_back()
        await asyncio.sleep(0)  # the slot is handed to the first waiter ...
        first.cancel()  # ... which goes away before it runs
        await asyncio.gather(first, second, return_exceptions=True)
        assert first.cancelled()
        assert served == ["second"]
        assert admission.running == 0 and admission.waiting == 0

    asyncio.run(scenario())


def test_a_cancelled_waiter_leaves_its_place_to_the_next() -> None:
    async def scenario() -> None:
        admission = Admission(1, max_wait_s=WAIT)
        give_back = await hold(admission)
        served: list[str] = []
        gone = asyncio.create_task(request(admission, served, "gone"))
        await settle()
        kept = asyncio.create_task(request(admission, served, "kept"))
        await settle()
        gone.cancel()
        await settle()
        assert admission.waiting == 1
        give_back()
        await kept
        assert served == ["kept"] and admission.running == 0

    asyncio.run(scenario())


def test_no_slots_means_no_limit() -> None:
    async def scenario() -> None:
        admission = Admission(0, max_wait_s=0.01)
        for _ in range(50):
            await hold(admission)
        assert admission.waiting == 0

    asyncio.run(scenario())


def test_the_default_slots_depend_on_the_store() -> None:
    assert AdmissionSettings().slots_for("embedded") == 1
    assert AdmissionSettings().slots_for("neo4j") == 0
    assert AdmissionSettings(slots=4).slots_for("neo4j") == 4


def test_admission_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIPPO_ADMISSION__SLOTS", "3")
    monkeypatch.setenv("HIPPO_ADMISSION__MAX_WAIT_S", "2.5")
    settings = HippoSettings()
    assert settings.admission == AdmissionSettings(slots=3, max_wait_s=2.5)


# -- through the routes ---------------------------------------------------------------


class HeldRecall:
    """The engine's recall, held on an event for the first call that arrives."""

    def __init__(self, service: Hippocampus, monkeypatch: pytest.MonkeyPatch) -> None:
        self.searching = threading.Event()
        self.release = threading.Event()
        real = service.recall
        taken = threading.Lock()
        first: list[bool] = []

        def held(*args: Any, **kwargs: Any) -> Any:
            with taken:
                is_first = not first
                first.append(True)
            if is_first:
                self.searching.set()
                assert self.release.wait(WAIT)
            return real(*args, **kwargs)

        monkeypatch.setattr(service, "recall", held)


class Call(threading.Thread):
    """A request in its own thread, keeping its response."""

    def __init__(self, client: TestClient, method: str, path: str, **kwargs: Any) -> None:
        super().__init__(daemon=True)
        self.args = (client, method, path, kwargs)
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.body: Any = None

    def run(self) -> None:
        client, method, path, kwargs = self.args
        r = client.request(method, path, headers=ALPHA, **kwargs)
        self.status, self.headers, self.body = r.status_code, dict(r.headers), r.json()

    def finish(self) -> int | None:
        self.join(timeout=WAIT)
        assert not self.is_alive(), "still waiting"
        return self.status


def served(tmp_path: Path, service: Hippocampus, **admission: Any) -> Iterator[TestClient]:
    settings = make_settings(tmp_path / "data", admission=AdmissionSettings(**admission))
    with AuditingClient(create_app(settings, service=service)) as client:
        r = client.post(
            f"{BASE}/memories",
            headers=ALPHA,
            json={"id": "pool", "content": "Raise the redis pool size", "source": OPERATOR},
        )
        assert r.status_code == 201
        yield client


@pytest.fixture
def one_slot(tmp_path: Path, service: Hippocampus) -> Iterator[TestClient]:
    yield from served(tmp_path, service, slots=1, max_wait_s=0.2)


@pytest.fixture
def no_limit(tmp_path: Path, service: Hippocampus) -> Iterator[TestClient]:
    yield from served(tmp_path, service, slots=0)


def test_a_search_holding_the_slot_holds_up_cheap_requests_but_not_the_next_search(
    one_slot: TestClient, service: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldRecall(service, monkeypatch)
    first = Call(one_slot, "POST", f"{BASE}/recall", json={"query": "redis pool"})
    first.start()
    try:
        assert held.searching.wait(WAIT)
        feedback = one_slot.post(
            f"{BASE}/memories/pool/feedback", headers=ALPHA, json={"helpful": True}
        )
        assert feedback.status_code == 200
        assert one_slot.get(f"{BASE}/memories/pool", headers=ALPHA).status_code == 200
        second = Call(one_slot, "POST", f"{BASE}/recall", json={"query": "redis pool"})
        second.start()
        assert second.finish() == 503
        assert second.body["error"]["code"] == "overloaded"
        assert second.headers["retry-after"]
        assert first.is_alive()
    finally:
        held.release.set()
    assert first.finish() == 200
    assert first.body["results"][0]["id"] == "pool"
    after = one_slot.post(f"{BASE}/recall", headers=ALPHA, json={"query": "redis pool"})
    assert after.status_code == 200


def test_a_message_waits_for_the_slot_a_search_holds(
    one_slot: TestClient, service: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldRecall(service, monkeypatch)
    first = Call(one_slot, "POST", f"{BASE}/recall", json={"query": "redis pool"})
    first.start()
    try:
        assert held.searching.wait(WAIT)
        message = Call(
            one_slot, "POST", f"{BASE}/conversations/c1/messages", json={"text": "redis pool?"}
        )
        message.start()
        assert message.finish() == 503
    finally:
        held.release.set()
    assert first.finish() == 200


def test_an_unauthenticated_request_is_refused_before_it_waits(
    one_slot: TestClient, service: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldRecall(service, monkeypatch)
    first = Call(one_slot, "POST", f"{BASE}/recall", json={"query": "redis pool"})
    first.start()
    try:
        assert held.searching.wait(WAIT)
        r = one_slot.post(f"{BASE}/recall", json={"query": "redis pool"})
        assert r.status_code == 401
    finally:
        held.release.set()
    assert first.finish() == 200


def test_without_a_limit_a_held_search_holds_up_no_other(
    no_limit: TestClient, service: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldRecall(service, monkeypatch)
    first = Call(no_limit, "POST", f"{BASE}/recall", json={"query": "redis pool"})
    first.start()
    try:
        assert held.searching.wait(WAIT)
        r = no_limit.post(f"{BASE}/recall", headers=ALPHA, json={"query": "redis pool"})
        assert r.status_code == 200
        assert first.is_alive()
    finally:
        held.release.set()
    assert first.finish() == 200


def test_a_heavy_request_that_fails_gives_its_slot_back(
    one_slot: TestClient, service: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = service.recall
    calls: list[int] = []

    def failing_once(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise StoreUnavailableError("the store went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "recall", failing_once)
    body = {"query": "redis pool"}
    assert one_slot.post(f"{BASE}/recall", headers=ALPHA, json=body).status_code == 503
    assert one_slot.post(f"{BASE}/recall", headers=ALPHA, json=body).status_code == 200
    assert one_slot.app.state.admission.running == 0  # type: ignore[attr-defined]
