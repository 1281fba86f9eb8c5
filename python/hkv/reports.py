"""Simulator reports as chart data: pure Python, no compiled extension.

A report is what ``hkv simulate --json`` / ``hkv compare --json`` prints per
configuration (``label``, ``table``, ``requests``, ``capacity``,
``miss_causes``, ``kv_usage``, ...). Each function here computes the series
of one chart, so tests can check the numbers without drawing
(docs/python.md, "Charts").
"""

# Miss causes in the order they are stacked, with the words the charts use.
MISS_CAUSE_WORDS = {
    "speculative_rewind": "draft rewind: last unit recomputed",
    "no_checkpoint": "no recurrent checkpoint at the boundary",
    "window_not_covered": "sliding window not cached",
    "evicted": "evicted before reuse",
}


def _is_report(item):
    return isinstance(item, dict) and "label" in item


def from_compare(configuration):
    """A configuration of ``hkv compare --json`` (schema "hkv.compare/1") as
    a report: its trace run's totals, requests, KV usage and miss causes,
    and its capacity under the report's names."""
    trace = configuration.get("trace", {})
    capacity = configuration.get("capacity")
    report = {
        "label": configuration["label"],
        "table": {"reused_tokens": trace.get("reused_tokens", 0),
                  "prompt_tokens": trace.get("prompt_tokens", 0)},
        "requests": trace.get("per_request", []),
        "kv_usage": trace.get("kv_usage", []),
        "miss_causes": trace.get("miss_causes", {}),
    }
    if isinstance(capacity, dict):
        report["capacity"] = {
            "engine_pool_tokens": capacity["engine_pool_tokens"],
            "engine_max_concurrency": capacity["engine_max_concurrency"],
            "whole_requests": capacity["hkv_whole_requests"],
        }
    return report


def reports_in(data):
    """The reports of a compare/simulate JSON: one report (``hkv simulate
    --json``), a bare list of reports, an object listing them under
    "configurations" or "reports", or the
    "hkv.compare/1" object of ``hkv compare --json`` (its configurations,
    through from_compare); None when `data` is none of these."""
    if isinstance(data, dict) and data.get("schema") == "hkv.compare/1":
        configurations = data.get("configurations")
        if not isinstance(configurations, list) or not all(
                map(_is_report, configurations)):
            return None
        return [from_compare(c) for c in configurations] or None
    if _is_report(data) and "table" in data:  # one `hkv simulate --json`
        return [data]
    if isinstance(data, dict):
        data = data.get("configurations", data.get("reports"))
    if isinstance(data, list) and data and all(map(_is_report, data)):
        return data
    return None


def sweep_in(data):
    """The "sweep" object of a sweep JSON, checked; None when `data` has no
    "sweep". Raises ValueError naming the field that is malformed."""
    if not isinstance(data, dict) or "sweep" not in data:
        return None
    sweep = data["sweep"]
    if not isinstance(sweep, dict) or not isinstance(sweep.get("points"),
                                                     list):
        raise ValueError('"sweep": want an object with a "points" list')
    for i, point in enumerate(sweep["points"]):
        if not isinstance(point, dict) or "value" not in point:
            raise ValueError(f'"sweep.points[{i}]": want an object with '
                             '"value" and "reports"')
        value = point["value"]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f'"sweep.points[{i}].value": want a number, '
                             f"got {value!r}")
        if reports_in(point.get("reports")) is None:
            raise ValueError(f'"sweep.points[{i}].reports": want a list of '
                             'reports, each with a "label"')
    return sweep


def hit_ratio(report):
    """Prompt tokens served from the cache / prompt tokens (0..1): the
    table's reused_tokens and prompt_tokens when it has them, else summed
    over "requests"; 0 for no prompt tokens."""
    table = report.get("table", {})
    if "reused_tokens" in table and "prompt_tokens" in table:
        reused, prompt = table["reused_tokens"], table["prompt_tokens"]
    else:
        requests = report.get("requests", [])
        reused = sum(r["reused_tokens"] for r in requests)
        prompt = sum(r["prompt_tokens"] for r in requests)
    return reused / prompt if prompt else 0.0


def hit_ratio_by_budget(sweep):
    """{label: [(parameter value, hit ratio), ...]} by increasing value, one
    series per configuration label across the sweep's points (each point's
    "reports" in any form reports_in takes, e.g. ``hkv compare --sweep
    budget-gib=... --json``'s "hkv.compare/1" objects)."""
    series = {}
    for point in sweep["points"]:
        for report in reports_in(point["reports"]):
            series.setdefault(report["label"], []).append(
                (point["value"], hit_ratio(report)))
    return {label: sorted(pts) for label, pts in series.items()}


def cdf(values):
    """Empirical CDF: (sorted values, fraction of values <= each)."""
    xs = sorted(values)
    return xs, [(i + 1) / len(xs) for i in range(len(xs))]


def ttft_cdf(report):
    """Per request first_token_s - arrival_s (seconds), as an empirical
    CDF: (xs, ys)."""
    return cdf([r["first_token_s"] - r["arrival_s"]
                for r in report.get("requests", [])])


def capacity_bars(reports):
    """Per configuration with a "capacity" object: (label, what the engine
    logs - its pool tokens and fractional maximum concurrency -, and hkv's
    whole requests at the model length)."""
    return [(r["label"], {
        "engine_pool_tokens": r["capacity"]["engine_pool_tokens"],
        "engine_max_concurrency": r["capacity"]["engine_max_concurrency"],
        "whole_requests": r["capacity"]["whole_requests"],
    }) for r in reports if isinstance(r.get("capacity"), dict)]


def router_bars(reports):
    """Per cluster run (a table naming its router): (label, its hit ratio
    and routed tokens as % of prompt tokens, TTFT p50 and p99 in s)."""
    rows = []
    for r in reports:
        table = r.get("table", {})
        if "router" not in table or not table.get("prompt_tokens"):
            continue
        prompt = table["prompt_tokens"]
        rows.append((r["label"], {
            "hit_percent": 100.0 * table["reused_tokens"] / prompt,
            "routed_percent": 100.0 * table["routed_tokens"] / prompt,
            "ttft_s_p50": table["ttft_s_p50"],
            "ttft_s_p99": table["ttft_s_p99"],
        }))
    return rows


def miss_cause_tokens(miss_causes):
    """Tokens each cause cost, keyed by its plain words, in stacking order
    (a cause absent from `miss_causes` costs 0)."""
    return {words: miss_causes.get(cause, {}).get("tokens", 0)
            for cause, words in MISS_CAUSE_WORDS.items()}


def _hit_ratio_at(requests, times):
    """Cumulative prompt hit ratio of the requests whose first token came by
    each time."""
    done = sorted((r["first_token_s"], r["reused_tokens"], r["prompt_tokens"])
                  for r in requests)
    ratios, reused, prompt, i = [], 0, 0, 0
    for t in times:
        while i < len(done) and done[i][0] <= t:
            reused += done[i][1]
            prompt += done[i][2]
            i += 1
        ratios.append(reused / prompt if prompt else 0.0)
    return ratios


def plot_run(report):
    """A simulator report as a "runs" entry of the charts' schema."""
    usage = report.get("kv_usage", [])
    times = [t for t, _ in usage]
    requests = report.get("requests", [])
    return {
        "geometry": report["label"],
        "timeline": {
            "t_s": times,
            "hit_ratio": _hit_ratio_at(requests, times),
            "kv_usage": [u for _, u in usage],
        },
        "ttft_ms": [1000.0 * x for x in ttft_cdf(report)[0]],
        "miss_causes": report.get("miss_causes", {}),
    }


def plot_runs(reports):
    """Reports (one, a list, or a compare object) as the charts' input:
    {"runs": [...]}."""
    if isinstance(reports, dict) and "label" in reports:
        reports = [reports]
    if reports == []:
        return {"runs": []}
    found = reports_in(reports)
    if found is None:
        raise ValueError("want simulator reports, each with a \"label\"")
    return {"runs": [plot_run(r) for r in found]}
