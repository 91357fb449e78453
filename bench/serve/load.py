"""Load for `unif serve` (bench/serve/run.sh), Python standard library plus wrk (Debian's `wrk`).

  load.py PORT PID TEXTS.jsonl CLIENTS SECONDS OUT.json

Each request is one record {"text": ...} from TEXTS (cycled):
  1. single: 50 requests one after another (one client): latency p50 / p99, and every answer must
     be 200 with one output that has a label;
  2. concurrent: wrk, one thread driving CLIENTS keep-alive connections that each send requests back
     to back for SECONDS (after a 3 s warm-up): records/s, latency p50 / p99, no non-2xx answer and
     no socket error allowed. wrk is an event loop in C: the load costs the 2 cores far less than
     CLIENTS Python threads would, so the figure is the server's;
  3. the concurrent phase again, LOADS (env, default 3) times in all (memory: the server's RSS after each load; a
     server that keeps per-request memory grows by the same amount each time, caches and allocator
     arenas settle after the first).
"""
import http.client
import json
import os
import re
import subprocess
import sys
import time


def rss_mb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def lua_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def ms(value, unit):
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def wrk(port, script, clients, seconds):
    cmd = ["wrk", "-t1", "-c%d" % clients, "-d%ds" % seconds, "--timeout", "60s", "--latency", "-s", script,
           "http://127.0.0.1:%d" % port]
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    if "Non-2xx" in text or "Socket errors" in text:
        sys.exit("wrk saw failed requests:\n" + text)
    lat = {q: ms(v, u) for q, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)}
    rps = float(re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M).group(1))
    return {"records_per_s": rps, "p50_ms": lat["50"], "p99_ms": lat["99"],
            "requests": int(re.search(r"(\d+) requests in", text).group(1))}


def main():
    port, pid, path, clients, seconds, out = sys.argv[1:]
    port, pid, clients, seconds = int(port), int(pid), int(clients), int(seconds)
    texts = [json.loads(x)["text"] for x in open(path, encoding="utf-8") if x.strip()]
    bodies = [json.dumps({"inputs": [{"text": t}]}) for t in texts]

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    single = []
    for i in range(50):
        t0 = time.perf_counter()
        conn.request("POST", "/v1/predict", body=bodies[i % len(bodies)], headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        single.append(time.perf_counter() - t0)
        if r.status != 200 or "label" not in json.loads(data)["outputs"][0]:
            sys.exit("bad answer %d: %s" % (r.status, data[:200]))
    conn.close()

    script = os.path.join(os.path.dirname(out), "post.lua")
    with open(script, "w", encoding="utf-8") as f:
        f.write("local bodies = {\n" + ",\n".join(lua_string(b) for b in bodies) + "\n}\n")
        f.write('local i = 0\nwrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                'request = function()\n  i = i % #bodies + 1\n'
                '  return wrk.format(nil, "/v1/predict", nil, bodies[i])\nend\n')
    wrk(port, script, clients, 3)  # warm-up
    rss = [rss_mb(pid)]
    loads = []
    for _ in range(int(os.environ.get("LOADS", "3"))):
        loads.append(wrk(port, script, clients, seconds))
        rss.append(rss_mb(pid))
    json.dump({"single_p50_ms": 1e3 * pct(single, 0.5), "single_p99_ms": 1e3 * pct(single, 0.99),
               "concurrent": loads[0], "concurrent_again": loads[-1], "loads": loads, "rss_mb": rss},
              open(out, "w"))


main()
