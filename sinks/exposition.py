"""The text of the snapshot's gauges in one pass, and the HTTP app that serves it with the registry's own
counters and histograms.

prometheus_client formats each sample through its own objects (a Sample, a label dict sorted per sample);
the snapshot's gauges are plain tuples already, so `render` writes their lines directly, byte for byte what
prometheus_client writes for the same gauges (tests/test_exposition.py holds it to that), in the format the
scraper negotiated (Prometheus text 0.0.4 or OpenMetrics 1.0). What it saves: bench/RESULTS.md, "Scrape size
per --metrics-detail". prometheus_client's `name[]` filter applies to the registry's part only: Prometheus
never sends it.
"""

import gzip
import socket
import threading
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client.exposition import ThreadingWSGIServer, gzip_accepted, make_wsgi_app
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS_CONTENT_TYPE
from prometheus_client.utils import floatToGoString

OPENMETRICS_MEDIA_TYPE = OPENMETRICS_CONTENT_TYPE.split(";")[0]
# zlib's default, not prometheus_client's 9: on a 6 MB scrape level 9 took 0.19 s and level 6 0.03 s, for a body
# 3 % smaller (0.18 against 0.19 MB; the series' text repeats itself).
GZIP_LEVEL = 6

_VALUE_ESCAPES = (("\\", r"\\"), ("\n", r"\n"), ('"', r"\""))


def _escaped(text, escapes):
    for raw, escaped in escapes:
        if raw in text:
            text = text.replace(raw, escaped)
    return text


def _help(text, openmetrics):
    """HELP text: backslash and newline escaped; OpenMetrics escapes double quotes too."""
    return _escaped(text, _VALUE_ESCAPES if openmetrics else _VALUE_ESCAPES[:2])


def render(samples, openmetrics=False):
    """The exposition text of gauge samples [(Metric, label names, label values, value)]: one family per
    metric in the order each first appears, labels sorted by name as prometheus_client sorts them."""
    families = {}
    label_text = {}
    order = {}
    for metric, names, values, value in samples:
        lines = families.get(metric)
        if lines is None:
            lines = families[metric] = []
        key = (names, values)
        labels = label_text.get(key)
        if labels is None:
            sorted_names = order.get(names)
            if sorted_names is None:
                sorted_names = order[names] = sorted(range(len(names)), key=names.__getitem__)
            inside = ",".join(f'{names[i]}="{_escaped(values[i], _VALUE_ESCAPES)}"' for i in sorted_names)
            labels = label_text[key] = f"{{{inside}}}" if inside else ""
        lines.append(f"{metric.name}{labels} {floatToGoString(value)}\n")
    out = []
    for metric, lines in families.items():
        out.append(f"# HELP {metric.name} {_help(metric.help, openmetrics)}\n# TYPE {metric.name} gauge\n")
        out += lines
    return "".join(out)


def metrics_app(snapshot_text, registry):
    """WSGI app: prometheus_client's own app for `registry` (format negotiation, methods), with
    `snapshot_text(openmetrics)` written before the registry's families (so before OpenMetrics' `# EOF`),
    gzipped when the scraper accepts it (Prometheus always does)."""
    inner = make_wsgi_app(registry, disable_compression=True)

    def app(environ, start_response):
        answer = {}
        body = b"".join(inner(environ, lambda status, headers: answer.update(status=status, headers=headers)))
        headers = answer["headers"]
        content_type = dict(headers).get("Content-Type")
        if content_type is not None:  # a scrape (not OPTIONS, a refused method or the favicon)
            body = snapshot_text(content_type.startswith(OPENMETRICS_MEDIA_TYPE)).encode() + body
            if gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING")):
                body = gzip.compress(body, compresslevel=GZIP_LEVEL)
                headers = [*headers, ("Content-Encoding", "gzip")]
        start_response(answer["status"], headers)
        return [body]

    return app


class _Quiet(WSGIRequestHandler):
    def log_message(self, format, *args):
        """No line per request on stderr."""


def serve(app, port, address):
    """Serve `app` on a daemon thread, bound as prometheus_client's start_http_server binds (address family
    from the address, SO_REUSEADDR, a thread per request). (server, thread)."""
    family, _, _, _, sockaddr = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    server_class = type("MetricsServer", (ThreadingWSGIServer,), {"address_family": family})
    server = make_server(sockaddr[0], port, app, server_class, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread
