#!/usr/bin/env bash
# Checks Arbiter's monitoring (deploy/observability; docs/operations.md#metrics):
#
#   bash tools/observability-check.sh
#
# 1. `promtool check config` of the compose scrape configuration (prometheus.yml), which loads
#    alerts.yml by a path relative to itself, as in the container;
# 2. the Kubernetes scrape configuration (prometheus-kubernetes.yml): Debian's Prometheus is
#    built without Kubernetes discovery, so its promtool rejects `kubernetes_sd_configs`. The
#    check swaps that one block for file discovery, checks the result with promtool, and runs
#    Prometheus on it with pods made from the manifests of deploy/k8s/base (their annotations
#    and labels, as role pod presents them: one target per container port): every Arbiter pod
#    must come out as one target, at its annotated port and path, with job = its
#    app.kubernetes.io/name, and the rest must be dropped;
# 3. `promtool check rules` of alerts.yml and `promtool test rules` of alerts-test.yml (each
#    alert fires on a failing series and stays quiet on a healthy one);
# 4. every dashboard (dashboards/*.json): valid JSON (python3 -m json.tool), schemaVersion 39,
#    uid and title, the ${datasource} variable, timeseries and stat panels only, and every PromQL
#    expression parses (promtool, with Grafana's variables replaced by plain values);
# 5. prints the metric names the dashboards and the alerts use, for comparison with the ones the
#    services export (docs/operations.md#metrics).
#
# Installs Debian's `prometheus` package (promtool comes with it) when promtool is missing.
# Writes only under a temporary folder. Exit status 0 when everything passed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DIR=deploy/observability
say() { echo "observability-check: $*"; }
die() {
  echo "observability-check: FAILED: $*" >&2
  exit 1
}

if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
  say "installing Debian's prometheus package (promtool)"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends prometheus
fi
say "$(promtool --version 2>&1 | head -1)"

TMP="$(mktemp -d)"
PROM_PID=""
cleanup() {
  if [ -n "$PROM_PID" ]; then kill "$PROM_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

# --- 1. compose scrape configuration -----------------------------------------------------------
promtool check config "$DIR/prometheus.yml" || die "promtool check config $DIR/prometheus.yml"

# --- 2. Kubernetes scrape configuration --------------------------------------------------------
K8S="$TMP/k8s"
mkdir -p "$K8S"
cp "$DIR/alerts.yml" "$K8S/alerts.yml"
if promtool check config "$DIR/prometheus-kubernetes.yml" >"$TMP/k8s-check.out" 2>&1; then
  cat "$TMP/k8s-check.out"
elif grep -q "field kubernetes_sd_configs not found" "$TMP/k8s-check.out"; then
  say "this promtool has no Kubernetes discovery (Debian's build): checking with file discovery instead"
else
  cat "$TMP/k8s-check.out" >&2
  die "promtool check config $DIR/prometheus-kubernetes.yml"
fi
# The discovery block must be exactly `kubernetes_sd_configs:` then `- role: pod` (and comments).
python3 - "$DIR/prometheus-kubernetes.yml" "$K8S/prometheus.yml" <<'EOF'
import re, sys
src, dst = sys.argv[1], sys.argv[2]
text = open(src).read()
pattern = re.compile(r"^(\s*)kubernetes_sd_configs:\n((?:\s*#.*\n)*)(\s*)- role: pod\n", re.M)
if len(pattern.findall(text)) != 1:
    sys.exit(f"{src}: expected one `kubernetes_sd_configs: - role: pod` block")
text = pattern.sub(lambda m: f"{m.group(1)}file_sd_configs:\n{m.group(3)}- files: [pods.json]\n", text)
open(dst, "w").write(text)
EOF
# Pods as role pod shows them, from the pod templates of deploy/k8s/base, plus pods that must be
# dropped. expected.json: the targets that must come out.
python3 - deploy/k8s/base "$K8S/pods.json" "$K8S/expected.json" <<'EOF'
import glob, json, re, sys
base, pods_out, expected_out = sys.argv[1:]

def label_name(key):  # what role pod makes of a label or annotation name
    return re.sub(r"[^a-zA-Z0-9_]", "_", key)

groups, expected = [], []
n = 0
for path in sorted(glob.glob(f"{base}/*.yaml")):
    text = open(path).read()
    # The Deployment's pod template: its metadata (annotations, labels) and its container ports.
    m = re.search(r"^  template:\n    metadata:\n((?:      .*\n|\s*#.*\n)+)", text, re.M)
    if not m or "prometheus.io/scrape" not in m.group(1):
        continue
    meta = m.group(1)
    annotations = dict(re.findall(r'^\s+(prometheus\.io/[a-z]+): "?([^"\n]*)"?$', meta, re.M))
    labels_block = meta.split("labels:", 1)[1]
    labels = dict(re.findall(r'^\s+([a-z0-9./-]+): "?([^"\n]*)"?$', labels_block, re.M))
    ports = re.findall(r"- name: ([a-z0-9-]+)\n\s+containerPort: (\d+)", text)
    if not ports:
        sys.exit(f"{path}: no named container ports")
    n += 1
    ip = f"2001:db8::{n}" if n % 2 else f"192.0.2.{n}"
    pod = labels["app.kubernetes.io/name"] + "-abc12"
    common = {
        "__meta_kubernetes_namespace": "arbiter-dev",
        "__meta_kubernetes_pod_name": pod,
        "__meta_kubernetes_pod_ip": ip,
        "__meta_kubernetes_pod_phase": "Running",
    }
    for k, v in annotations.items():
        common["__meta_kubernetes_pod_annotation_" + label_name(k)] = v
    for k, v in labels.items():
        common["__meta_kubernetes_pod_label_" + label_name(k)] = v
    for name, number in ports:
        addr = f"[{ip}]:{number}" if ":" in ip else f"{ip}:{number}"
        groups.append({"targets": [addr], "labels": dict(common, **{
            "__meta_kubernetes_pod_container_port_name": name,
            "__meta_kubernetes_pod_container_port_number": number,
        })})
    port = annotations["prometheus.io/port"]
    expected.append({
        "job": labels["app.kubernetes.io/name"],
        "address": f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}",
        "path": annotations.get("prometheus.io/path", "/metrics"),
        "namespace": "arbiter-dev",
        "pod": pod,
    })
if n < 6:
    sys.exit(f"only {n} pod templates with prometheus.io/scrape in {base}")

# Dropped: a pod without the annotation, another application's annotated pod, a finished pod.
def other(name, ip, labels, phase="Running"):
    groups.append({"targets": [f"{ip}:9090"], "labels": dict({
        "__meta_kubernetes_namespace": "arbiter-dev",
        "__meta_kubernetes_pod_name": name,
        "__meta_kubernetes_pod_ip": ip,
        "__meta_kubernetes_pod_phase": phase,
        "__meta_kubernetes_pod_container_port_name": "metrics",
        "__meta_kubernetes_pod_container_port_number": "9090",
    }, **labels)})
other("redis-0", "192.0.2.100", {"__meta_kubernetes_pod_label_app_kubernetes_io_name": "redis",
                                 "__meta_kubernetes_pod_label_app_kubernetes_io_part_of": "arbiter"})
other("shop-1", "192.0.2.101", {"__meta_kubernetes_pod_annotation_prometheus_io_scrape": "true",
                                "__meta_kubernetes_pod_label_app_kubernetes_io_name": "shop"})
other("arbiter-rules-old", "192.0.2.102", {
    "__meta_kubernetes_pod_annotation_prometheus_io_scrape": "true",
    "__meta_kubernetes_pod_annotation_prometheus_io_port": "9090",
    "__meta_kubernetes_pod_label_app_kubernetes_io_name": "arbiter-rules",
    "__meta_kubernetes_pod_label_app_kubernetes_io_part_of": "arbiter"}, phase="Succeeded")
json.dump(groups, open(pods_out, "w"), indent=1)
# Every other target (the pods' other ports included) is dropped.
json.dump({"targets": expected, "dropped": len(groups) - len(expected)}, open(expected_out, "w"), indent=1)
EOF

promtool check config "$K8S/prometheus.yml" || die "promtool check config of prometheus-kubernetes.yml with file discovery"

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
prometheus --config.file="$K8S/prometheus.yml" --storage.tsdb.path="$K8S/data" \
  --web.listen-address="127.0.0.1:$PORT" >"$K8S/prometheus.log" 2>&1 &
PROM_PID=$!
# Discovery reaches the scrape manager within about 5 s; allow 30.
if ! python3 - "$PORT" "$K8S/expected.json" <<'EOF'; then
import json, sys, time, urllib.parse, urllib.request
port, expected_path = sys.argv[1], sys.argv[2]
spec = json.load(open(expected_path))
expected = sorted(spec["targets"], key=lambda t: t["job"])
deadline = time.time() + 30
got, dropped, last = None, None, None
while time.time() < deadline:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/targets", timeout=2) as r:
            data = json.load(r)["data"]
    except Exception as e:  # not up yet
        last = e
        time.sleep(0.5)
        continue
    got = sorted(({
        "job": t["labels"].get("job"),
        "address": urllib.parse.urlsplit(t["scrapeUrl"]).netloc,
        "path": urllib.parse.urlsplit(t["scrapeUrl"]).path,
        "namespace": t["labels"].get("namespace"),
        "pod": t["labels"].get("pod"),
    } for t in data["activeTargets"]), key=lambda t: t["job"] or "")
    dropped = len(data["droppedTargets"])
    if got == expected and dropped == spec["dropped"]:
        print(f"observability-check: Kubernetes relabelling: {len(got)} targets as expected, "
              f"{len(data['droppedTargets'])} dropped: "
              + ", ".join(f"{t['job']}@{t['address']}{t['path']}" for t in got))
        sys.exit(0)
    time.sleep(0.5)
print("observability-check: Kubernetes relabelling: expected", json.dumps(spec, indent=1),
      "got", json.dumps(got, indent=1), f"and {dropped} dropped; last error", last, file=sys.stderr)
sys.exit(1)
EOF
  cat "$K8S/prometheus.log" >&2
  die "the Kubernetes scrape configuration did not turn the manifests' pods into the expected targets"
fi
kill "$PROM_PID"
wait "$PROM_PID" 2>/dev/null || true
PROM_PID=""

# --- 3. alert rules ------------------------------------------------------------------------------
promtool check rules "$DIR/alerts.yml" || die "promtool check rules $DIR/alerts.yml"
promtool test rules "$DIR/alerts-test.yml" || die "promtool test rules $DIR/alerts-test.yml"

# --- 4. dashboards -------------------------------------------------------------------------------
shopt -s nullglob
dashboards=("$DIR"/dashboards/*.json)
[ ${#dashboards[@]} -gt 0 ] || die "no dashboards in $DIR/dashboards"
for f in "${dashboards[@]}"; do
  python3 -m json.tool "$f" >/dev/null || die "$f is not valid JSON"
done
# Structure, and every expression as a recording rule, so that promtool parses it.
python3 - "$TMP/dashboard-exprs.yml" "${dashboards[@]}" <<'EOF' || die "dashboards"
import json, re, sys
out, files = sys.argv[1], sys.argv[2:]
errors, rules, uids = [], [], set()
for f in files:
    d = json.load(open(f))
    for key in ("uid", "title"):
        if not d.get(key):
            errors.append(f"{f}: no {key}")
    if d.get("uid") in uids:
        errors.append(f"{f}: uid {d.get('uid')} used twice")
    uids.add(d.get("uid"))
    if d.get("schemaVersion") != 39:
        errors.append(f"{f}: schemaVersion {d.get('schemaVersion')}, not 39")
    variables = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        errors.append(f"{f}: no Prometheus datasource variable `datasource`")
    ids = set()
    for p in d.get("panels", []):
        where = f"{f}: panel {p.get('id')} {p.get('title')!r}"
        if p.get("type") not in ("timeseries", "stat"):
            errors.append(f"{where}: type {p.get('type')}")
        if p.get("id") in ids:
            errors.append(f"{where}: id used twice")
        ids.add(p.get("id"))
        if p.get("datasource", {}).get("uid") != "${datasource}":
            errors.append(f"{where}: datasource is not ${{datasource}}")
        if not p.get("targets"):
            errors.append(f"{where}: no targets")
        for t in p.get("targets", []):
            expr = t.get("expr", "")
            if not expr or t.get("datasource", {}).get("uid") != "${datasource}":
                errors.append(f"{where}: target {t.get('refId')} without expression or datasource")
                continue
            # The first series after each histogram_quantile( must be a histogram's buckets.
            for h in re.findall(r"histogram_quantile\(.*?([a-z_][a-z0-9_]*)\{", expr):
                if not h.endswith("_bucket"):
                    errors.append(f"{where}: histogram_quantile over {h}, not a _bucket series")
            plain = expr.replace("$__rate_interval", "1m").replace("$instance", ".*")
            if "$" in plain:
                errors.append(f"{where}: unknown variable in {expr}")
            rules.append({"record": f"dashboard_expr_{len(rules)}", "expr": plain})
    print(f"observability-check: {f}: {len(d.get('panels', []))} panels")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
# JSON is YAML: promtool reads this as a rules file.
json.dump({"groups": [{"name": "dashboards", "rules": rules}]}, open(out, "w"), indent=1)
EOF
promtool check rules "$TMP/dashboard-exprs.yml" >/dev/null ||
  die "a dashboard expression does not parse (promtool check rules $TMP/dashboard-exprs.yml)"
say "every dashboard expression parses"

# --- 5. metric names -----------------------------------------------------------------------------
say "metric names used by the dashboards and alerts.yml (compare with docs/operations.md#metrics):"
grep -ohE '\barbiter_[a-z0-9_]+' "$DIR/alerts.yml" "${dashboards[@]}" | sort -u | sed 's/^/  /'
if grep -qE '\bup\{' "$DIR/alerts.yml"; then echo "  up (Prometheus's own, per target)"; fi
say "passed"
