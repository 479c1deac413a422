#!/usr/bin/env bash
# Checks Arbiter's Kubernetes manifests (deploy/k8s; docs/kubernetes.md):
#
#   bash tools/k8s-check.sh
#
# 1. renders the base and the dev overlay with `kubectl kustomize` (installing Debian's
#    kubernetes-client if there is no kubectl);
# 2. validates every rendered document against the Kubernetes 1.30 schemas with
#    kubernetes-validate (PyPI, pinned, in a virtual environment at target/k8s-venv), in strict
#    mode: an unknown field is an error, and so is an unknown kind (the tool itself only warns
#    about those, so any warning fails the check); two known-bad documents are fed to it first
#    to prove that it rejects them;
# 3. checks what a schema cannot: selectors that select the pods they are meant to, probe and
#    Service ports that exist, references to generated ConfigMaps and to Deployments, the base's
#    image tags against the workspace version;
# 4. parses the KEDA example (deploy/k8s/keda), whose ScaledObject no Kubernetes schema knows:
#    its YAML, its target and its stream name (against the analysis service's source); its other
#    documents are validated like the rest.
#
# Runs from anywhere; writes only under target/. Exit status 0 when everything passed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

K8S_VERSION=1.30.0
VALIDATOR_VERSION=1.37.0
VENV=target/k8s-venv
OUT=target/k8s-check

say() { echo "k8s-check: $*"; }
die() {
  echo "k8s-check: FAILED: $*" >&2
  exit 1
}

# --- kubectl ----------------------------------------------------------------------------------
if ! command -v kubectl >/dev/null 2>&1; then
  say "kubectl not found: it comes with Debian's package kubernetes-client" \
    "(apt-get install kubernetes-client); installing it"
  SUDO=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=(sudo -n); fi
  fi
  if command -v apt-get >/dev/null 2>&1; then
    "${SUDO[@]}" apt-get update -q >/dev/null || true
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends kubernetes-client >/dev/null || true
  fi
  command -v kubectl >/dev/null 2>&1 ||
    die "kubectl is still missing: install Debian's kubernetes-client package (or any kubectl 1.20 or later)"
fi

# --- kubernetes-validate ----------------------------------------------------------------------
mkdir -p target "$OUT"
PY="$VENV/bin/python"
if ! [ -x "$PY" ] ||
  ! "$PY" -c "import sys, kubernetes_validate as k; sys.exit(k.__version__ != '$VALIDATOR_VERSION')" \
    >/dev/null 2>&1; then
  say "installing kubernetes-validate $VALIDATOR_VERSION into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV" ||
    die "python3 -m venv failed: install Python 3 with venv (Debian: python3-venv)"
  "$VENV/bin/pip" install -q --disable-pip-version-check "kubernetes-validate==$VALIDATOR_VERSION" ||
    die "pip could not install kubernetes-validate==$VALIDATOR_VERSION"
fi

# --- render -----------------------------------------------------------------------------------
render() { # DIR NAME
  if ! kubectl kustomize "$1" >"$OUT/$2.yaml" 2>"$OUT/$2.err"; then
    cat "$OUT/$2.err" >&2
    die "kubectl kustomize $1 failed"
  fi
  # kustomize 4 and later call `bases` and `patchesStrategicMerge` deprecated: the overlay keeps
  # them on purpose, for the kustomize of kubectl 1.20. Anything else it says is shown.
  grep -v "^# Warning: '\(bases\|patchesStrategicMerge\)' is deprecated" "$OUT/$2.err" >&2 || true
}
render deploy/k8s/base base
render deploy/k8s/overlays/dev dev

# --- validate ---------------------------------------------------------------------------------
# "Client Version: v1.32.4" (newer kubectl) or "...GitVersion:"v1.20.2"..." (kubectl 1.20).
KUBECTL_VERSION="$(kubectl version --client 2>/dev/null | head -n 1 |
  sed -e 's/.*GitVersion:"\([^"]*\)".*/\1/' -e 's/^Client Version: //' || true)"
export K8S_VERSION VALIDATOR_VERSION OUT KUBECTL_VERSION
"$PY" - <<'PY'
import os
import re
import subprocess
import sys

import yaml

K8S = os.environ["K8S_VERSION"]
OUT = os.environ["OUT"]
VALIDATE = [os.path.join(os.path.dirname(sys.executable), "kubernetes-validate"),
            "--strict", "--kubernetes-version", K8S, "--quiet"]
errors = []


def fail(msg):
    errors.append(msg)
    print("k8s-check: ERROR " + msg, file=sys.stderr)


def schema_check(path):
    """kubernetes-validate in strict mode; any output at all (an error, or the warning it gives
    for a kind it has no schema for) is a failure. Returns the tool's output."""
    run = subprocess.run(VALIDATE + [path], capture_output=True, text=True)
    said = (run.stdout + run.stderr).strip()
    if run.returncode != 0 and not said:
        said = "kubernetes-validate exited with %d" % run.returncode
    return said


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


# The validator must reject an unknown kind and a misspelled field, or this check proves nothing.
canaries = {
    "an unknown kind": {"apiVersion": "example.com/v1", "kind": "NoSuchKind",
                        "metadata": {"name": "canary"}},
    "a misspelled field": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "canary"},
                           "spec": {"prots": [{"port": 1}]}},
}
for what, doc in canaries.items():
    path = os.path.join(OUT, "canary.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(doc, f)
    if not schema_check(path):
        fail("kubernetes-validate accepted %s: the schema check is not strict" % what)
    os.remove(path)
if errors:
    sys.exit(1)

rendered = {name: load(os.path.join(OUT, name + ".yaml")) for name in ("base", "dev")}


def pods_of(docs):
    """(Deployment name, pod template) of every Deployment."""
    return [(d["metadata"]["name"], d["spec"]["template"]) for d in docs if d["kind"] == "Deployment"]


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def cross_check(name, docs):
    seen = set()
    for d in docs:
        for key in ("apiVersion", "kind", "metadata"):
            if key not in d:
                fail("%s: a document without %s" % (name, key))
                return
        ident = (d["kind"], d["metadata"].get("namespace"), d["metadata"].get("name"))
        if not ident[2]:
            fail("%s: a %s without metadata.name" % (name, d["kind"]))
        if ident in seen:
            fail("%s: %s %s twice" % (name, d["kind"], ident[2]))
        seen.add(ident)
    kinds = {}
    for d in docs:
        kinds.setdefault(d["kind"], {})[d["metadata"]["name"]] = d
    configmaps = set(kinds.get("ConfigMap", {}))
    pods = pods_of(docs)
    for dep, tpl in pods:
        where = "%s: Deployment %s" % (name, dep)
        labels = tpl.get("metadata", {}).get("labels", {})
        sel = kinds["Deployment"][dep]["spec"]["selector"].get("matchLabels", {})
        if not selects(sel, labels):
            fail("%s: selector %s does not select its own pods %s" % (where, sel, labels))
        for c in tpl["spec"].get("containers", []):
            ports = {p["containerPort"] for p in c.get("ports", [])}
            ports |= {p["name"] for p in c.get("ports", []) if "name" in p}
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                handler = c.get(probe, {})
                for kind in ("grpc", "tcpSocket", "httpGet"):
                    if kind in handler and handler[kind]["port"] not in ports:
                        fail("%s: %s %s port %s is not a container port"
                             % (where, probe, kind, handler[kind]["port"]))
            for env in c.get("env", []):
                ref = env.get("valueFrom", {}).get("configMapKeyRef")
                if ref and ref["name"] not in configmaps:
                    fail("%s: env %s names ConfigMap %s, which is not rendered"
                         % (where, env["name"], ref["name"]))
                if ref and ref["name"] in configmaps and \
                        ref["key"] not in kinds["ConfigMap"][ref["name"]].get("data", {}):
                    fail("%s: env %s names key %s, missing from ConfigMap %s"
                         % (where, env["name"], ref["key"], ref["name"]))
    for svc, d in kinds.get("Service", {}).items():
        sel = d["spec"].get("selector", {})
        matched = [(dep, tpl) for dep, tpl in pods if selects(sel, tpl["metadata"].get("labels", {}))]
        if not matched:
            fail("%s: Service %s selects no pods (%s)" % (name, svc, sel))
        for p in d["spec"].get("ports", []):
            target = p.get("targetPort", p["port"])
            for dep, tpl in matched:
                have = set()
                for c in tpl["spec"]["containers"]:
                    have |= {q["containerPort"] for q in c.get("ports", [])}
                    have |= {q["name"] for q in c.get("ports", []) if "name" in q}
                if target not in have:
                    fail("%s: Service %s targets port %s, which Deployment %s lacks"
                         % (name, svc, target, dep))
    for pdb, d in kinds.get("PodDisruptionBudget", {}).items():
        sel = d["spec"].get("selector", {}).get("matchLabels", {})
        if len([1 for _, tpl in pods if selects(sel, tpl["metadata"].get("labels", {}))]) != 1:
            fail("%s: PodDisruptionBudget %s does not select exactly one Deployment's pods"
                 % (name, pdb))
    for hpa, d in kinds.get("HorizontalPodAutoscaler", {}).items():
        ref = d["spec"]["scaleTargetRef"]
        if ref["kind"] != "Deployment" or ref["name"] not in kinds.get("Deployment", {}):
            fail("%s: HorizontalPodAutoscaler %s targets %s %s, which is not rendered"
                 % (name, hpa, ref["kind"], ref["name"]))
        elif "replicas" in kinds["Deployment"][ref["name"]]["spec"]:
            fail("%s: Deployment %s sets replicas although HorizontalPodAutoscaler %s owns them"
                 % (name, ref["name"], hpa))
    return kinds


base_kinds = cross_check("base", rendered["base"])
cross_check("dev", rendered["dev"])

# The base pins the workspace version as the images' tag.
with open("Cargo.toml") as f:
    m = re.search(r'^\[workspace\.package\][^\[]*?^version\s*=\s*"([^"]+)"', f.read(), re.M | re.S)
if m:
    for dep, tpl in pods_of(rendered["base"]):
        for c in tpl["spec"]["containers"]:
            if not c["image"].endswith(":" + m.group(1)):
                fail("base: Deployment %s runs %s, not the workspace version %s"
                     % (dep, c["image"], m.group(1)))
else:
    fail("Cargo.toml: no [workspace.package] version to compare the image tags with")

# The KEDA example: its custom resources parsed and checked here, the rest by the schemas.
keda_path = "deploy/k8s/keda/worker-scaledobject.yaml"
try:
    keda_docs = load(keda_path)
except yaml.YAMLError as e:
    fail("%s: not valid YAML: %s" % (keda_path, e))
    keda_docs = []
with open("services/analysis/src/batch/redis/mod.rs") as f:
    m = re.search(r'pub const WORK: &str = "([^"]+)";', f.read())
stream = m.group(1) if m else None
if stream is None:
    fail("services/analysis/src/batch/redis/mod.rs: no `pub const WORK` (the work stream's name)")
custom, known = [], []
for d in keda_docs:
    (custom if str(d.get("apiVersion", "")).startswith("keda.sh/") else known).append(d)
for d in custom:
    where = "%s: %s %s" % (keda_path, d.get("kind"), d.get("metadata", {}).get("name"))
    if d.get("kind") != "ScaledObject" or not d.get("metadata", {}).get("name"):
        fail("%s: expected a named ScaledObject" % where)
        continue
    spec = d.get("spec", {})
    target = spec.get("scaleTargetRef", {}).get("name")
    if target not in base_kinds.get("Deployment", {}):
        fail("%s: scaleTargetRef %s is not a Deployment of the base" % (where, target))
    triggers = spec.get("triggers") or []
    if not triggers:
        fail("%s: no triggers" % where)
    for t in triggers:
        meta = t.get("metadata", {})
        if t.get("type") != "redis-streams":
            fail("%s: trigger type %s, expected redis-streams" % (where, t.get("type")))
        elif stream and meta.get("stream") != stream:
            fail("%s: stream %s, but the workers read %s" % (where, meta.get("stream"), stream))
        elif not (meta.get("address") or meta.get("host") or meta.get("addressFromEnv")):
            fail("%s: no Redis address" % where)
if not custom:
    fail("%s: no ScaledObject" % keda_path)
with open(os.path.join(OUT, "keda-known.yaml"), "w") as f:
    yaml.safe_dump_all(known, f)

if errors:
    sys.exit(1)

# The schemas, last: every rendered document, and the KEDA file's standard ones.
files = {"base": "base.yaml", "dev overlay": "dev.yaml", "KEDA example": "keda-known.yaml"}
counts = {"base": len(rendered["base"]), "dev overlay": len(rendered["dev"]),
          "KEDA example": len(known)}
for what, name in files.items():
    if counts[what] == 0:
        continue
    said = schema_check(os.path.join(OUT, name))
    if said:
        fail("%s (%s):\n%s" % (what, os.path.join(OUT, name), said))
if errors:
    sys.exit(1)

total = sum(counts.values())
print("k8s-check: %d documents valid against Kubernetes %s (kubernetes-validate %s, --strict, "
      "unknown kinds refused): base %d, dev overlay %d, KEDA example %d; %d KEDA custom "
      "resource(s) parsed; rendered with kubectl %s"
      % (total, K8S, os.environ["VALIDATOR_VERSION"], counts["base"], counts["dev overlay"],
         counts["KEDA example"], len(custom), os.environ.get("KUBECTL_VERSION") or "?"))
PY
