# arbiter-prometheus: Prometheus from Debian's package, the monitoring of deploy/compose.yaml. It
# scrapes every Arbiter container's metrics (port 9090) and evaluates Arbiter's alert rules. The
# configuration and the rules are mounted at /etc/prometheus (deploy/observability/prometheus.yml
# and alerts.yml), not baked in; the time series go to /prometheus (a volume in compose.yaml).
ARG BASE=debian:bookworm-slim
FROM ${BASE}
# The package creates the user `prometheus`; its own /etc/prometheus/prometheus.yml is hidden by
# the mounted one. No recommends: they would add the node exporter. The web UI loads only
# moment-timezone-with-data.min.js of the libjs-moment-timezone it depends on: the package's raw
# time-zone data beside it (over 200 MB) goes.
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus \
 && rm -rf /var/lib/apt/lists/* /usr/share/javascript/moment-timezone/data \
 && mkdir -p /prometheus \
 && chown prometheus:prometheus /prometheus
WORKDIR /prometheus
EXPOSE 9090
USER prometheus
# /-/ready answers 200 once the storage is open and the configuration loaded; bash's /dev/tcp
# asks it, as the image has no HTTP client.
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9090 && printf 'GET /-/ready HTTP/1.0\\r\\n\\r\\n' >&3 && head -1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["prometheus", "--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus", "--web.listen-address=0.0.0.0:9090"]
LABEL org.opencontainers.image.title="arbiter-prometheus" \
      org.opencontainers.image.description="Prometheus scraping Arbiter's services and evaluating its alert rules" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0"
