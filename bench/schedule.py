"""Which spaced-repetition scheduler keeps memories fresher for fewer reviews?

Each simulated memory has a hidden forgetting curve: the chance the user still
has it in mind ``t`` days after it last came up is ``exp(-t / S)``, with a
hidden stability ``S`` (days) drawn per memory. A scheduler decides, day by
day, which memories are due; each due memory is resurfaced and the user
answers from the hidden chance ``p`` at that moment:

- ``p > 0.9``: still fresh, the reminder came too early: *ignored*; S grows a little;
- ``0.5 <= p <= 0.9``: fading, the reminder lands: *used*; S grows by the
  memory's own factor (1.6-3.0);
- ``p < 0.5``: already gone: *dismissed* (the user no longer sees why it
  matters); relearned, S falls back toward where it started.

Both schedulers see only the engagement, through the engine's own rules (the
seed's metadata changes and each scheduler's review state), never ``S``.
Figures per scheduler: reviews per memory, the share of reviews that landed
(used), the share that came too early or too late, and the mean chance of
still having a memory in mind over all memory-days (retention).

    .venv/bin/python bench/schedule.py [--memories 400] [--days 180] [--seed 7] [--json]

Deterministic under a seed.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hippocampus.model import Memory, RetrievalMeta, content_hash
from hippocampus.schedule import Engagement, FsrsScheduler, Scheduler, SeedScheduler
from hippocampus.surface.rules import SurfaceConfig, engaged

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
CONTEXT = "schedule:-"


@dataclass
class Hidden:
    stability: float
    start: float
    growth: float
    last: float = 0.0  # day it last came up


@dataclass
class Figures:
    reviews: int = 0
    used: int = 0
    early: int = 0
    late: int = 0
    retention_sum: float = 0.0
    memory_days: int = 0

    def summary(self, memories: int) -> dict[str, float]:
        reviews = max(self.reviews, 1)
        return {
            "reviews_per_memory": round(self.reviews / memories, 2),
            "landed": round(self.used / reviews, 3),
            "too_early": round(self.early / reviews, 3),
            "too_late": round(self.late / reviews, 3),
            "retention": round(self.retention_sum / max(self.memory_days, 1), 3),
        }


def answer(hidden: Hidden, day: float) -> Engagement:
    """The user's answer to a reminder, and what it does to the hidden curve."""
    p = math.exp(-(day - hidden.last) / hidden.stability)
    hidden.last = day
    if p > 0.9:
        hidden.stability *= 1.1
        return "ignored"
    if p >= 0.5:
        hidden.stability *= hidden.growth
        return "used"
    hidden.stability = max(hidden.start, hidden.stability * 0.6)
    return "dismissed"


def run(scheduler: Scheduler, *, memories: int, days: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    half_life = SurfaceConfig().dismissal_half_life_days
    items: list[tuple[Memory, Hidden]] = []
    for i in range(memories):
        text = f"memory {i}"
        memory = Memory(
            id=f"m{i:04d}",
            collection="bench:schedule",
            content=text,
            created_at=START,
            updated_at=START,
            content_hash=content_hash(text),
            retrieval=RetrievalMeta(),
        )
        s0 = math.exp(rng.uniform(math.log(2.0), math.log(10.0)))
        items.append((memory, Hidden(stability=s0, start=s0, growth=rng.uniform(1.6, 3.0))))
    figures = Figures()
    for day in range(1, days + 1):
        now = START + timedelta(days=day)
        for n, (memory, hidden) in enumerate(items):
            figures.retention_sum += math.exp(-(day - hidden.last) / hidden.stability)
            figures.memory_days += 1
            if scheduler.urgency(memory, now) < 1.0:
                continue
            reply = answer(hidden, float(day))
            figures.reviews += 1
            figures.used += reply == "used"
            figures.early += reply == "ignored"
            figures.late += reply == "dismissed"
            updated = engaged(memory, reply, CONTEXT, now, half_life)
            review = scheduler.reviewed(memory, reply, now)
            items[n] = (
                updated.model_copy(
                    update={"retrieval": updated.retrieval.model_copy(update={"review": review})}
                ),
                hidden,
            )
    return figures.summary(memories)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=400)
    parser.add_argument("--days", type=int, default=180)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    schedulers: dict[str, Scheduler] = {"seed": SeedScheduler(), "fsrs": FsrsScheduler()}
    results = {
        name: run(s, memories=args.memories, days=args.days, seed=args.seed)
        for name, s in schedulers.items()
    }
    if args.json:
        print(json.dumps(results))
        return 0
    print(f"spaced repetition: {args.memories} memories, {args.days} days, seed {args.seed}")
    columns = ("reviews_per_memory", "landed", "too_early", "too_late", "retention")
    print(f"{'scheduler':<9} " + " ".join(f"{c:>18}" for c in columns))
    for name, figures in results.items():
        print(f"{name:<9} " + " ".join(f"{figures[c]:>18}" for c in columns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
