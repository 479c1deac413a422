"""Server streams that survive a broken connection (the contract's "Watching").

:func:`resumable` opens a stream with ``after`` = the last sequence number it yielded; when the
stream breaks (``UNAVAILABLE``, or it ends without its terminal event) it waits the retry
policy's backoff and opens it again from there, dropping any event whose number is not above
the last one yielded: each event comes out once, in order. The backoff starts again after
every event yielded; the watch gives up (raising the last error, an :class:`ArbiterError`)
after ``max_attempts`` opens in a row, or ``overall_timeout`` seconds, without a new event.
Any other error (``NOT_FOUND``, ``PERMISSION_DENIED``, ...) is raised at once.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Hashable, Iterable, Iterator, Optional, TypeVar

import grpc

from ._errors import ArbiterError
from ._retry import Backoff, RetryPolicy

T = TypeVar("T")


def _reconnectable(err: ArbiterError) -> bool:
    if err.code() == grpc.StatusCode.UNAVAILABLE:
        return True
    # a stream reset under us (a proxy or replica gone) that grpcio did not call UNAVAILABLE
    text = err.message.lower()
    return err.code() in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN) and (
        "rst_stream" in text or "connection reset" in text or "socket closed" in text
    )


def resumable(
    open_stream: Callable[[int], Iterable[T]],
    *,
    after: int = 0,
    seq: Optional[Callable[[T], int]] = None,
    key: Optional[Callable[[T], Hashable]] = None,
    terminal: Callable[[T], bool] = lambda _: False,
    policy: RetryPolicy = RetryPolicy(),
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[T]:
    """Yields the events of ``open_stream(after)``, resuming after a break.

    Args:
        open_stream: opens the stream of the events after a sequence number.
        after: yield only events after this number.
        seq: an event's sequence number (events at or below the last yielded are dropped).
        key: for streams without numbers (a job's whole status): an event equal by this key
            to the last yielded one is dropped.
        terminal: the event after which the stream is over (a match's ``end``).
        policy: the backoff between reconnections.
    """
    last = after
    last_key: Any = object()
    backoff = Backoff(policy)
    while True:
        stream = None
        error: Optional[ArbiterError] = None
        try:
            stream = open_stream(last)
            for event in stream:
                if seq is not None:
                    s = seq(event)
                    if s <= last:
                        continue
                    last = s
                if key is not None:
                    k = key(event)
                    if k == last_key:
                        continue
                    last_key = k
                backoff.reset()
                yield event
                if terminal(event):
                    return
            error = ArbiterError(
                grpc.StatusCode.UNAVAILABLE, "the stream ended before its last event",
                attempts=backoff.attempts)
        except grpc.RpcError as e:
            error = ArbiterError.from_rpc_error(e, attempts=backoff.attempts)
            if not _reconnectable(error):
                raise error from None
        finally:
            cancel = getattr(stream, "cancel", None)
            if cancel is not None:
                cancel()
        delay = backoff.next_delay()
        if delay is None:
            raise error
        sleep(delay)
