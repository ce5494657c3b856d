"""An engagement is all or nothing under ``kill -9``.

A child process engages an offer and is SIGKILLed at a chosen point: inside the
engagement's one transaction, after the memory, the surfacing record, the
learned state, the edges and the event were all written to it but before it
commits; or just after it commits, before the caller hears back. Either way a
retry then applies the seed's rules once in all: the first crash left nothing
(the retry applies them), the second left everything (the retry is refused as
already recorded).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hippocampus.embed import HashingEmbedder
from hippocampus.errors import ConflictError
from hippocampus.extract import KeywordConceptExtractor
from hippocampus.model import NewMemory
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.surface import SurfaceConfig

C = "team:payments"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
MESSAGE = "the redis connection pool is exhausted during the checkout load test"
LOW = {t: 0.05 for t in ("debugging", "help-seeking", "exploration", "casual")}
ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def opened(data: Path) -> Iterator[Hippocampus]:
    svc = service(data)
    try:
        yield svc
    finally:
        svc.close()


def service(data: Path) -> Hippocampus:
    return Hippocampus(
        EmbeddedStore(data),
        HashingEmbedder(),
        KeywordConceptExtractor(),
        surfacing=SurfaceConfig(thresholds=LOW, default_threshold=0.05),
        random_seed=3,
    )


def offer(data: Path) -> str:
    """A data dir with one memory and one offer of it; the offer's id."""
    with opened(data) as svc:
        topics = list(svc.extractor.extract_many([MESSAGE])[0].concepts)[:3]
        svc.remember_many(
            C,
            [
                NewMemory(
                    id="pool",
                    content="Raise the redis connection pool before checkout load tests",
                    concepts=topics,
                    triggers=[],
                )
            ],
            now=T0,
        )
        outcome = svc.message(C, "c1", MESSAGE, at=T0, conversation_type="debugging")
        (insight,) = outcome.insights
        return insight.surfacing_id


def crash_while_engaging(data: Path, surfacing_id: str, point: str) -> None:
    child = subprocess.run(
        [sys.executable, __file__, str(data), surfacing_id, point],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr


def engaged_state(svc: Hippocampus, surfacing_id: str) -> tuple[int, float, int, str | None]:
    """Uses, helpful votes, engagement events, and the offer's recorded engagement."""
    meta = svc.get(C, "pool").retrieval
    events = sum(1 for e in svc.store.iter_events(C) if e.type == "engagement")
    record = svc.store.get_states(C, [f"surfacing:{surfacing_id}"])[f"surfacing:{surfacing_id}"]
    return meta.usage_count, meta.helpful_votes, events, record.get("engagement")


@pytest.mark.parametrize("point", ["before-commit", "after-commit"])
def test_a_retry_after_kill_9_applies_the_engagement_once(tmp_path: Path, point: str) -> None:
    data = tmp_path / "data"
    surfacing_id = offer(data)
    crash_while_engaging(data, surfacing_id, point)
    later = T0 + timedelta(minutes=5)
    with opened(data) as svc:
        if point == "before-commit":
            assert engaged_state(svc, surfacing_id) == (0, 0.0, 0, None)
            svc.engage(C, surfacing_id, "used", now=later)
        else:
            assert engaged_state(svc, surfacing_id) == (1, 1.0, 1, "used")
        with pytest.raises(ConflictError):
            svc.engage(C, surfacing_id, "used", now=later)
        assert engaged_state(svc, surfacing_id) == (1, 1.0, 1, "used")
        assert svc.surfacing_metrics(C).engagements["used"] == 1


def _engage_and_die(data: Path, surfacing_id: str, point: str) -> None:
    """The child: engage, and SIGKILL itself at ``point``."""
    from hippocampus.store.embedded import tables

    def die(*_: Any) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    svc = service(data)
    if point == "before-commit":
        # The events are the last thing written inside the transaction.
        real = tables.insert_events

        def written_then_die(*args: Any) -> None:
            real(*args)
            die()

        tables.insert_events = written_then_die  # type: ignore[assignment]
    else:
        svc.surfacer.on_engaged = die  # called once the engagement has committed
    svc.engage(C, surfacing_id, "used", now=T0 + timedelta(minutes=1))
    raise SystemExit("the engagement returned: the kill point was never reached")


if __name__ == "__main__":
    _engage_and_die(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
