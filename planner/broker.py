"""The Redis broker transport, with one fix: a channel whose connection is gone fails as a connection error.

Cause (kombu 5.x, ``kombu/transport/redis.py``): when Redis dies under a consuming worker, Celery's
``on_connection_error_after_connected`` calls ``connection.collect()`` and then ``connection.close()``.

1. ``collect()`` closes the connection's channels. Each ``Channel.close`` first reads its pending BRPOP
   reply (``if self._in_poll: self._brpop_read()``); with Redis dead that raises a ``ConnectionError``.
   For the consumer's channel ``maybe_close_channel`` swallows it, and ``Transport.close_connection``
   then closes the other channels (a worker has several, each with a BRPOP in flight): the first one
   that raises ends the loop, and ``collect()`` swallows that too. The consumer's channel is left *open*,
   still holding its unacknowledged messages, and ``collect()`` detaches the transport from its
   connection (``transport.client = None``).
2. ``close()`` closes the same channel again. This time there is no BRPOP in flight, so it drops its
   connection pools and restores the unacknowledged messages (``QoS.restore_unacked_once``). Restoring
   needs a client, the client needs a new pool, and the pool's parameters are read from
   ``self.connection.client`` (``Channel._connparams``: ``conninfo.hostname``), which step 1 set to None:
   ``AttributeError: 'NoneType' object has no attribute 'hostname'``.

That is not a connection error, so Celery's ``ignore_errors`` lets it through and the worker stops with
"Unrecoverable error". It only happens when the failure interrupts a BRPOP in flight, hence "sometimes".

The fix here: a channel asked for connection parameters after its transport was detached raises
``redis.exceptions.ConnectionError`` (the truth: its connection is closed). Every caller already handles
that: the restore is abandoned as if Redis were still down (the messages stay in Redis' unacked index when
Redis kept them, and ``restore_visible`` redelivers them after the visibility timeout; when Redis lost
them, the run sweeper re-sends the runs), a late ``ack`` on the dead channel is logged as "Couldn't ack",
and the worker reconnects.

Selected with ``CELERY_BROKER_TRANSPORT = "planner.broker:Transport"``; ``REDIS_URL`` is unchanged.
"""

from __future__ import annotations

from typing import Any

import redis
from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection is None or self.connection.client is None:
            raise redis.exceptions.ConnectionError(
                "the broker connection of this channel is closed (transport detached)"
            )
        params: dict[str, Any] = super()._connparams(asynchronous=asynchronous)  # type: ignore[misc]
        return params


class Transport(kombu_redis.Transport):
    Channel = Channel
