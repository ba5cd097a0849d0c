"""An OTLP/HTTP receiver for agent-core's OpenTelemetry tests (tests/otel.rs).

    python otel_receiver.py OUT.jsonl [STATUS]

Listens on 127.0.0.1 at a free port and prints that port on its first line of stdout.
Every `POST /v1/traces` body is decoded as an `ExportTraceServiceRequest` with the
official protocol definitions (PyPI's `opentelemetry-proto`, installed by
scripts/otel.sh); each span becomes one JSON line in OUT.jsonl (with the request's
headers), written and flushed before the request is answered. Every `POST /v1/metrics`
body is decoded as an `ExportMetricsServiceRequest`; each histogram or sum data point
becomes one JSON line in OUT.jsonl.metrics. Bodies that do not decode get HTTP 400.
With STATUS (such as 404), every request is answered with that status and nothing is
written. The receiver stops when its standard input closes (the test ends or is
killed).
"""

import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = open(sys.argv[1], "a", encoding="utf-8")
METRICS = open(sys.argv[1] + ".metrics", "a", encoding="utf-8")
STATUS = int(sys.argv[2]) if len(sys.argv) > 2 else None
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


def metric_lines(request):
    lines = []
    for rm in request.resource_metrics:
        resource = attributes(rm.resource.attributes)
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                if kind == "histogram":
                    points = [
                        {
                            "attributes": attributes(p.attributes),
                            "count": p.count,
                            "sum": p.sum,
                            "explicit_bounds": list(p.explicit_bounds),
                        }
                        for p in m.histogram.data_points
                    ]
                elif kind == "sum":
                    points = [
                        {
                            "attributes": attributes(p.attributes),
                            "value": p.as_int if p.WhichOneof("value") == "as_int" else p.as_double,
                        }
                        for p in m.sum.data_points
                    ]
                else:
                    points = [{}]
                for p in points:
                    lines.append(
                        json.dumps(
                            {
                                "metric": m.name,
                                "unit": m.unit,
                                "kind": kind,
                                "scope": sm.scope.name,
                                "service": resource.get("service.name"),
                                **p,
                            }
                        )
                    )
    return lines


class Handler(BaseHTTPRequestHandler):
    def answer(self, message):
        answer = message.SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if STATUS is not None:
            self.send_error(STATUS)
            return
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path == "/v1/metrics":
            request = ExportMetricsServiceRequest()
            try:
                request.ParseFromString(body)
            except Exception as e:  # noqa: BLE001 - any decode failure is the client's
                self.send_error(400, f"not an ExportMetricsServiceRequest: {e}")
                return
            lines = metric_lines(request)
            with LOCK:
                for line in lines:
                    METRICS.write(line + "\n")
                METRICS.flush()
            self.answer(ExportMetricsServiceResponse())
            return
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
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
                                "headers": headers,
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
        self.answer(ExportTraceServiceResponse())

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()
    server.shutdown()


main()
