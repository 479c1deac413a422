#!/usr/bin/env python3
"""Generates clients/web/schema.json, the message schema the web page's protobuf codec reads,
from the .proto files under proto/ (every arbiter.* package: messages, enums, services).

    python3 clients/web/gen-schema.py           # rewrite clients/web/schema.json
    python3 clients/web/gen-schema.py --check   # exit 1 when the checked-in file is out of date

Needs grpcio-tools (for protoc and google.protobuf): run by a Python without it, the script
runs itself again with target/browser-venv/bin/python (the browser test's venv), which it makes
first, from PyPI, when it is missing.

The schema, for each message (by full name, without the leading dot):
  {"fields": [{"name", "number", "type", "label"?, "typeName"?, "oneof"?, "packed"?,
               "optional"?}], "oneofs": [names], "mapEntry"?: true}
  where "type" is the protobuf scalar name (int32, uint64, string, ...) or "message"/"enum",
  "label" is "repeated" when repeated, "typeName" the full name of the message or enum,
  "oneof" the name of the real oneof holding the field, "optional" true for a proto3
  `optional` field (explicit presence);
for each enum: {"values": {"NAME": number, ...}};
for each service: {"methods": {"Name": {"input", "output", "clientStreaming", "serverStreaming"}}}.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROTO = os.path.join(ROOT, "proto")
OUT = os.path.join(HERE, "schema.json")


def bootstrap():
    """Without grpcio-tools here, runs this script again with the venv the browser test uses
    (target/browser-venv), making it first (python3 -m venv, pip install grpcio-tools) when
    missing."""
    venv = os.path.join(ROOT, "target", "browser-venv")
    python = os.path.join(venv, "bin", "python")
    if os.environ.get("ARBITER_GEN_SCHEMA_BOOTSTRAPPED"):
        sys.exit("gen-schema.py needs grpcio-tools (pip install grpcio-tools)")
    try:
        if not os.path.exists(python):
            print(f"gen-schema.py: making {os.path.relpath(venv, ROOT)} for grpcio-tools", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        ok = subprocess.run([python, "-c", "import grpc_tools"], capture_output=True).returncode == 0
        if not ok:
            subprocess.run([python, "-m", "pip", "install", "--quiet", "grpcio-tools>=1.60"], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"gen-schema.py needs grpcio-tools (pip install grpcio-tools): {e}")
    os.environ["ARBITER_GEN_SCHEMA_BOOTSTRAPPED"] = "1"
    os.execv(python, [python, os.path.abspath(__file__), *sys.argv[1:]])


try:
    from grpc_tools import protoc
    from google.protobuf import descriptor_pb2
except ImportError:
    bootstrap()

FD = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    FD.TYPE_DOUBLE: "double", FD.TYPE_FLOAT: "float", FD.TYPE_INT64: "int64",
    FD.TYPE_UINT64: "uint64", FD.TYPE_INT32: "int32", FD.TYPE_FIXED64: "fixed64",
    FD.TYPE_FIXED32: "fixed32", FD.TYPE_BOOL: "bool", FD.TYPE_STRING: "string",
    FD.TYPE_BYTES: "bytes", FD.TYPE_UINT32: "uint32", FD.TYPE_SFIXED32: "sfixed32",
    FD.TYPE_SFIXED64: "sfixed64", FD.TYPE_SINT32: "sint32", FD.TYPE_SINT64: "sint64",
    FD.TYPE_MESSAGE: "message", FD.TYPE_ENUM: "enum",
}
PACKABLE = set(SCALARS) - {FD.TYPE_STRING, FD.TYPE_BYTES, FD.TYPE_MESSAGE, FD.TYPE_GROUP}


def proto_files():
    files = []
    for dirpath, _, names in os.walk(os.path.join(PROTO, "arbiter")):
        for n in names:
            if n.endswith(".proto"):
                files.append(os.path.relpath(os.path.join(dirpath, n), PROTO))
    return sorted(files)


def descriptor_set():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.binpb")
        args = ["protoc", "-I", PROTO, "--include_imports", f"--descriptor_set_out={out}"]
        # protoc's own well-known types (google/protobuf/*.proto), should a file import one.
        import grpc_tools
        wkt = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
        if os.path.isdir(wkt):
            args += ["-I", wkt]
        rc = protoc.main(args + proto_files())
        if rc != 0:
            sys.exit(f"protoc failed ({rc})")
        with open(out, "rb") as f:
            data = f.read()
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(data)
    return fds


def build():
    schema = {"messages": {}, "enums": {}, "services": {}}

    def add_enum(prefix, e):
        schema["enums"][f"{prefix}.{e.name}"] = {"values": {v.name: v.number for v in e.value}}

    def add_message(prefix, m, proto3):
        full = f"{prefix}.{m.name}"
        real_oneofs = []
        synthetic = set()
        for i, o in enumerate(m.oneof_decl):
            members = [f for f in m.field if f.HasField("oneof_index") and f.oneof_index == i]
            if all(f.proto3_optional for f in members):
                synthetic.add(i)
            else:
                real_oneofs.append(o.name)
        fields = []
        for f in m.field:
            d = {"name": f.name, "number": f.number, "type": SCALARS[f.type]}
            if f.label == FD.LABEL_REPEATED:
                d["label"] = "repeated"
                packed = proto3 if f.type in PACKABLE else False
                if f.options.HasField("packed"):
                    packed = f.options.packed and f.type in PACKABLE
                if packed:
                    d["packed"] = True
            if f.type in (FD.TYPE_MESSAGE, FD.TYPE_ENUM):
                d["typeName"] = f.type_name.lstrip(".")
            if f.HasField("oneof_index"):
                if f.oneof_index in synthetic:
                    d["optional"] = True
                else:
                    d["oneof"] = m.oneof_decl[f.oneof_index].name
            fields.append(d)
        entry = {"fields": fields, "oneofs": real_oneofs}
        if m.options.map_entry:
            entry["mapEntry"] = True
        schema["messages"][full] = entry
        for e in m.enum_type:
            add_enum(full, e)
        for n in m.nested_type:
            add_message(full, n, proto3)

    for fd in descriptor_set().file:
        if not fd.package.startswith("arbiter."):
            continue
        proto3 = fd.syntax == "proto3"
        for e in fd.enum_type:
            add_enum(fd.package, e)
        for m in fd.message_type:
            add_message(fd.package, m, proto3)
        for s in fd.service:
            schema["services"][f"{fd.package}.{s.name}"] = {"methods": {
                meth.name: {
                    "input": meth.input_type.lstrip("."),
                    "output": meth.output_type.lstrip("."),
                    "clientStreaming": meth.client_streaming,
                    "serverStreaming": meth.server_streaming,
                } for meth in s.method}}
    for k in schema:
        schema[k] = dict(sorted(schema[k].items()))
    return json.dumps(schema, indent=1, sort_keys=False) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when clients/web/schema.json differs from what proto/ gives")
    args = ap.parse_args()
    text = build()
    if args.check:
        try:
            with open(OUT, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current != text:
            print("clients/web/schema.json is out of date with proto/: run "
                  "`python3 clients/web/gen-schema.py` and commit the result", file=sys.stderr)
            return 1
        print("clients/web/schema.json is up to date")
        return 0
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(OUT, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
