"""The operator's guard for `--throttle auto`: one PromQL instant query (HTTP GET /api/v1/query) per batch.

`PrometheusGuard(url, query)()` returns None while the query's result is empty, else one line saying why the
cluster is under stress: the result is not empty (e.g. produce latency p99 above a bound), or the query could
not be evaluated (unreachable, timed out, refused, not valid PromQL): a guard nobody can read is no guard,
so it counts as stress. The only I/O of the steering besides the admin door.
"""

import json
import urllib.error
import urllib.parse
import urllib.request

from streaming.vocabulary.echo import shown

GUARD_TIMEOUT_S = 5.0


class PrometheusGuard:
    def __init__(self, url, query, timeout_s=GUARD_TIMEOUT_S):
        self.url, self.query, self.timeout_s = url.rstrip("/"), query, timeout_s

    def __call__(self):
        address = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': self.query})}"
        try:
            with urllib.request.urlopen(address, timeout=self.timeout_s) as response:
                answer = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:  # Prometheus answers a bad query with 400 and a JSON error
            return f"guard could not be evaluated: HTTP {error.code} from {self.url}"
        except (OSError, ValueError) as error:
            return f"guard could not be evaluated: {type(error).__name__}: {shown(str(error), 200)}"
        if not isinstance(answer, dict) or answer.get("status") != "success":
            return f"guard could not be evaluated: {shown(str(answer.get('error') if isinstance(answer, dict) else answer), 200)}"
        result = (answer.get("data") or {}).get("result")
        if result in (None, [], ""):
            return None
        count = len(result) if isinstance(result, list) else 1
        return f"guard {shown(self.query, 200)!r} returned {count} series"
