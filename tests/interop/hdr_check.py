"""Reads a pelt result and its --hdr-log with HdrHistogram_py, an independent HdrHistogram
implementation, and prints what it found as one JSON line (tests/report.rs compares it with
pelt's own figures).

Usage: python hdr_check.py RESULT.json LOG.hlog
"""
import json
import sys

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

LOWEST, HIGHEST, DIGITS = 1, 3_600_000_000, 3


def figures(h):
    return {
        "count": h.get_total_count(),
        "p50": h.get_value_at_percentile(50),
        "p99": h.get_value_at_percentile(99),
        "max": h.get_max_value(),
    }


def main(result_path, log_path):
    with open(result_path) as f:
        result = json.load(f)
    reader = HistogramLogReader(log_path, HdrHistogram(LOWEST, HIGHEST, DIGITS))
    total = HdrHistogram(LOWEST, HIGHEST, DIGITS)
    intervals = []
    while True:
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        intervals.append(h.get_total_count())
        total.add(h)
    embedded = HdrHistogram.decode(result["histograms"]["latency_us"])
    seconds = [HdrHistogram.decode(p["histogram"]).get_total_count() for p in result["timeline"]]
    print(json.dumps({
        "intervals": intervals,
        "log_total": figures(total),
        "embedded": figures(embedded),
        "timeline_counts": seconds,
    }))


if __name__ == "__main__":
    main(*sys.argv[1:3])
