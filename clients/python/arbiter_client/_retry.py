"""Retries of idempotent calls, as the client contract has them.

- Which calls: every read (every RulesService method, ``Get*``, ``List*``, ``Export*``,
  ``BestMove``, ``Sync``) and every state change whose request message has a ``request_id``
  field. For the latter, the client fills in a UUID v4 string when the caller left it empty,
  and sends the SAME id on every attempt: the server applies the request once and answers a
  retry with the stored result (``duplicate = True`` where the response has that field).
  Anything else (a state change without a request id) gets one attempt.
- Which failures: ``UNAVAILABLE``; ``DEADLINE_EXCEEDED`` when it was the attempt's own
  per-attempt deadline that passed (not the caller's overall deadline); ``RESOURCE_EXHAUSTED``
  when the server says it is a rate limit or quota (a google.rpc.RetryInfo detail: the next
  attempt waits at least its delay) or that it is over capacity (no field named: its
  requests in flight, a CPU or analysis queue full). Never: ``INVALID_ARGUMENT``,
  ``FAILED_PRECONDITION``, ``NOT_FOUND``, ``PERMISSION_DENIED``, ``UNAUTHENTICATED``,
  ``ALREADY_EXISTS``, ``ABORTED`` or any other code.
- Backoff: before retry n (0 for the first) a random pause in [0, min(2 s, 100 ms x 2^n)]
  (full jitter); at most 6 attempts in all, and no attempt starts past the caller's overall
  deadline (default 30 s from the first attempt); each attempt's deadline is the per-attempt
  timeout (default 10 s), cut to the overall deadline's remaining time.
"""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Optional

import grpc

from ._errors import ArbiterError


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, bounded in attempts and in time.

    Attributes:
        base: the bound of the first pause, in seconds (0.1).
        factor: how the bound grows per retry (2).
        cap: the largest bound (2.0 s).
        max_attempts: attempts in all, the first included (6).
        overall_timeout: seconds from the first attempt after which no attempt starts (30.0);
            None for no bound but the attempts.
        attempt_timeout: the per-attempt deadline of a unary call in seconds (10.0), used
            when the caller gives none.
    """

    base: float = 0.1
    factor: float = 2.0
    cap: float = 2.0
    max_attempts: int = 6
    overall_timeout: Optional[float] = 30.0
    attempt_timeout: float = 10.0

    def bound(self, retry: int) -> float:
        """The largest pause before retry ``retry`` (0 for the first retry)."""
        return min(self.cap, self.base * (self.factor ** retry))


class Backoff:
    """One schedule of a :class:`RetryPolicy`: call :meth:`next_delay` after each failure,
    :meth:`reset` after progress (a watch stream that delivered an event)."""

    def __init__(self, policy: RetryPolicy, rng: Optional[random.Random] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy
        self._rng = rng or random.Random()
        self._clock = clock
        self.reset()

    def reset(self) -> None:
        """Starts the schedule again (attempt 1 begins now)."""
        self.attempts = 1
        self.started = self._clock()

    def remaining(self) -> Optional[float]:
        """Seconds left of the overall deadline (None: unbounded)."""
        if self.policy.overall_timeout is None:
            return None
        return self.policy.overall_timeout - (self._clock() - self.started)

    def next_delay(self, at_least: float = 0.0) -> Optional[float]:
        """The pause before the next attempt, counted as made; None when the policy gives up
        (attempts spent, or the attempt would start past the overall deadline)."""
        if self.attempts >= self.policy.max_attempts:
            return None
        delay = max(at_least, self._rng.uniform(0.0, self.policy.bound(self.attempts - 1)))
        left = self.remaining()
        if left is not None and delay >= left:
            return None
        self.attempts += 1
        return delay


def retryable(err: ArbiterError, own_deadline: bool) -> bool:
    """Whether a failed attempt of an idempotent call is worth another attempt.

    ``own_deadline``: the attempt ran under its per-attempt deadline (not the overall one)."""
    code = err.code()
    if code == grpc.StatusCode.UNAVAILABLE:
        return True
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return own_deadline
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        if err.retry_delay is not None:
            return True  # a rate limit or quota: the server says when
        # over capacity: a server-wide limit names no field; a request over a limit does
        return not err.violations and "too large" not in err.message.lower()
    return False


# Reads: retried as they are (the rules service is stateless: all of it is a read).
_READ_PREFIXES = ("Get", "List", "Export", "Validate", "Render", "Read", "Convert")
_READS = {"BestMove", "Sync", "Ping", "Perft", "ApplyMoves", "ImportPgn"}


def is_read(method: str) -> bool:
    """``/arbiter.rules.v1.RulesService/Perft`` -> True."""
    service, _, name = method.lstrip("/").rpartition("/")
    if service == "arbiter.rules.v1.RulesService":
        return True
    return name.startswith(_READ_PREFIXES) or name in _READS


def has_request_id(request: Any) -> bool:
    d = getattr(request, "DESCRIPTOR", None)
    return d is not None and "request_id" in d.fields_by_name


def with_request_id(request: Any) -> Any:
    """The request, with a fresh UUID v4 ``request_id`` if it has that field and it is empty
    (a copy: the caller's message is not changed)."""
    if has_request_id(request) and not request.request_id:
        copy = type(request)()
        copy.CopyFrom(request)
        copy.request_id = str(uuid.uuid4())
        return copy
    return request


class _Details(grpc.ClientCallDetails):  # type: ignore[misc]
    def __init__(self, base: grpc.ClientCallDetails, timeout: Optional[float]) -> None:
        self.method = base.method
        self.timeout = timeout
        self.metadata = base.metadata
        self.credentials = base.credentials
        self.wait_for_ready = getattr(base, "wait_for_ready", None)
        self.compression = getattr(base, "compression", None)


class RetryInterceptor(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Retries idempotent unary calls per the policy (see the module's docs); a failure comes
    out as :class:`ArbiterError`. The caller's ``timeout=`` is the per-attempt deadline."""

    def __init__(self, policy: RetryPolicy, sleep: Callable[[float], None] = time.sleep,
                 rng: Optional[random.Random] = None) -> None:
        self.policy = policy
        self._sleep = sleep
        self._rng = rng

    def intercept_unary_unary(self, continuation, client_call_details, request):  # type: ignore[override]
        method = client_call_details.method
        if isinstance(method, bytes):
            method = method.decode()
        read = is_read(method)
        idempotent = read or has_request_id(request)
        if idempotent and not read:
            request = with_request_id(request)
        per_attempt = client_call_details.timeout
        if per_attempt is None:
            per_attempt = self.policy.attempt_timeout
        backoff = Backoff(self.policy, self._rng)
        while True:
            timeout, own = per_attempt, True
            left = backoff.remaining()
            if left is not None and left < timeout:
                timeout, own = max(left, 0.001), False
            outcome = continuation(_Details(client_call_details, timeout), request)
            exc = outcome.exception()
            if exc is None:
                return outcome
            err = ArbiterError.from_rpc_error(exc, attempts=backoff.attempts) \
                if isinstance(exc, grpc.RpcError) else None
            if err is None:
                return outcome  # not an RPC failure (a client-side bug): as it is
            if not idempotent or not retryable(err, own):
                return err
            delay = backoff.next_delay(at_least=err.retry_delay or 0.0)
            if delay is None:
                return err
            self._sleep(delay)
