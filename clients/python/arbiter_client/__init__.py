"""Python client for Arbiter, a chess backend served over gRPC.

Quick start::

    import arbiter_client

    with arbiter_client.connect() as client:          # ARBITER_ADDR, else 127.0.0.1:50051
        m = client.create_match("chess", players=["ann", "bob"], time_control="5+3")
        m.move("e2e4", seat="white")
        m.move("e7e5", seat="black")
        for event in m.watch():                        # resumes after a broken stream
            print(event.seq, event.WhichOneof("event"))

It follows the Arbiter client contract: the API key (parameter, key file, or
``ARBITER_API_KEY``) in ``x-api-key`` on every call; TLS from a CA file or an ``https://``
address; retries of idempotent calls with a request id kept across attempts; seat tokens
kept per match; watch streams resumed with ``after_seq``. See README.md.
"""

from . import pb
from ._errors import ArbiterError
from ._retry import Backoff, RetryPolicy
from ._watch import resumable
from .client import (
    Client,
    Job,
    Match,
    Pairing,
    PositionLike,
    RulesLike,
    SeatLike,
    connect,
    make_position,
    variant_name,
    variant_value,
)

__all__ = [
    "ArbiterError",
    "Backoff",
    "Client",
    "Job",
    "Match",
    "Pairing",
    "PositionLike",
    "RetryPolicy",
    "RulesLike",
    "SeatLike",
    "connect",
    "make_position",
    "pb",
    "resumable",
    "variant_name",
    "variant_value",
]
__version__ = "0.1.0"
