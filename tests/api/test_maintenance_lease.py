"""Several API processes on one store: one runs each maintenance round.

Two loops on one service stand for two processes (each names itself as the
lease's holder); the store's lease decides which one maintains.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hippocampus.api.maintenance import MaintenanceLoop, process_holder
from hippocampus.embed import HashingEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.model import NewMemory
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore

C = "team:payments"


@pytest.fixture
def svc(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    service = Hippocampus(EmbeddedStore(tmp_path / "data"), HashingEmbedder(), spacy_extractor)
    service.remember(C, NewMemory(content="redis pool size is 50 per worker"))
    yield service
    service.close()


def _maintained(loop: MaintenanceLoop, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The collections ``loop`` maintains from now on, in order."""
    done: list[str] = []
    monkeypatch.setattr(loop, "_maintain", lambda collection, reindex: done.append(collection))
    return done


def test_of_two_processes_one_runs_the_round_until_its_term_runs_out(
    svc: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = MaintenanceLoop(svc, interval_s=3600, holder="host:1")
    second = MaintenanceLoop(svc, interval_s=3600, holder="host:2")
    by_first, by_second = _maintained(first, monkeypatch), _maintained(second, monkeypatch)
    first.run_once()
    second.run_once()
    first.run_once()  # the holder renews its term
    assert (by_first, by_second) == ([C, C], [])
    # The first process stops; once its term is over the second takes over.
    assert svc.take_maintenance_turn("host:1", 0.0)
    second.run_once()
    first.run_once()
    assert (by_first, by_second) == ([C, C], [C])


def test_every_process_writes_its_own_queued_reinforcements_turn_or_not(
    svc: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert svc.take_maintenance_turn("elsewhere", 3600)
    flushed: list[bool] = []
    monkeypatch.setattr(svc, "flush_learning", lambda: flushed.append(True))
    loop = MaintenanceLoop(svc, interval_s=3600)
    done = _maintained(loop, monkeypatch)
    loop.run_once()
    assert flushed == [True] and done == []


def test_loops_of_one_process_share_its_name() -> None:
    assert process_holder() == process_holder()
    assert process_holder().count(":") == 2
