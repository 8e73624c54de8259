#!/usr/bin/env python3
"""Predicted against measured capacity, from what scripts/capacity-check.sh left in OUT (issue 12).

For each kind it ran (vp8-anonymize, h264-bypass, ...):
  measured   the largest session count whose fixed-cap ramp stage passed (every session > 25 fps,
             p99 processing < 33.3 ms), and the counts that failed;
  predicted  what the node's model admits for that kind on an empty node: its planned CPU per
             720p frame x 30 fps against its budget (`cpu_budget_ms_per_s`), as
             CapacityModel::CapacitySessions counts (at least 1): after the measured ramp
             (KIND-model.json), before the auto server learned anything (KIND-auto-readyz-before.json,
             the priors: what a fresh node admits), and after the auto run (KIND-auto-model.json);
             with IDLE_FIRST the "fresh" figure is the node's after it idled (its early
             re-timings, server.retime_first_s), and the one its startup timing alone gave
             (KIND-auto-readyz-start.json) is shown beside it where it differs;
  auto       the auto server's stage with refusals: admitted of offered, and whether they passed;
             and every auto stage that failed (its ramp's too: those sessions were admitted).

The measured count may come from another run's OUT (--measured-from), for runs made with
SKIP_MEASURED=1. Prints a markdown table; --json prints the same as JSON.
"""
import argparse
import json
import math
import os
import sys

FPS = 30.0


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def stages(path):
    j = load(path)
    if not j or not j.get("runs"):
        return []
    return j["runs"][0].get("stages", [])


def measured(out, kind):
    """(largest passing count or None, [failing counts]) of the fixed-cap ramp."""
    st = stages(os.path.join(out, kind + "-measured", "load.json"))
    passed = [s["sessions"] for s in st if s.get("passed") and not s.get("refused")]
    failed = [s["sessions"] for s in st if not s.get("passed")]
    return (max(passed) if passed else None), sorted(failed)


def predicted(model, kind):
    """Sessions of `kind` an empty node admits by `model` (/readyz capacity or capacity-check's
    summary of it), or None when it lacks the figures."""
    if not model:
        return None
    cap = model.get("capacity", model)
    budget = cap.get("cpu_budget_ms_per_s")
    codec, mode = kind.split("-", 1)
    for c in cap.get("costs", []):
        if c.get("codec") == codec and c.get("mode") == mode:
            per_s = c["planned_cpu_ms_per_720p_frame"] * FPS
            if budget is None or not per_s > 0:
                return None
            return max(1, int(math.floor(budget / per_s + 1e-9)))
    return None


def auto(out, kind):
    """(admitted, offered, passed) of the auto run's stage with refusals (None when it had none),
    and the session counts of its stages that failed (the ramp's included: an admitted set)."""
    st = stages(os.path.join(out, kind + "-auto", "load.json"))
    failed = [s["sessions"] for s in st if not s.get("passed")]
    for s in st:
        if s.get("refused"):
            return (s["sessions"], s["offered"], bool(s.get("passed"))), failed
    return None, failed


def percent(pred, meas):
    if pred is None or not meas:
        return None
    return round(100.0 * (pred - meas) / meas)


def kinds_in(out):
    found = set()
    for name in os.listdir(out):
        for suffix in ("-measured", "-auto"):
            if name.endswith(suffix) and os.path.isdir(os.path.join(out, name)):
                found.add(name[: -len(suffix)])
    return sorted(found)


def summarize(out, measured_from=None):
    rows = []
    for kind in kinds_in(out):
        meas, failed = measured(measured_from or out, kind)
        after_ramp = predicted(load(os.path.join(out, kind + "-model.json")), kind)
        fresh = predicted(load(os.path.join(out, kind + "-auto-readyz-before.json")), kind)
        at_start = predicted(load(os.path.join(out, kind + "-auto-readyz-start.json")), kind)
        after_auto = predicted(load(os.path.join(out, kind + "-auto-model.json")), kind)
        a, auto_failed = auto(out, kind)
        rows.append({
            "kind": kind,
            "measured": meas,
            "failed": failed,
            "predicted_after_ramp": after_ramp,
            "predicted_fresh": fresh,
            "predicted_at_start": at_start,
            "at_start_vs_measured_pct": percent(at_start, meas),
            "predicted_after_auto": after_auto,
            "auto_admitted": a[0] if a else None,
            "auto_offered": a[1] if a else None,
            "auto_passed": a[2] if a else None,
            "auto_failed": auto_failed,
            "after_ramp_vs_measured_pct": percent(after_ramp, meas),
            "fresh_vs_measured_pct": percent(fresh, meas),
            "auto_admitted_vs_measured_pct": percent(a[0] if a else None, meas),
        })
    return rows


def cell(v, pct=None):
    if v is None:
        return "-"
    return f"{v} ({pct:+d}%)" if pct is not None else str(v)


def table(rows):
    lines = ["| kind | measured (fixed cap: largest passing; failed) | predicted after the ramp | "
             "predicted fresh (priors) | auto: admitted of offered, passed | predicted after the auto run |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        meas = "-" if r["measured"] is None else str(r["measured"])
        if r["failed"]:
            meas += "; failed " + ", ".join(map(str, r["failed"]))
        if r["auto_admitted"] is None:
            a = "no refusal"
        else:
            a = (f"{cell(r['auto_admitted'], r['auto_admitted_vs_measured_pct'])} of {r['auto_offered']}, "
                 + ("pass" if r["auto_passed"] else "**FAILED**"))
        if r["auto_failed"]:
            a += "; **failed** at " + ", ".join(map(str, r["auto_failed"]))
        fresh = cell(r['predicted_fresh'], r['fresh_vs_measured_pct'])
        if r["predicted_at_start"] is not None and r["predicted_at_start"] != r["predicted_fresh"]:
            fresh += f"; at startup {cell(r['predicted_at_start'], r['at_start_vs_measured_pct'])}"
        lines.append(f"| {r['kind']} | {meas} | "
                     f"{cell(r['predicted_after_ramp'], r['after_ramp_vs_measured_pct'])} | "
                     f"{fresh} | {a} | "
                     f"{cell(r['predicted_after_auto'])} |")
    return "\n".join(lines)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="capacity-check.sh's OUT directory")
    p.add_argument("--measured-from", help="another OUT whose fixed-cap ramps give the measured counts")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if not os.path.isdir(a.out):
        print(f"capacity-summary: {a.out}: not a directory", file=sys.stderr)
        return 2
    if a.measured_from and not os.path.isdir(a.measured_from):
        print(f"capacity-summary: {a.measured_from}: not a directory", file=sys.stderr)
        return 2
    rows = summarize(a.out, a.measured_from)
    if not rows:
        print(f"capacity-summary: {a.out}: no KIND-measured or KIND-auto runs", file=sys.stderr)
        return 1
    print(json.dumps(rows, indent=1) if a.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
