"""The learning queue: what retrievals taught, written in batches."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from hippocampus.model import EdgeUpdate, Event
from hippocampus.services.context import Context

# The engine's one logger name: log configuration keyed on "hippocampus.service"
# covers every service.
logger = logging.getLogger("hippocampus.service")

QUEUE_KEPT = 4
"""While the queue's writes fail, it keeps at most this many ``flush_at`` of
updates; what fails beyond that is dropped (see ``_requeue``)."""


class LearningQueue:
    """Edge updates and events of bare retrievals, queued per collection and
    written in batches: by a writer thread of the queue's own once
    ``learning.flush_at`` of them wait, and by :meth:`flush`, which use,
    feedback, decay and the tier pass call before their own writes."""

    def __init__(self, context: Context) -> None:
        self._context = context
        self._pending: dict[str, tuple[list[EdgeUpdate], list[Event]]] = {}
        self._pending_lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._flush_due = False
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hippo-learning")

    def close(self) -> None:
        """Wait for the writer's flushes, then write what is still queued."""
        self._writer.shutdown(wait=True)
        self.flush()

    def learn(self, collection: str, updates: list[EdgeUpdate], event: Event) -> None:
        """Queue what a retrieval taught; written in batches (see :meth:`flush`).
        A full queue is written by the learning writer, never on the recall's
        thread: a write can wait on other writers' locks (on Neo4j, deadlock
        retries of several seconds), which no recall should."""
        with self._pending_lock:
            pending = self._pending.setdefault(collection, ([], []))
            pending[0].extend(updates)
            pending[1].append(event)
            size = sum(len(u) for u, _ in self._pending.values())
            due = size >= self._context.learning.flush_at and not self._flush_due
            if due:
                self._flush_due = True
        if due:
            self._writer.submit(self._flush_queued)

    def _flush_queued(self) -> None:
        """The learning writer's flush: its errors are logged (the updates stay
        queued for the next flush), since no caller waits for them."""
        with self._pending_lock:
            self._flush_due = False
        try:
            self.flush()
        except Exception:
            logger.exception("writing queued retrieval learning failed; it stays queued")

    def queued(self, collection: str, event_type: str = "retrieval") -> int:
        """Events of a type queued for the collection and not yet written."""
        with self._pending_lock:
            pending = self._pending.get(collection)
            return sum(1 for e in pending[1] if e.type == event_type) if pending else 0

    def flush(self) -> int:
        """Write queued retrieval reinforcements and events. Bare retrievals are
        batched so a recall never waits on a disk sync; a crash loses at most the
        unflushed batch of this weak, derived signal, never a memory.

        Returns:
            How many edge updates were written.
        """
        with self._flush_lock:  # a flush returns once all queued before it is written
            with self._pending_lock:
                pending, self._pending = self._pending, {}
            written = 0
            for collection, (updates, events) in list(pending.items()):
                try:
                    self._context.store.reinforce_edges(collection, updates)
                except Exception:
                    self._requeue(pending, collection, updates_written=False)
                    raise
                try:
                    self._context.store.append_events(collection, events)
                except Exception:
                    self._requeue(pending, collection, updates_written=True)
                    raise
                written += len(updates)
                del pending[collection]
            return written

    def _requeue(
        self,
        unwritten: dict[str, tuple[list[EdgeUpdate], list[Event]]],
        failed: str,
        *,
        updates_written: bool,
    ) -> None:
        """Put what a failed flush did not write back in front of the queue: the
        collection that failed (without its updates when they were written, so none
        is applied twice) and the collections after it. While writes keep failing
        (a full disk) the queue holds at most :data:`QUEUE_KEPT` flushes' worth;
        beyond that the batch that failed is dropped, as a crash would drop it."""
        if updates_written:
            unwritten[failed] = ([], unwritten[failed][1])
        with self._pending_lock:
            kept = sum(len(u) for u, _ in (*unwritten.values(), *self._pending.values()))
            if kept > QUEUE_KEPT * self._context.learning.flush_at:
                dropped = sum(len(u) for u, _ in unwritten.values())
                logger.warning("dropped %d queued retrieval updates: writes keep failing", dropped)
                return
            for collection, (updates, events) in unwritten.items():
                queued = self._pending.get(collection, ([], []))
                self._pending[collection] = (updates + queued[0], events + queued[1])
