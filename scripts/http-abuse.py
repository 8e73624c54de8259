#!/usr/bin/env python3
"""Pre-authentication abuse of an HTTP control plane, and how /healthz fares under it.

Opens IDLE connections that never send a byte and SLOW connections that send a
request head one byte per second and never finish it, then times GET /healthz
on fresh connections while they are open. Reports the /healthz latencies, how
many abusive connections the server has closed and when, and whether a chunked
body past 64 KiB is refused with 413.

  scripts/http-abuse.py --port 8080 [--idle 1000] [--slow 64] [--seconds 15]

Prints one JSON object. Loopback only by default (--host). Used for the
"Control plane under abuse" table in docs/figures.md (scripts/http-compare.sh).
"""
import argparse
import json
import resource
import select
import socket
import time


def healthz(host, port, timeout):
    t0 = time.monotonic()
    try:
        s = socket.create_connection((host, port), timeout=timeout)
        s.settimeout(max(0.01, timeout - (time.monotonic() - t0)))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
        ok = data.startswith(b"HTTP/1.1 200")
    except OSError:
        ok = False
    return ok, time.monotonic() - t0


def chunked_over_limit(host, port, total=200 * 1024, timeout=10):
    """POSTs a chunked JSON body of `total` bytes; returns the status line's code (or None)."""
    try:
        s = socket.create_connection((host, port), timeout=timeout)
        s.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        chunk = b"a" * 8192
        sent = 0
        try:
            while sent < total:
                s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                sent += len(chunk)
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server may answer and close before the body ends
        data = s.recv(4096)
        s.close()
        return int(data.split(b" ")[1]) if data.startswith(b"HTTP/1.") else None
    except (OSError, ValueError, IndexError):
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--slow", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=15, help="how long to keep the abuse up while probing")
    ap.add_argument("--probe-timeout", type=float, default=30)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, a.idle + a.slow + 256)), hard))

    # Unloaded: sequential requests on fresh connections.
    t0 = time.monotonic()
    base = sorted(t for ok, t in (healthz(a.host, a.port, 5) for _ in range(300)))
    base_rate = 300 / (time.monotonic() - t0)

    t_start = time.monotonic()
    idle, slow, refused = [], [], 0
    for i in range(a.idle + a.slow):
        try:
            s = socket.create_connection((a.host, a.port), timeout=5)
            s.setblocking(False)
            (idle if i < a.idle else slow).append(s)
        except OSError:
            refused += 1
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000
    pos = {id(s): 0 for s in slow}
    closed_at = {}  # socket id -> seconds after start
    probes = []
    next_byte = time.monotonic()
    next_probe = time.monotonic() + 0.5
    while time.monotonic() - t_start < a.seconds:
        now = time.monotonic()
        if now >= next_byte:
            for s in slow:
                if id(s) in closed_at:
                    continue
                try:
                    s.send(head[pos[id(s)] % len(head):][:1])
                    pos[id(s)] += 1
                except OSError:
                    closed_at[id(s)] = now - t_start
            next_byte = now + 1.0
        if now >= next_probe:
            probes.append(healthz(a.host, a.port, a.probe_timeout))
            next_probe = time.monotonic() + 0.5
        # Which abusive connections has the server closed (EOF or reset)?
        live = [s for s in idle + slow if id(s) not in closed_at]
        poller = select.poll()
        by_fd = {s.fileno(): s for s in live}
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        for fd, _ in poller.poll(50):
            s = by_fd[fd]
            try:
                if s.recv(4096) == b"":
                    closed_at[id(s)] = time.monotonic() - t_start
            except BlockingIOError:
                pass
            except OSError:
                closed_at[id(s)] = time.monotonic() - t_start
    lat = sorted(t for ok, t in probes)
    idle_closed = [closed_at[id(s)] for s in idle if id(s) in closed_at]
    slow_closed = [closed_at[id(s)] for s in slow if id(s) in closed_at]
    result = {
        "unloaded_healthz_p50_ms": round(1000 * base[len(base) // 2], 2), "unloaded_healthz_per_s": round(base_rate),
        "idle": a.idle, "slow": a.slow, "seconds": a.seconds, "connect_failed": refused,
        "healthz_probes": len(probes), "healthz_ok": sum(1 for ok, _ in probes if ok),
        "healthz_p50_ms": round(1000 * lat[len(lat) // 2], 1) if lat else None,
        "healthz_max_ms": round(1000 * lat[-1], 1) if lat else None,
        "idle_closed_by_server": len(idle_closed),
        "idle_closed_first_s": round(min(idle_closed), 1) if idle_closed else None,
        "slow_closed_by_server": len(slow_closed),
        "slow_closed_first_s": round(min(slow_closed), 1) if slow_closed else None,
        "slow_closed_last_s": round(max(slow_closed), 1) if slow_closed else None,
    }
    for s in idle + slow:
        s.close()
    result["chunked_over_limit_status"] = chunked_over_limit(a.host, a.port)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
