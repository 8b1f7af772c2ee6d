"""Sending work to the broker: tasks by name, after the database transaction that made the work commits.

Every piece of work is a database row before it is a message (a queued ``Run``, a pending ``PriceFanOut``),
so a message is only a hint that the work exists: when the broker is down the send is given up quickly, the
row is marked as not sent (``enqueued_at`` NULL) and the sweeper (``scenarios.sweep_runs``, every 30 s)
sends it once the broker is back. Callers learn which of the two happened from the returned ``Sending``.

Tasks are sent by name (``celery.current_app.send_task``), so this module imports no task and no Celery
application module; messages carry no time limit, so the worker that executes a task applies its own
(``CELERY_TASK_TIME_LIMIT``, from ``SOLVE_TIME_LIMIT_S``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from celery import current_app
from django.db import InterfaceError, OperationalError, transaction
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)

EXECUTE_RUN = "scenarios.execute_run"
EXECUTE_RUNS = "scenarios.execute_runs"
FAN_OUT_PRICES = "scenarios.fan_out_prices"
SWEEP_START = "scenarios.sweep_start"
SWEEP_CHUNK = "scenarios.sweep_chunk"

# How the answer to a request describes its message: sent to the broker now, or left to the sweeper.
QUEUED = "queued"
DEFERRED = "deferred"
PENDING = "pending"  # the transaction that made the work has not committed yet

BROKER_ERRORS = (BrokerOperationalError, RedisConnectionError, RedisTimeoutError, ConnectionError, OSError)

# How often a task retries one of those errors (``tasks.RETRY_OPTIONS``): about ten minutes at the default lease.
TRANSIENT_RETRIES = 60

# The errors a task retries (``tasks.RETRY_OPTIONS``): the database or the broker unreachable for a while.
TRANSIENT_ERRORS = (
    OperationalError,
    InterfaceError,
    BrokerOperationalError,
    RedisConnectionError,
    RedisTimeoutError,
)

# A publish while the broker is down is given up after about half a second (the row stays, the sweeper sends
# it later), not after Celery's default retries, so a request answers quickly during an outage.
RETRY_POLICY: dict[str, Any] = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}


# Options of a Celery ``apply_async`` that leave the time limits to the worker that executes the task.
NO_TIME_LIMIT: dict[str, Any] = {"time_limit": None, "soft_time_limit": None}


@dataclass
class Sending:
    """What became of the message(s) for one piece of work; ``state`` is set once the transaction commits."""

    state: str = PENDING


def send(name: str, args: Sequence[Any], *, producer: Any = None) -> None:
    """Send the task ``name`` with ``args`` (ids only). Raises a broker error when the broker is down."""
    current_app.send_task(
        name,
        args=list(args),
        producer=producer,
        time_limit=None,
        soft_time_limit=None,
        retry=True,
        retry_policy=RETRY_POLICY,
    )


def send_kwargs(name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """``send`` with keyword arguments too (a poll asked for now: ``force``)."""
    current_app.send_task(
        name, args=list(args), kwargs=kwargs, retry=True, retry_policy=RETRY_POLICY, **NO_TIME_LIMIT
    )


def send_many(messages: Iterable[tuple[str, Sequence[Any]]]) -> int:
    """Send several messages over one broker connection; returns how many were sent."""
    sent = 0
    with current_app.producer_or_acquire() as producer:
        for name, args in messages:
            send(name, args, producer=producer)
            sent += 1
    return sent


def chunks(items: Sequence[int], size: int) -> Iterable[list[int]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def run_messages(run_ids: Sequence[int], *, chunk_size: int) -> list[tuple[str, list[Any]]]:
    """One ``execute_run`` message per single run, ``execute_runs`` per chunk of ``chunk_size`` runs."""
    messages: list[tuple[str, list[Any]]] = []
    for part in chunks(list(run_ids), max(1, chunk_size)):
        messages.append((EXECUTE_RUN, [part[0]]) if len(part) == 1 else (EXECUTE_RUNS, [part]))
    return messages


def send_or_defer(send: Callable[[], Any], *, on_broker_down: Callable[[], Any]) -> str:
    """Call ``send``; if the broker is unreachable, call ``on_broker_down`` (which marks the rows as not
    sent, for the sweeper) and answer DEFERRED instead of raising."""
    try:
        send()
    except BROKER_ERRORS as exc:
        log.warning("broker unreachable, the work is left to the sweeper: %s", exc)
        on_broker_down()
        return DEFERRED
    return QUEUED


def on_commit(send: Callable[[], Any], *, on_broker_down: Callable[[], Any]) -> Sending:
    """``send_or_defer`` once the current transaction commits (a rolled-back request sends nothing, and no
    message points at a row that does not exist); the returned ``Sending`` tells what happened."""
    sending = Sending()

    def deliver() -> None:
        sending.state = send_or_defer(send, on_broker_down=on_broker_down)

    transaction.on_commit(deliver)
    return sending
