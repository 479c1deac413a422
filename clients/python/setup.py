"""Build hook of arbiter-client: generates the gRPC stubs from the repository's proto/ tree.

`build_py` runs grpc_tools.protoc (--python_out, --grpc_python_out, --pyi_out) over every
`arbiter/**/*.proto` and writes the result under `arbiter_client/_gen/`, rewriting protoc's
absolute imports (`from arbiter.common.v1 import common_pb2`) into package imports
(`from arbiter_client._gen.arbiter.common.v1 import common_pb2`), so the generated modules are
importable as `arbiter_client._gen.arbiter.rules.v1.rules_pb2` with nothing added to sys.path.
The descriptors keep their proto file names (`arbiter/common/v1/common.proto`), as any other
client generated from the same files registers them.

The proto files are looked for at ../../proto (pip builds a local directory in place), or in
the directory named by the ARBITER_PROTO_DIR environment variable. The generated files are not
checked in (.gitignore).

The run-time requirements are those of the generated code: grpcio at least the grpcio-tools
version that generated it, and protobuf in the range that grpcio-tools requires (the generated
modules check both when imported).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py as _build_py

HERE = Path(__file__).resolve().parent
PACKAGE = "arbiter_client"
GEN = HERE / PACKAGE / "_gen"
SENTINEL = Path("arbiter") / "common" / "v1" / "common.proto"


class ProtoNotFound(Exception):
    pass


def proto_root() -> Path:
    """The directory holding arbiter/<area>/v1/*.proto, or a clear error."""
    env = os.environ.get("ARBITER_PROTO_DIR")
    candidate = Path(env) if env else HERE.parent.parent / "proto"
    if not (candidate / SENTINEL).is_file():
        raise ProtoNotFound(
            f"arbiter-client: the Arbiter .proto files were not found: {candidate / SENTINEL} "
            "does not exist. Build the package from a checkout of the Arbiter repository "
            "(pip install ./clients/python, or pip wheel ./clients/python, run from the "
            "repository root, builds it in place next to proto/), or set ARBITER_PROTO_DIR to "
            "the repository's proto/ directory."
        )
    return candidate.resolve()


_IMPORT = re.compile(r"^(\s*)(from|import) arbiter\.", re.MULTILINE)


def generate() -> list[str]:
    """Generates the stubs into arbiter_client/_gen; returns the generated package names."""
    root = proto_root()
    from grpc_tools import protoc  # a build requirement (pyproject.toml)

    try:
        from importlib.resources import files

        include = str(files("grpc_tools") / "_proto")
    except Exception:  # pragma: no cover - older Pythons
        import pkg_resources

        include = pkg_resources.resource_filename("grpc_tools", "_proto")
    protos = sorted(p.relative_to(root).as_posix() for p in root.glob("arbiter/**/*.proto"))
    with tempfile.TemporaryDirectory() as out:
        args = [
            "grpc_tools.protoc",
            f"-I{root}",
            f"-I{include}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            f"--pyi_out={out}",
            *protos,
        ]
        if protoc.main(args) != 0:
            raise RuntimeError(f"arbiter-client: protoc failed on {root}: {' '.join(args)}")
        if GEN.exists():
            shutil.rmtree(GEN)
        GEN.mkdir(parents=True)
        (GEN / "__init__.py").write_text(
            '"""Generated at build time from proto/ by setup.py (grpc_tools.protoc); do not edit."""\n'
        )
        for src in sorted(Path(out).rglob("*")):
            rel = src.relative_to(out)
            dst = GEN / rel
            if src.is_dir():
                dst.mkdir(parents=True, exist_ok=True)
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            text = src.read_text()
            text = _IMPORT.sub(rf"\1\2 {PACKAGE}._gen.arbiter.", text)
            dst.write_text(text)
    packages = [f"{PACKAGE}._gen"]
    for d in sorted(p for p in GEN.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        (d / "__init__.py").touch()
        packages.append(".".join((PACKAGE, "_gen", *d.relative_to(GEN).parts)))
    return packages


class build_py(_build_py):
    """build_py that generates the stubs first and adds their packages to the build."""

    def finalize_options(self) -> None:
        try:
            generated = generate()
        except ProtoNotFound as e:
            sys.stderr.write(f"\nerror: {e}\n\n")
            raise SystemExit(1) from None
        dist = self.distribution
        dist.packages = sorted(set(dist.packages or []) | set(generated))
        dist.package_data = dict(dist.package_data or {})
        for p in generated:
            dist.package_data.setdefault(p, []).append("*.pyi")
        super().finalize_options()


def requirements() -> list[str]:
    """grpcio >= the generating grpcio-tools, protobuf as grpcio-tools requires it."""
    try:
        from importlib import metadata

        tools = metadata.version("grpcio-tools")
        reqs = [f"grpcio>={tools}"]
        proto = [r for r in metadata.requires("grpcio-tools") or [] if r.startswith("protobuf")]
        reqs.append(proto[0].split(";")[0].replace(" ", "") if proto else "protobuf")
        return reqs
    except Exception:
        return ["grpcio", "protobuf"]


setup(cmdclass={"build_py": build_py}, install_requires=requirements())
