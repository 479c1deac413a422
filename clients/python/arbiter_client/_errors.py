"""The exception every call of the client raises: :class:`ArbiterError`, with the server's
structured details (google.rpc.BadRequest, ErrorInfo, RetryInfo, ResourceInfo) read out.

The details travel in the `grpc-status-details-bin` trailer as a serialized google.rpc.Status.
They are decoded here with message types of a private descriptor pool that mirror the
google.rpc wire format (field numbers), so the package needs no googleapis-common-protos and
never clashes with it.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool

try:  # protobuf >= 4.21
    from google.protobuf.message_factory import GetMessageClass as _message_class
except ImportError:  # pragma: no cover
    from google.protobuf import message_factory as _mf

    def _message_class(d):  # type: ignore[no-redef,misc]
        return _mf.MessageFactory().GetPrototype(d)


def _build_types() -> dict:
    fdp = descriptor_pb2.FileDescriptorProto(
        name="arbiter_client/rpc_status.proto", package="arbiter_client.rpc", syntax="proto3"
    )
    F = descriptor_pb2.FieldDescriptorProto
    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED

    def msg(name: str, *fields: Tuple[str, int, int, int, str]) -> None:
        m = fdp.message_type.add(name=name)
        for fname, number, ftype, label, type_name in fields:
            f = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = f".arbiter_client.rpc.{type_name}"

    msg("Any", ("type_url", 1, F.TYPE_STRING, opt, ""), ("value", 2, F.TYPE_BYTES, opt, ""))
    msg(
        "Status",
        ("code", 1, F.TYPE_INT32, opt, ""),
        ("message", 2, F.TYPE_STRING, opt, ""),
        ("details", 3, F.TYPE_MESSAGE, rep, "Any"),
    )
    msg("FieldViolation", ("field", 1, F.TYPE_STRING, opt, ""), ("description", 2, F.TYPE_STRING, opt, ""))
    msg("BadRequest", ("field_violations", 1, F.TYPE_MESSAGE, rep, "FieldViolation"))
    msg("ErrorInfo", ("reason", 1, F.TYPE_STRING, opt, ""), ("domain", 2, F.TYPE_STRING, opt, ""))
    msg("Duration", ("seconds", 1, F.TYPE_INT64, opt, ""), ("nanos", 2, F.TYPE_INT32, opt, ""))
    msg("RetryInfo", ("retry_delay", 1, F.TYPE_MESSAGE, opt, "Duration"))
    msg(
        "ResourceInfo",
        ("resource_type", 1, F.TYPE_STRING, opt, ""),
        ("resource_name", 2, F.TYPE_STRING, opt, ""),
        ("owner", 3, F.TYPE_STRING, opt, ""),
        ("description", 4, F.TYPE_STRING, opt, ""),
    )
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(fdp.SerializeToString())
    fd = pool.FindFileByName(fdp.name)
    return {name: _message_class(fd.message_types_by_name[name]) for name in fd.message_types_by_name}


_T = _build_types()
_DETAILS_KEY = "grpc-status-details-bin"


class ArbiterError(grpc.RpcError, grpc.Call, grpc.Future):  # type: ignore[misc]
    """A call refused or failed: the gRPC status and the server's structured details.

    It is a ``grpc.RpcError`` (and answers ``code()``, ``details()``,
    ``trailing_metadata()`` as grpcio's own errors do), so code written for raw grpcio
    keeps working.

    Attributes:
        code_value: the ``grpc.StatusCode`` (also ``code()``).
        message: the status message (also ``details()``).
        field: the request field the server named (google.rpc.BadRequest, e.g.
            ``position.text``, ``move``, ``limits.depth``), or None.
        violations: every (field, description) pair of the BadRequest.
        reason: google.rpc.ErrorInfo's reason (``STALE_PLY``, ``NOT_YOUR_TURN``,
            ``MATCH_OVER``, ...), or None; ``domain`` its domain.
        retry_delay: google.rpc.RetryInfo's delay in seconds (a rate limit or quota), or None.
        resource_type, resource_name: google.rpc.ResourceInfo (``request_id`` and the id, for
            a request id reused for another request), or None.
        attempts: how many attempts the client made before giving up with this error.
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        trailing_metadata: Optional[Sequence[Tuple[str, Any]]] = None,
        initial_metadata: Optional[Sequence[Tuple[str, Any]]] = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code_value = code
        self.message = message
        self.attempts = attempts
        self._trailing = tuple(trailing_metadata or ())
        self._initial = tuple(initial_metadata or ())
        self.violations: list[Tuple[str, str]] = []
        self.reason: Optional[str] = None
        self.domain: Optional[str] = None
        self.retry_delay: Optional[float] = None
        self.resource_type: Optional[str] = None
        self.resource_name: Optional[str] = None
        for key, value in self._trailing:
            if key == _DETAILS_KEY and isinstance(value, (bytes, bytearray)):
                self._read_details(bytes(value))

    def _read_details(self, raw: bytes) -> None:
        try:
            status = _T["Status"].FromString(raw)
        except Exception:
            return
        for any_ in status.details:
            kind = any_.type_url.rsplit("/", 1)[-1]
            try:
                if kind == "google.rpc.BadRequest":
                    br = _T["BadRequest"].FromString(any_.value)
                    self.violations += [(v.field, v.description) for v in br.field_violations]
                elif kind == "google.rpc.ErrorInfo":
                    ei = _T["ErrorInfo"].FromString(any_.value)
                    self.reason, self.domain = ei.reason, ei.domain
                elif kind == "google.rpc.RetryInfo":
                    ri = _T["RetryInfo"].FromString(any_.value)
                    self.retry_delay = ri.retry_delay.seconds + ri.retry_delay.nanos / 1e9
                elif kind == "google.rpc.ResourceInfo":
                    info = _T["ResourceInfo"].FromString(any_.value)
                    self.resource_type, self.resource_name = info.resource_type, info.resource_name
            except Exception:
                continue

    @classmethod
    def from_rpc_error(cls, e: grpc.RpcError, attempts: int = 1) -> "ArbiterError":
        """An ArbiterError from grpcio's error (or the same object if it is one already)."""
        if isinstance(e, ArbiterError):
            return e
        code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
        details = (e.details() if hasattr(e, "details") else str(e)) or ""
        trailing: Any = e.trailing_metadata() if hasattr(e, "trailing_metadata") else None
        initial: Any = e.initial_metadata() if hasattr(e, "initial_metadata") else None
        return cls(code or grpc.StatusCode.UNKNOWN, details, trailing, initial, attempts)

    @property
    def field(self) -> Optional[str]:
        """The first field the server's BadRequest named, else None."""
        return self.violations[0][0] if self.violations else None

    # grpc.Call
    def code(self) -> grpc.StatusCode:
        return self.code_value

    def details(self) -> str:
        return self.message

    def trailing_metadata(self):  # type: ignore[override]
        return self._trailing

    def initial_metadata(self):  # type: ignore[override]
        return self._initial

    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> Optional[float]:  # type: ignore[override]
        return None

    def add_callback(self, callback: Callable[[], None]) -> bool:
        return False

    # grpc.Future (so an interceptor may return this object as the call's outcome)
    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return False

    def done(self) -> bool:
        return True

    def result(self, timeout: Optional[float] = None) -> Any:
        raise self

    def exception(self, timeout: Optional[float] = None) -> "ArbiterError":
        return self

    def traceback(self, timeout: Optional[float] = None) -> Any:
        return None

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        fn(self)

    def __str__(self) -> str:
        extra = []
        if self.field:
            extra.append(f"field={self.field}")
        if self.reason:
            extra.append(f"reason={self.reason}")
        if self.retry_delay is not None:
            extra.append(f"retry_delay={self.retry_delay:.3f}s")
        tail = f" ({', '.join(extra)})" if extra else ""
        return f"{self.code_value.name}: {self.message}{tail}"

    __repr__ = __str__
