# arbiter-worker: Arbiter's batch-analysis worker: analyses queued games from Redis Streams. It has no
# API port; it serves only the gRPC health service, on ARBITER_HEALTH_LISTEN (SERVING while it
# reaches Redis). Built by deploy/build-images.sh like the service images (see rules.Dockerfile).
ARG BASE=debian:bookworm-slim
FROM ${BASE}
COPY arbiter-worker /usr/local/bin/arbiter-worker
ENV ARBITER_HEALTH_LISTEN=0.0.0.0:50052 \
    ARBITER_METRICS_LISTEN=0.0.0.0:9090 \
    RUST_LOG=info
EXPOSE 50052 9090
USER 65532:65532
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/arbiter-worker", "health-check"]
ENTRYPOINT ["/usr/local/bin/arbiter-worker"]
LABEL org.opencontainers.image.title="arbiter-worker" \
      org.opencontainers.image.description="Arbiter batch-analysis worker on Redis Streams" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0"
