#!/usr/bin/env python3
"""tests/docs/check_dashboard.py DASHBOARD SCRAPE: the Grafana dashboard's
queries checked against what the library really exports.

SCRAPE is a Prometheus text exposition of a live client (the test
docs_grafana_dashboard scrapes examples/metrics_http, as api_metrics_http
does).  Every PromQL expression of DASHBOARD (panel targets' "expr", and the
metric of each label_values() variable query) must:

  - parse: with Grafana's variables replaced ($__rate_interval by 5m, a
    $variable by .+), each becomes a recording rule of a generated rules
    file that `promtool check rules` must accept;
  - name only metrics the scrape has (a histogram's _bucket, _sum and
    _count included), so a renamed metric fails here and not on a user's
    screen;
  - match labels the metric has, and label values a series of it has, for
    every literal matcher (op="acquire", outcome=~"locked|timeout"), so a
    renamed label or value fails too.  instance and job are Prometheus'
    own target labels and always allowed.

Then it checks itself: the same dashboard with one metric renamed, and with
one label value renamed, must both be refused.  Without promtool: the
parse step is skipped with a SKIP line, or fails when
REDLOCK_REQUIRE_TOOLCHAINS=1.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TARGET_LABELS = {"instance", "job"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset", "inf", "nan"}


def exprs_of(node, out, where=""):
    """Every (where, expr) of the dashboard: targets' expr, variable queries;
    where is the panel's title or the variable's name."""
    if isinstance(node, dict):
        title = node.get("title") or node.get("name") or where
        for k, v in node.items():
            if k == "expr" and isinstance(v, str) and v.strip():
                out.append((title, v))
            elif k == "query" and isinstance(v, (str, dict)) and node.get("type") == "query":
                q = v if isinstance(v, str) else v.get("query", "")
                m = re.match(r"\s*label_values\(\s*([a-zA-Z_:][\w:]*)\s*(\{.*\})?\s*,\s*(\w+)\s*\)", q)
                if not m:
                    raise SystemExit("variable %s: query %r is not label_values(metric, label)"
                                     % (title, q))
                out.append(("variable " + title, m.group(1) + (m.group(2) or "")))
            else:
                exprs_of(v, out, title)
    elif isinstance(node, list):
        for v in node:
            exprs_of(v, out, where)
    return out


def grafana_to_promql(expr):
    e = re.sub(r"\$\{?__(rate_interval|interval|range)\}?", "5m", expr)
    return re.sub(r"\$\{?\w+(:\w+)?\}?", ".+", e)


def read_scrape(path):
    """{metric: {label: set(values)}} from a text exposition."""
    series = {}
    line_re = re.compile(r"^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+\S+")
    label_re = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                continue
            m = line_re.match(line)
            if not m:
                continue
            labels = series.setdefault(m.group(1), {})
            for lm in label_re.finditer(m.group(3) or ""):
                labels.setdefault(lm.group(1), set()).add(lm.group(2))
    return series


def strip_strings(expr):
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)


def selectors(expr):
    """(metric, matchers text) of every vector selector with a metric name."""
    out = []
    code = strip_strings(expr)
    # Label lists of by/without/on/ignoring/group_* are not selectors.
    code = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", code)
    # Drop matchers and range/offset brackets to find the bare names.
    bare = re.sub(r"\{[^}]*\}", " ", code)
    bare = re.sub(r"\[[^\]]*\]", " ", bare)
    for m in re.finditer(r"(?<![\w:.])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()", bare):
        word = m.group(1)
        if word.lower() in KEYWORDS or re.fullmatch(r"\d+\w*", word):
            continue
        out.append(word)
    return out


def matchers(expr):
    """(metric, label, op, value) of every literal matcher of a named selector."""
    out = []
    for m in re.finditer(r"([a-zA-Z_:][\w:]*)\s*\{([^}]*)\}", expr):
        for lm in re.finditer(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"', m.group(2)):
            out.append((m.group(1), lm.group(1), lm.group(2), lm.group(3)))
    return out


def group_labels(expr):
    out = []
    for m in re.finditer(r"\b(by|without|on|ignoring)\s*\(([^)]*)\)", strip_strings(expr)):
        out.extend(x.strip() for x in m.group(2).split(",") if x.strip())
    return out


def problems_of(dashboard, series, promtool):
    probs = []
    found = exprs_of(dashboard, [])
    if not found:
        probs.append("the dashboard has no query")
    rules = ["groups:", "  - name: dashboard", "    rules:"]
    for k, (where, expr) in enumerate(found):
        promql = grafana_to_promql(expr)
        rules.append("      - record: dashboard:expr_%d" % k)
        rules.append("        expr: %s" % json.dumps(promql))
        names = selectors(promql)
        if not names:
            probs.append("%s: %r names no metric" % (where, expr))
        labels_here = set()
        for name in names:
            if name not in series:
                probs.append("%s: metric %s is not exported (%r)" % (where, name, expr))
            else:
                labels_here |= set(series[name])
        for name, label, op, value in matchers(promql):
            if name not in series or label in TARGET_LABELS:
                continue
            have = series[name].get(label)
            if have is None:
                probs.append("%s: %s has no label %s" % (where, name, label))
                continue
            if "$" in expr and value == ".+":
                continue
            if op in ("=", "!="):
                wanted = [value]
            elif re.fullmatch(r"[\w.-]+(\|[\w.-]+)*", value):
                wanted = value.split("|")
            else:
                wanted = []  # a real regex: not checked value by value
            for v in wanted:
                if v not in have:
                    probs.append("%s: %s{%s} has no value %r (it has %s)"
                                 % (where, name, label, v, ", ".join(sorted(have))))
        for label in group_labels(promql):
            if label not in labels_here and label not in TARGET_LABELS:
                probs.append("%s: grouping by %s, which none of its metrics has" % (where, label))
    if promtool:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "dashboard-rules.yml")
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(rules) + "\n")
            r = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
            if r.returncode != 0:
                probs.append("promtool check rules refused the queries:\n%s%s\n%s"
                             % (r.stdout, r.stderr, "\n".join(rules)))
    return probs, len(found)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_dashboard.py DASHBOARD SCRAPE")
    with open(sys.argv[1], encoding="utf-8") as f:
        dashboard = json.load(f)
    series = read_scrape(sys.argv[2])
    if not series:
        sys.exit("FAIL: the scrape %s has no samples" % sys.argv[2])
    promtool = shutil.which("promtool")
    if not promtool:
        if os.environ.get("REDLOCK_REQUIRE_TOOLCHAINS", "0") == "1":
            sys.exit("FAIL: promtool not installed, and REDLOCK_REQUIRE_TOOLCHAINS=1")
        print("SKIP: promtool not installed (Debian package prometheus): queries not parsed")
    probs, n = problems_of(dashboard, series, promtool)
    if probs:
        sys.exit("FAIL: %s:\n  %s" % (sys.argv[1], "\n  ".join(probs)))
    print("dashboard: %d queries parse and use only exported metrics, labels and values" % n)

    # The check checks: a drifted metric name and a drifted label value fail.
    text = json.dumps(dashboard)
    name = re.search(r"redlock_[a-z_]+_total", text).group(0)
    drifted = json.loads(text.replace(name, name[: -len("_total")] + "_count_total", 1))
    if not problems_of(drifted, series, None)[0]:
        sys.exit("FAIL: the check accepted the dashboard with %s renamed" % name)
    m = re.search(r'outcome=\\"(\w+)\\"', text)
    if m is None:
        sys.exit("FAIL: the dashboard has no outcome=\"...\" matcher to drift")
    drifted = json.loads(text.replace(m.group(0), m.group(0).replace(m.group(1), m.group(1) + "x"), 1))
    if not problems_of(drifted, series, None)[0]:
        sys.exit("FAIL: the check accepted the dashboard with outcome %s renamed" % m.group(1))
    print("dashboard check: a renamed metric (%s) and a renamed label value (%s) are refused"
          % (name, m.group(1)))


if __name__ == "__main__":
    main()
