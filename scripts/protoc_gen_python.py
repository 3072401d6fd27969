"""A protoc plugin that runs grpcio-tools' bundled protoc generators.

buf drives generation with local plugins only; the Python generators live
inside grpcio-tools' protoc, not as separate executables. This wrapper hands the
request's descriptors to that protoc and returns what it wrote.
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

from google.protobuf import descriptor_pb2
from google.protobuf.compiler import plugin_pb2
from grpc_tools import protoc


def main() -> int:
    request = plugin_pb2.CodeGeneratorRequest.FromString(sys.stdin.buffer.read())
    response = plugin_pb2.CodeGeneratorResponse(
        supported_features=plugin_pb2.CodeGeneratorResponse.FEATURE_PROTO3_OPTIONAL
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        descriptors = root / "descriptors.pb"
        out = root / "out"
        out.mkdir()
        descriptors.write_bytes(
            descriptor_pb2.FileDescriptorSet(file=request.proto_file).SerializeToString()
        )
        code = protoc.main(
            [
                "protoc",
                f"--descriptor_set_in={descriptors}",
                f"--python_out={out}",
                f"--pyi_out={out}",
                f"--grpc_python_out={out}",
                *request.file_to_generate,
            ]
        )
        if code != 0:
            response.error = f"grpc_tools.protoc exited with {code}"
        else:
            for path in sorted(p for p in out.rglob("*") if p.is_file()):
                response.file.add(name=str(path.relative_to(out)), content=path.read_text())
    sys.stdout.buffer.write(response.SerializeToString())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
