#!/usr/bin/env python3
"""Second by second, what a veil node's /metrics say: its CPU, the frames its sessions processed,
how many of them took longer than the 33.3-ms frame interval (processing: a frame's first packet in to its last out),
waited over 10 ms for an executor thread (queue_wait), or got a detection later than 25 ms.

    scripts/metrics-seconds.py http://127.0.0.1:PORT [--epoch]   (until interrupted; scripts/start-seconds.sh)

--epoch: each line starts with the UTC time in seconds (scripts/probe-stages.sh joins it with
scripts/core-probe.cpp's lines), and adds the decode and encode stages' mean ms a frame.
"""
import sys, time, urllib.request, re, collections
url = sys.argv[1]
epoch = '--epoch' in sys.argv[2:]
def scrape():
    t = urllib.request.urlopen(url + "/metrics").read().decode()
    agg = collections.defaultdict(float)
    for line in t.splitlines():
        if line.startswith('#'): continue
        m = re.match(r'(veil_session_processing_seconds_bucket|veil_session_stage_seconds_bucket|veil_session_stage_seconds_count|veil_session_stage_seconds_sum|veil_session_processing_seconds_count|veil_process_cpu_seconds_total)\{?([^}]*)\}? (\S+)', line)
        if not m: continue
        name, labels, v = m.groups()
        stage = re.search(r'stage="([^"]+)"', labels)
        le = re.search(r'le="([^"]+)"', labels)
        key = (name, stage.group(1) if stage else '', le.group(1) if le else '')
        agg[key] += float(v)
    return agg
def over(d, name, stage, le_s):
    """Of the interval's observations of a histogram (d: the counters' increase), how many there
    were and how many were above the bucket bound le_s (-1: no such bucket)."""
    total = d.get((name + '_count', stage, ''), 0)
    under = next((v for (n, s, le), v in d.items()
                  if n == name + '_bucket' and s == stage and le not in ('', '+Inf') and abs(float(le) - le_s) < 1e-9), None)
    return total, (total - under) if under is not None else -1
prev = scrape(); t0 = time.time()
while True:
    time.sleep(1)
    cur = scrape()
    d = {k: cur[k] - prev.get(k, 0) for k in cur}
    if any(v < 0 for (name, _, _), v in d.items() if name != 'veil_process_cpu_seconds_total'):
        # A session ended: its counters left the sums, and this second's differences mean nothing.
        print(f"{time.time():.1f} " if epoch else "", end='')
        print(f"{time.time()-t0:5.1f}s (a session ended: its counters left the sums)", flush=True)
        prev = cur
        continue
    cpu = d.get(('veil_process_cpu_seconds_total', '', ''), 0)
    p = over(d, 'veil_session_processing_seconds', '', 0.0333)
    q = over(d, 'veil_session_stage_seconds', 'queue_wait', 0.01)
    de = over(d, 'veil_session_stage_seconds', 'detect', 0.025)
    def mean_ms(stage):
        return 1000 * d.get(('veil_session_stage_seconds_sum', stage, ''), 0) / max(1, d.get(('veil_session_stage_seconds_count', stage, ''), 0))
    if epoch:
        print(f"{time.time():.1f} decode {mean_ms('decode'):.2f} encode {mean_ms('encode'):.2f} ", end='')
    print(f"{time.time()-t0:5.1f}s cpu {cpu*100:4.0f}% frames {p[0]:4.0f} proc>33ms {p[1]:3.0f} qwait>10ms {q[1]:3.0f} detect n {de[0]:3.0f} >25ms {de[1]:3.0f}", flush=True)
    prev = cur
