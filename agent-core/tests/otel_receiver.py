"""An OTLP/HTTP trace receiver for agent-core's OpenTelemetry test (tests/otel.rs).

    python otel_receiver.py OUT.jsonl

Listens on 127.0.0.1 at a free port and prints that port on its first line of stdout.
Every `POST /v1/traces` body is decoded as an `ExportTraceServiceRequest` with the
official protocol definitions (PyPI's `opentelemetry-proto`, installed by
scripts/otel.sh); each span becomes one JSON line in OUT.jsonl, written and flushed
before the request is answered. Bodies that do not decode get HTTP 400. The receiver
stops when its standard input closes (the test ends or is killed).
"""

import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = open(sys.argv[1], "a", encoding="utf-8")
LOCK = threading.Lock()


def any_value(v):
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return v.bool_value
    if kind == "int_value":
        return v.int_value
    if kind == "double_value":
        return v.double_value
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return None


def attributes(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except Exception as e:  # noqa: BLE001 - any decode failure is the client's
            self.send_error(400, f"not an ExportTraceServiceRequest: {e}")
            return
        lines = []
        for rs in request.resource_spans:
            resource = attributes(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    lines.append(
                        json.dumps(
                            {
                                "name": s.name,
                                "trace_id": s.trace_id.hex(),
                                "span_id": s.span_id.hex(),
                                "parent_span_id": s.parent_span_id.hex(),
                                "kind": s.kind,
                                "status": {"code": s.status.code, "message": s.status.message},
                                "scope": ss.scope.name,
                                "service": resource.get("service.name"),
                                "attributes": attributes(s.attributes),
                                "events": [
                                    {"name": e.name, "attributes": attributes(e.attributes)}
                                    for e in s.events
                                ],
                            }
                        )
                    )
        with LOCK:
            for line in lines:
                OUT.write(line + "\n")
            OUT.flush()
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()
    server.shutdown()


main()
