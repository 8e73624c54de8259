#!/usr/bin/env python3
"""scripts/capacity-summary.py on a capacity-check OUT written here, with the counts worked out
by hand in the comments (not by the script's own arithmetic)."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "capacity-summary.py")
failures = []


def check(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def write(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f)


def stage(n, passed, offered=None, refused=0):
    return {"sessions": n, "offered": offered or n, "refused": refused, "passed": passed}


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def model(budget, costs):
    return {"cpu_budget_ms_per_s": budget,
            "costs": [{"codec": c, "mode": m, "planned_cpu_ms_per_720p_frame": ms} for c, m, ms in costs]}


with tempfile.TemporaryDirectory() as out:
    # VP8: the ramp passed 1-4 and failed 5.
    write(f"{out}/vp8-anonymize-measured/load.json",
          {"runs": [{"stages": [stage(1, True), stage(2, True), stage(3, True), stage(4, True), stage(5, False)]}]})
    # After the ramp: 1500 / (12.5 x 30 = 375) = 4 exactly: 4 (a session that just fits is admitted).
    write(f"{out}/vp8-anonymize-model.json", model(1500, [("vp8", "anonymize", 12.5), ("h264", "anonymize", 9.0)]))
    # Fresh: the priors in /readyz's shape; 1500 / (12.6 x 30 = 378) = 3.97: 3.
    write(f"{out}/vp8-anonymize-auto-readyz-before.json",
          {"capacity": model(1500, [("vp8", "anonymize", 12.6), ("vp8", "bypass", 2.5)])})
    # Its startup timing alone (IDLE_FIRST: before its early re-timings) read higher: 1500 / (13.9
    # x 30 = 417) = 3.6: 3; the same as after them for H.264 (no start file: none).
    write(f"{out}/vp8-anonymize-auto-readyz-start.json",
          {"capacity": model(1500, [("vp8", "anonymize", 13.9)])})
    # The auto run: its ramp's 4 failed, then 3 of 8 admitted and passing.
    write(f"{out}/vp8-anonymize-auto/load.json",
          {"runs": [{"stages": [stage(1, True), stage(4, False), stage(3, True, offered=8, refused=5)]}]})
    # H.264: no measured ramp here (SKIP_MEASURED), an auto run whose admitted set failed; a model
    # without a budget (an older capacity-check) predicts nothing.
    write(f"{out}/h264-anonymize-auto/load.json",
          {"runs": [{"stages": [stage(5, False, offered=8, refused=3)]}]})
    write(f"{out}/h264-anonymize-auto-model.json", {"costs": [{"codec": "h264", "mode": "anonymize",
                                                               "planned_cpu_ms_per_720p_frame": 10.0}]})
    # Forwarded: 24 offered on a fresh node, 0.3 ms-ish sessions: 1600 / (3.1 x 30 = 93) = 17.2: 17.
    write(f"{out}/vp8-bypass-auto-readyz-before.json", {"capacity": model(1600, [("vp8", "bypass", 3.1)])})
    # Its startup timing alone read 3.5 ms a frame: 1600 / 105 = 15.2: 15 (the table shows both).
    write(f"{out}/vp8-bypass-auto-readyz-start.json", {"capacity": model(1600, [("vp8", "bypass", 3.5)])})
    write(f"{out}/vp8-bypass-auto/load.json", {"runs": [{"stages": [stage(17, True, offered=24, refused=7)]}]})
    # A measured ramp elsewhere, for --measured-from: H.264 passed 1-6.
    other = os.path.join(out, "other")
    write(f"{other}/h264-anonymize-measured/load.json",
          {"runs": [{"stages": [stage(n, True) for n in range(1, 7)]}]})

    rc, text, err = run(out, "--json")
    check("rc", rc, 0)
    rows = {r["kind"]: r for r in json.loads(text)} if rc == 0 else {}
    check("kinds", sorted(rows), ["h264-anonymize", "vp8-anonymize", "vp8-bypass"])
    v = rows.get("vp8-anonymize", {})
    check("vp8 measured", v.get("measured"), 4)
    check("vp8 failed", v.get("failed"), [5])
    check("vp8 after the ramp", v.get("predicted_after_ramp"), 4)
    check("vp8 after the ramp %", v.get("after_ramp_vs_measured_pct"), 0)
    check("vp8 fresh", v.get("predicted_fresh"), 3)
    check("vp8 fresh %", v.get("fresh_vs_measured_pct"), -25)
    check("vp8 at startup", (v.get("predicted_at_start"), v.get("at_start_vs_measured_pct")), (3, -25))
    check("vp8 auto admitted", (v.get("auto_admitted"), v.get("auto_offered"), v.get("auto_passed")), (3, 8, True))
    check("vp8 auto failed", v.get("auto_failed"), [4])
    h = rows.get("h264-anonymize", {})
    check("h264 measured", h.get("measured"), None)
    check("h264 at startup: no file", h.get("predicted_at_start"), None)
    check("h264 after auto, no budget", h.get("predicted_after_auto"), None)
    check("h264 auto", (h.get("auto_admitted"), h.get("auto_passed"), h.get("auto_failed")), (5, False, [5]))
    b = rows.get("vp8-bypass", {})
    check("bypass fresh", b.get("predicted_fresh"), 17)
    check("bypass admitted", b.get("auto_admitted"), 17)

    rc, text, _ = run(out, "--json", "--measured-from", other)
    rows = {r["kind"]: r for r in json.loads(text)} if rc == 0 else {}
    check("measured-from: h264", rows.get("h264-anonymize", {}).get("measured"), 6)
    check("measured-from: h264 admitted %", rows.get("h264-anonymize", {}).get("auto_admitted_vs_measured_pct"), -17)

    # The table says a failed admitted set in words.
    rc, text, _ = run(out)
    check("table rc", rc, 0)
    check("table: startup's figure beside the fresh one", "| 17; at startup 15 |" in text, True)
    check("table: not when they are alike", "3 (-25%); at startup" in text, False)
    check("table names the failure", "**failed** at 4" in text and "**FAILED**" in text, True)

    # Bad input: a clear error, never a traceback.
    rc, _, err = run(os.path.join(out, "nowhere"))
    check("missing OUT rc", rc, 2)
    check("missing OUT says so", "not a directory" in err and "Traceback" not in err, True)
    empty = os.path.join(out, "empty")
    os.makedirs(empty)
    rc, _, err = run(empty)
    check("empty OUT rc", rc, 1)
    write(f"{empty}/vp8-anonymize-auto/load.json", {"runs": []})
    with open(f"{empty}/vp8-anonymize-model.json", "w") as f:
        f.write("{truncated")
    rc, text, err = run(empty, "--json")
    check("damaged files rc", rc, 0)
    check("damaged files: nothing predicted", json.loads(text)[0]["predicted_after_ramp"] if rc == 0 else "rc", None)

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("capacity-summary: all checks passed")
