"""The server's maintenance schedule: a background thread started by the app's
lifespan (never by a constructor), stopped with it."""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid

from hippocampus.errors import HippoError
from hippocampus.service import Hippocampus

logger = logging.getLogger(__name__)

_TOKEN = uuid.uuid4().hex[:8]
"""Tells this process apart from one with the same host name and pid (another
container's): a forked worker differs by its pid."""


def process_holder() -> str:
    """This process's name as a holder of the maintenance lease."""
    return f"{socket.gethostname()}:{os.getpid()}:{_TOKEN}"


class MaintenanceLoop:
    """Every ``interval_s``: write queued retrieval reinforcements, then on every
    collection run the decay pass (the store applies it once per day, so most
    runs change nothing), the tier pass once a day (which also retrains the
    quality model when enough feedback came in), drop the events the log's
    retention no longer keeps (one index seek when there are none), compute
    the graph health ``/stats`` shows once what is kept is older than
    ``graph_health_max_age_s``, and re-embed a bounded batch of memories still
    waiting for a vector from the current model. A failing
    embedder is given a chance to recover first (a model missing at start is
    loaded once it is there); while it still fails, re-embedding waits.

    Of several API processes sharing a store (``hippo serve --workers N``, or
    several servers on one Neo4j), one runs the round: each writes its own
    queued reinforcements, then only the holder of the store's maintenance
    lease goes on. The lease's term is the interval, renewed before each
    collection, so a long round keeps it, and when its holder stops another
    process takes over within an interval.

    Args:
        service: the engine to maintain.
        interval_s: seconds between runs; 0 disables the loop.
        reindex_batch: memories re-embedded per collection per run.
        holder: this process's name for the lease (:func:`process_holder`).
    """

    def __init__(
        self,
        service: Hippocampus,
        *,
        interval_s: float,
        reindex_batch: int = 256,
        holder: str | None = None,
    ) -> None:
        self._service = service
        self._interval = interval_s
        self._reindex_batch = reindex_batch
        self._holder = holder or process_holder()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._interval <= 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="hippo-maintenance", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def run_once(self) -> None:
        """One round; errors are logged, never raised, so the schedule survives them
        (and a collection that fails does not hold up the others)."""
        try:
            self._service.flush_learning()  # this process's queue: every process
            if not self._my_turn():
                return
            collections = self._service.collections()
            embedder_ok = self._service.recover_embedder().healthy
        except HippoError as e:
            logger.warning("maintenance round failed: %s", e.message)
            return
        except Exception:
            logger.exception("maintenance round failed")
            return
        for collection in collections:
            if self._stop.is_set():
                return
            try:
                if not self._my_turn():  # the term ran out and another took it
                    return
                self._maintain(collection, reindex=embedder_ok)
            except HippoError as e:
                logger.warning("maintenance of %s failed: %s", collection, e.message)
            except Exception:
                logger.exception("maintenance of %s failed", collection)

    def _my_turn(self) -> bool:
        """Take or renew the maintenance lease; false while another process holds it."""
        if self._service.take_maintenance_turn(self._holder, self._interval):
            return True
        logger.debug("maintenance round left to the process holding the lease")
        return False

    def _maintain(self, collection: str, *, reindex: bool) -> None:
        service = self._service
        decayed = service.decay(collection)
        if decayed:
            logger.info("decay pass on %s: %d edges decayed", collection, decayed)
        if service.tier_pass_due(collection):
            report = service.apply_tiers(collection)
            if report.archived or report.quarantined or report.restored:
                logger.info(
                    "tier pass on %s: %d archived, %d quarantined, %d restored",
                    collection,
                    report.archived,
                    report.quarantined,
                    report.restored,
                )
        service.compact_events(collection)
        if service.graph_health_due(collection):
            service.refresh_graph_health(collection)
        if reindex and self._reindex_batch > 0 and service.pending_count(collection):
            service.reindex(collection, limit=self._reindex_batch)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.run_once()
