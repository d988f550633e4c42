"""A publish's retries (publish.py): which failures are transient (429, 5xx, a lost connection), and one
budget of retries with backoff for the whole publish."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

ATTEMPTS = 5  # retries of transient failures, over the whole publish
RETRY_SECONDS = 120.0  # and the most time they may take in all
BACKOFF_SECONDS = 1.0  # the first wait, doubled each retry


class PublishFailed(Exception):
    """A publish that could not finish (the Hub's answers, the network): one line, exit 1."""


@dataclass
class Retries:
    """One budget of retries for a publish: ATTEMPTS of them, RETRY_SECONDS in all, on the monotonic clock:
    the waits and the time the failed calls took (a call that hangs until its timeout counts). The calls
    that succeed do not count: a large upload that takes minutes leaves the budget whole. huggingface_hub
    itself retries each LFS PUT (http_backoff: 5 times on 500/502/503/504 and lost connections) inside one
    preupload call, which this budget sees as one call."""

    left: int = ATTEMPTS
    waited: float = 0.0  # seconds spent failing and waiting, in all
    wait: float = BACKOFF_SECONDS
    log: list[str] = field(default_factory=list)

    def run(self, what: str, call: Callable):
        while True:
            started = time.monotonic()
            try:
                return call()
            except Exception as exc:  # noqa: BLE001 — sorted below: only transient failures are retried
                self.waited += time.monotonic() - started
                reason = transient(exc)
                if reason is None or self.left == 0 or self.waited + self.wait > RETRY_SECONDS:
                    raise
                self.log.append(f"{what}: {reason}; retrying in {self.wait:g} s")
                time.sleep(self.wait)
                self.left, self.waited, self.wait = self.left - 1, self.waited + self.wait, self.wait * 2


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of EXC or of the error it wraps (an LFS upload wraps its HTTPError)."""
    while exc is not None:
        response = getattr(exc, "response", None)
        if response is not None and getattr(response, "status_code", None):
            return response.status_code
        exc = exc.__cause__ or exc.__context__
    return None


def transient(exc: BaseException) -> str | None:
    """Why EXC is worth a retry (429, 5xx, a connection lost), or None."""
    import requests

    status = status_of(exc)
    if status is not None:
        return f"HTTP {status}" if status == 429 or status >= 500 else None
    seen = exc
    while seen is not None:
        if isinstance(seen, (requests.ConnectionError, requests.Timeout, ConnectionError)):
            return type(seen).__name__
        seen = seen.__cause__ or seen.__context__
    return None
