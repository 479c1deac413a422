# arbiter-proxy: HAProxy from Debian's package, the gRPC entry point of deploy/compose.yaml. It
# routes each call by its gRPC service name to that service's replicas and balances per call
# (HTTP/2 on both sides). The configuration is mounted (deploy/haproxy.cfg), not baked in.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends haproxy \
 && rm -rf /var/lib/apt/lists/*
EXPOSE 8080 8404
USER haproxy
# /healthz on the monitor port answers 200 while every service has a replica up (see
# haproxy.cfg); bash's /dev/tcp asks it, as the image has no HTTP client.
HEALTHCHECK --interval=5s --timeout=3s --start-period=5s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8404 && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && head -1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["haproxy", "-W", "-db", "-f", "/etc/haproxy/haproxy.cfg"]
LABEL org.opencontainers.image.title="arbiter-proxy" \
      org.opencontainers.image.description="HAProxy routing and balancing Arbiter's gRPC services" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0"
