"""The generated protobuf modules, by area: ``pb.common``, ``pb.rules``, ``pb.matches``,
``pb.clock``, ``pb.matchmaking``, ``pb.analysis`` (messages and enums), and their gRPC stubs
``pb.rules_grpc``, ... (generated at build time from proto/; see setup.py)."""

from ._gen.arbiter.analysis.v1 import analysis_pb2 as analysis
from ._gen.arbiter.analysis.v1 import analysis_pb2_grpc as analysis_grpc
from ._gen.arbiter.clock.v1 import clock_pb2 as clock
from ._gen.arbiter.clock.v1 import clock_pb2_grpc as clock_grpc
from ._gen.arbiter.common.v1 import common_pb2 as common
from ._gen.arbiter.matches.v1 import matches_pb2 as matches
from ._gen.arbiter.matches.v1 import matches_pb2_grpc as matches_grpc
from ._gen.arbiter.matchmaking.v1 import matchmaking_pb2 as matchmaking
from ._gen.arbiter.matchmaking.v1 import matchmaking_pb2_grpc as matchmaking_grpc
from ._gen.arbiter.rules.v1 import rules_pb2 as rules
from ._gen.arbiter.rules.v1 import rules_pb2_grpc as rules_grpc

__all__ = [
    "analysis", "analysis_grpc", "clock", "clock_grpc", "common", "matches", "matches_grpc",
    "matchmaking", "matchmaking_grpc", "rules", "rules_grpc",
]
