"""The one retry budget, and the two retries obstore's own leave to us.

obstore (object_store) retries every request: 5xx and 429 replies (503 SlowDown included),
connection resets, timeouts, and a GET whose body breaks off (resumed with a range request),
`MAX_RETRIES` times (2) with backoff from 100 ms doubling to 2 s, none begun more than
`RETRY_TIMEOUT` (20 s) after the first attempt. Two faults escape it, and are retried here with
the same budget: a listing whose body breaks off mid-page (object_store fails it at once), and a
GET that ends cleanly yet short of the size the listing gave (a body the client cannot tell is
truncated, or a reply whose length lied).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from forensics.storage.options import DEFAULT_MAX_RETRIES, DEFAULT_RETRY_TIMEOUT, StorageOptions, _duration

T = TypeVar("T")
INIT_BACKOFF = 0.1
MAX_BACKOFF = 2.0


@dataclass(frozen=True)
class RetryBudget:
    """How many retries, and no retry begun later than `seconds` after the first attempt."""

    retries: int = DEFAULT_MAX_RETRIES
    seconds: float = DEFAULT_RETRY_TIMEOUT.total_seconds()

    @classmethod
    def of(cls, options: StorageOptions) -> RetryBudget:
        """The budget the options give obstore (the store was built from them, so they parse)."""
        retries = options.get("MAX_RETRIES")
        timeout = options.get("RETRY_TIMEOUT")
        return cls(
            retries=DEFAULT_MAX_RETRIES if retries is None else int(retries),
            seconds=(_duration(timeout, "RETRY_TIMEOUT") if timeout else DEFAULT_RETRY_TIMEOUT).total_seconds(),
        )

    def backoff(self, attempt: int) -> float:
        return min(INIT_BACKOFF * 2**attempt, MAX_BACKOFF)


class TransferCutShort(Exception):
    """A GET ended cleanly with fewer bytes than the listing gave, on every attempt."""


def listing_cut(exc: BaseException) -> bool:
    """A list reply whose body broke off: obstore's message, all three stores."""
    return "list response body" in str(exc).lower()


def retried(call: Callable[[], T], budget: RetryBudget, transient: Callable[[BaseException], bool]) -> T:
    """`call()`, again after a backoff while it fails with a `transient` error, within `budget`."""
    started = time.monotonic()
    attempt = 0
    while True:
        try:
            return call()
        except Exception as e:  # noqa: BLE001 - only `transient` ones are retried, the rest re-raised
            if attempt >= budget.retries or time.monotonic() - started > budget.seconds or not transient(e):
                raise
        time.sleep(budget.backoff(attempt))
        attempt += 1
