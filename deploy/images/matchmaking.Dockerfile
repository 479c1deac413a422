# arbiter-matchmaking: Arbiter matchmaking: pools, pairing waves and ratings (gRPC).
# Built by deploy/build-images.sh from the binary of the one release build (the build context is
# a folder holding only that binary); BASE is any Debian bookworm image with glibc, the public
# debian:bookworm-slim by default, or the one build-images.sh makes where no registry answers.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
COPY arbiter-matchmaking /usr/local/bin/arbiter-matchmaking
# Configuration is environment variables (ARBITER_*, see `arbiter-matchmaking --help`) and secret files
# mounted under /run/secrets; the binary writes nothing to disk.
ENV ARBITER_LISTEN=0.0.0.0:50051 \
    ARBITER_METRICS_LISTEN=0.0.0.0:9090 \
    RUST_LOG=info
EXPOSE 50051 9090
USER 65532:65532
# The binary probes itself: `health-check` asks the gRPC health service at ARBITER_LISTEN.
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/arbiter-matchmaking", "health-check"]
ENTRYPOINT ["/usr/local/bin/arbiter-matchmaking"]
LABEL org.opencontainers.image.title="arbiter-matchmaking" \
      org.opencontainers.image.description="Arbiter matchmaking: pools, pairing waves and ratings (gRPC)" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0"
