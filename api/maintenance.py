"""The server's maintenance schedule: a background thread started by the app's
lifespan (never by a constructor), stopped with it."""

from __future__ import annotations

import logging
import threading

from engine.errors import HippoError
from engine.service import Hippocampus

logger = logging.getLogger(__name__)


class MaintenanceLoop:
    """Every ``interval_s``: write queued retrieval reinforcements, then run the
    decay pass on every collection (the store applies it once per day, so most
    runs change nothing).

    Args:
        service: the engine to maintain.
        interval_s: seconds between runs; 0 disables the loop.
    """

    def __init__(self, service: Hippocampus, *, interval_s: float) -> None:
        self._service = service
        self._interval = interval_s
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
        """One round; errors are logged, never raised, so the schedule survives them."""
        try:
            self._service.flush_learning()
            for collection in self._service.collections():
                decayed = self._service.decay(collection)
                if decayed:
                    logger.info("decay pass on %s: %d edges decayed", collection, decayed)
        except HippoError as e:
            logger.warning("maintenance round failed: %s", e.message)
        except Exception:
            logger.exception("maintenance round failed")

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.run_once()
