"""Addresses, credentials and the channel: the connection half of the client contract."""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Tuple

import grpc

DEFAULT_ADDR = "127.0.0.1:50051"


def parse_addr(addr: Optional[str]) -> Tuple[str, bool]:
    """``(target, https)`` from ``host:port`` or an ``http://`` / ``https://`` URL.

    None means ``ARBITER_ADDR``, then ``127.0.0.1:50051``. A URL without a port gets 80 or
    443; a bare host gets 50051."""
    addr = addr or os.environ.get("ARBITER_ADDR") or DEFAULT_ADDR
    addr = addr.strip()
    https = False
    default_port = "50051"
    lower = addr.lower()
    if lower.startswith("https://"):
        https, addr, default_port = True, addr[len("https://"):], "443"
    elif lower.startswith("http://"):
        addr, default_port = addr[len("http://"):], "80"
    addr = addr.split("/", 1)[0]
    if not addr:
        raise ValueError("empty server address")
    if addr.startswith("["):
        if "]:" not in addr:
            addr = f"{addr}:{default_port}"
    elif addr.count(":") > 1:
        addr = f"[{addr}]:{default_port}"  # a bare IPv6 address
    elif ":" not in addr:
        addr = f"{addr}:{default_port}"
    return addr, https


def read_key_file(path: str) -> str:
    """The key on the file's first line, trailing whitespace trimmed."""
    with open(path, "r", encoding="utf-8") as f:
        key = f.readline().rstrip()
    if not key:
        raise ValueError(f"API key file {path} holds no key on its first line")
    return key


def resolve_api_key(api_key: Optional[str], api_key_file: Optional[str]) -> Optional[str]:
    """The parameter, else the key file, else ``ARBITER_API_KEY``; None when none is set."""
    if api_key:
        return api_key
    if api_key_file:
        return read_key_file(api_key_file)
    return os.environ.get("ARBITER_API_KEY") or None


def _read(path: Optional[str]) -> Optional[bytes]:
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


class _Metadata(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):  # type: ignore[misc]
    """Adds fixed metadata (``x-api-key``, ``x-client-id``) to every call."""

    def __init__(self, pairs: Sequence[Tuple[str, str]]) -> None:
        self.pairs = list(pairs)

    def _details(self, d: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        md: List[Tuple[str, Any]] = list(d.metadata or [])
        have = {k for k, _ in md}
        md += [(k, v) for k, v in self.pairs if k not in have]
        return _CallDetails(d, md)

    def intercept_unary_unary(self, continuation, d, request):  # type: ignore[override]
        return continuation(self._details(d), request)

    def intercept_unary_stream(self, continuation, d, request):  # type: ignore[override]
        return continuation(self._details(d), request)

    def intercept_stream_unary(self, continuation, d, request_iterator):  # type: ignore[override]
        return continuation(self._details(d), request_iterator)

    def intercept_stream_stream(self, continuation, d, request_iterator):  # type: ignore[override]
        return continuation(self._details(d), request_iterator)


class _CallDetails(grpc.ClientCallDetails):  # type: ignore[misc]
    def __init__(self, base: grpc.ClientCallDetails, metadata: Any) -> None:
        self.method = base.method
        self.timeout = base.timeout
        self.metadata = metadata
        self.credentials = base.credentials
        self.wait_for_ready = getattr(base, "wait_for_ready", None)
        self.compression = getattr(base, "compression", None)


def make_channel(
    addr: Optional[str],
    *,
    tls_ca_file: Optional[str] = None,
    tls_client_cert_file: Optional[str] = None,
    tls_client_key_file: Optional[str] = None,
    tls_server_name: Optional[str] = None,
    options: Sequence[Tuple[str, Any]] = (),
) -> Tuple[grpc.Channel, str, bool]:
    """A raw channel per the contract's TLS rules: ``(channel, target, tls)``.

    Plaintext unless a CA file is given or the address is ``https://`` (system roots);
    a client certificate and key (both or neither) make it mutual TLS."""
    target, https = parse_addr(addr)
    if bool(tls_client_cert_file) != bool(tls_client_key_file):
        raise ValueError("tls_client_cert_file and tls_client_key_file go together")
    tls = https or tls_ca_file is not None
    if not tls and (tls_client_cert_file or tls_server_name):
        raise ValueError(
            "a TLS setting (client certificate, server name) was given for a plaintext "
            "address: give tls_ca_file or an https:// address"
        )
    opts = list(options)
    if tls:
        creds = grpc.ssl_channel_credentials(
            root_certificates=_read(tls_ca_file),
            private_key=_read(tls_client_key_file),
            certificate_chain=_read(tls_client_cert_file),
        )
        if tls_server_name:
            opts.append(("grpc.ssl_target_name_override", tls_server_name))
            opts.append(("grpc.default_authority", tls_server_name))
        return grpc.secure_channel(target, creds, options=opts), target, True
    return grpc.insecure_channel(target, options=opts), target, False
