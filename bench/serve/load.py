"""Load for `unif serve` (bench/serve/run.sh), Python standard library only.

  load.py PORT PID TEXTS.jsonl CLIENTS ROUNDS OUT.json

Phases, each request one record {"text": ...} from TEXTS (cycled):
  1. single: 50 requests one after another (one client): latency p50 / p99;
  2. concurrent: CLIENTS threads, each ROUNDS requests back to back: records/s over the phase,
     latency p50 / p99;
  3. the concurrent phase twice more (memory: the server's RSS after each of the three loads; a
     server that keeps per-request memory grows by the same amount each time, caches and allocator
     arenas settle after the first).
Every answer must be 200 with one output that has a label.
"""
import http.client
import json
import sys
import threading
import time


def rss_mb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    port, pid, path, clients, rounds, out = sys.argv[1:]
    port, pid, clients, rounds = int(port), int(pid), int(clients), int(rounds)
    texts = [json.loads(x)["text"] for x in open(path, encoding="utf-8") if x.strip()]
    bodies = [json.dumps({"inputs": [{"text": t}]}).encode() for t in texts]
    errors = []

    def request(conn, body):
        t0 = time.perf_counter()
        conn.request("POST", "/v1/predict", body=body, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        dt = time.perf_counter() - t0
        if r.status != 200 or "label" not in json.loads(data)["outputs"][0]:
            errors.append((r.status, data[:200]))
        return dt

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    single = [request(conn, bodies[i % len(bodies)]) for i in range(50)]
    conn.close()

    def concurrent():
        lat = [[] for _ in range(clients)]

        def client(k):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            for r in range(rounds):
                lat[k].append(request(c, bodies[(k * rounds + r) % len(bodies)]))
            c.close()

        threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        flat = [x for xs in lat for x in xs]
        return {"records_per_s": len(flat) / wall, "p50_ms": 1e3 * pct(flat, 0.5), "p99_ms": 1e3 * pct(flat, 0.99),
                "requests": len(flat)}

    rss = [rss_mb(pid)]
    loads = []
    for _ in range(3):
        loads.append(concurrent())
        rss.append(rss_mb(pid))
    json.dump({"single_p50_ms": 1e3 * pct(single, 0.5), "single_p99_ms": 1e3 * pct(single, 0.99),
               "concurrent": loads[0], "concurrent_again": loads[-1], "rss_mb": rss,
               "errors": len(errors)}, open(out, "w"))
    if errors:
        print("errors:", errors[:3], file=sys.stderr)
        sys.exit(1)


main()
