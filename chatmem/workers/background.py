"""An optional in-process sweeper for small deployments without a scheduler.

Every `interval` seconds it ends idle sessions, runs due summary and pre-review
jobs, checks
guidance upkeep, applies retention and sends webhook notices, as
`flask chatmem sweep` does.
Several processes each running one are safe, because job claims and upkeep
changes are atomic, but a deployment with many workers does less work
running the CLI from cron or a systemd timer instead.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flask import Flask

log = logging.getLogger("chatmem.background")


class BackgroundSweeper:
    """A daemon thread that sweeps with its own app context; `stop()` ends it."""

    def __init__(self, app: Flask, interval: float) -> None:
        if interval <= 0:
            raise ValueError("the sweep interval must be positive")
        self.app = app
        self.interval = interval
        self.runs = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="chatmem-sweeper", daemon=True)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> BackgroundSweeper:
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the thread to stop and wait for a sweep in progress to finish."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def sweep_once(self) -> None:
        with self.app.app_context():
            memory = self.app.extensions["chatmem"].memory
            ended = memory.sweep()
            stats = memory.run_due_jobs()
            if ended or stats.claimed:
                log.info("background sweep: %d idle sessions ended; jobs: %s", ended, stats)
            reviewed = memory.run_due_pre_reviews()
            if reviewed.claimed:
                log.info("background sweep: pre-review jobs: %s", reviewed)
            upkeep = memory.upkeep()
            if upkeep.flagged or upkeep.cleared or upkeep.review_due:
                log.info("background sweep: upkeep: %s", upkeep)
            deleted = memory.apply_retention()
            if any(deleted.values()):
                log.info("background sweep: retention deleted %s", deleted)
            memory.deliver_notices()
        self.runs += 1

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sweep_once()
            except Exception:
                # One bad sweep (database restarting, say) must not end the thread.
                log.exception("background sweep failed; trying again in %ss", self.interval)
