#!/usr/bin/python3
"""A UDP proxy that impairs what passes through it: loss, jitter and reordering (like tc netem).

  udp_impair.py --listen 127.0.0.1:PORT --to 127.0.0.1:PORT [--loss 5] [--jitter-ms 30]
                [--reorder 1] [--delay-ms 40] [--seed 1]

Datagrams that arrive on --listen go to --to, and answers from --to go back to the last sender
(RTCP, in both directions). Forward datagrams are impaired, answers are not:
  - loss: each datagram is dropped with probability --loss %, independently;
  - jitter: each one waits --delay-ms plus a uniform draw in [-jitter, +jitter] ms, but never
    leaves before the one sent before it (a FIFO link whose queue delay varies, as netem with a
    rate limit): jitter alone does not reorder;
  - reordering: with probability --reorder % a datagram also leaves the queue and is held
    2 x jitter-ms longer, so that the next ones overtake it.
The random draws are seeded: a run is repeatable. SIGUSR2 turns the impairment on, SIGUSR1 off
(--start-off: it starts off), so that one path can be clean, impaired, then clean again. The
listening address goes to stderr first ("udp_impair: listening on 127.0.0.1:PORT"), then the
counts so far as one JSON line at every switch and at exit (SIGINT/SIGTERM). In-process users
(scripts/impair.py) read Impair.counts and set the rates directly.
"""
import argparse
import heapq
import json
import random
import select
import signal
import socket
import sys
import threading
import time


class Impair:
    def __init__(self, listen, to, loss=0.0, jitter_ms=0.0, reorder=0.0, delay_ms=0.0, seed=1):
        self.to = to
        self.loss, self.jitter, self.reorder, self.delay = loss / 100.0, jitter_ms / 1000.0, reorder / 100.0, delay_ms / 1000.0
        self.rng = random.Random(seed)
        self.front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.front.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.front.bind(listen)
        self.back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.back.bind((listen[0], 0))
        self.port = self.front.getsockname()[1]
        self.sender = None
        self.queue = []  # (departure, n, datagram)
        self.fifo_tail = 0.0
        self.n = 0
        self.cv = threading.Condition()
        self.stop = False
        self.counts = {"received": 0, "dropped": 0, "reordered": 0, "sent": 0, "returned": 0, "max_delay_ms": 0.0}
        self.threads = [threading.Thread(target=self._recv, daemon=True), threading.Thread(target=self._send, daemon=True)]
        for t in self.threads:
            t.start()

    def _recv(self):
        while not self.stop:
            r, _, _ = select.select([self.front, self.back], [], [], 0.2)
            for s in r:
                data, addr = s.recvfrom(65536)
                if s is self.back:  # an answer (RTCP): straight back to the sender
                    if self.sender:
                        self.front.sendto(data, self.sender)
                        self.counts["returned"] += 1
                    continue
                self.sender = addr
                now = time.monotonic()
                with self.cv:
                    self.counts["received"] += 1
                    if self.rng.random() < self.loss:
                        self.counts["dropped"] += 1
                        continue
                    at = now + max(0.0, self.delay + self.rng.uniform(-self.jitter, self.jitter))
                    if self.rng.random() < self.reorder:
                        at = max(at, self.fifo_tail) + 2 * max(self.jitter, 0.005)
                        self.counts["reordered"] += 1
                    else:
                        at = max(at, self.fifo_tail)
                        self.fifo_tail = at
                    self.counts["max_delay_ms"] = max(self.counts["max_delay_ms"], round((at - now) * 1000, 1))
                    self.n += 1
                    heapq.heappush(self.queue, (at, self.n, data))
                    self.cv.notify()

    def _send(self):
        while True:
            with self.cv:
                while not self.stop and (not self.queue or self.queue[0][0] > time.monotonic()):
                    self.cv.wait(timeout=(self.queue[0][0] - time.monotonic()) if self.queue else 0.2)
                if self.stop:
                    return
                _, _, data = heapq.heappop(self.queue)
            self.back.sendto(data, self.to)
            self.counts["sent"] += 1

    def close(self):
        with self.cv:
            self.stop = True
            self.cv.notify_all()
        for t in self.threads:
            t.join()
        self.front.close()
        self.back.close()


def hostport(s):
    h, p = s.rsplit(":", 1)
    return h, int(p)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--listen", type=hostport, required=True)
    ap.add_argument("--to", type=hostport, required=True)
    ap.add_argument("--loss", type=float, default=5.0, help="percent")
    ap.add_argument("--jitter-ms", type=float, default=30.0)
    ap.add_argument("--reorder", type=float, default=1.0, help="percent")
    ap.add_argument("--delay-ms", type=float, default=40.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start-off", action="store_true", help="pass everything until SIGUSR2")
    a = ap.parse_args()
    for name, v, hi in (("loss", a.loss, 100), ("reorder", a.reorder, 100), ("jitter-ms", a.jitter_ms, 10000),
                        ("delay-ms", a.delay_ms, 10000)):
        if not 0 <= v <= hi:
            sys.exit(f"udp_impair: --{name} must be in [0, {hi}], got {v}")
    p = Impair(a.listen, a.to, a.loss, a.jitter_ms, a.reorder, a.delay_ms, a.seed)
    rates = (p.loss, p.jitter, p.reorder, p.delay)

    def switch(on):
        with p.cv:
            p.loss, p.jitter, p.reorder, p.delay = rates if on else (0.0, 0.0, 0.0, rates[3])
            print(json.dumps({"impaired": on, **p.counts}), file=sys.stderr, flush=True)

    if a.start_off:
        switch(False)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    signal.signal(signal.SIGUSR2, lambda *_: switch(True))
    signal.signal(signal.SIGUSR1, lambda *_: switch(False))
    print(f"udp_impair: listening on 127.0.0.1:{p.port} -> {a.to[0]}:{a.to[1]}", file=sys.stderr, flush=True)
    done.wait()
    p.close()
    print(json.dumps(p.counts), file=sys.stderr, flush=True)

if __name__ == "__main__":
    main()
