"""Clients for test_serve.sh (Python standard library only), every wait bounded.

  serve_client.py concurrent PORT CLIENTS ROUNDS INPUT.jsonl EXPECTED.jsonl
      CLIENTS threads, each ROUNDS requests of 1-3 records of INPUT; every answer must be 200 and
      each output match EXPECTED's line for that record (`unif predict`'s answer: same label and
      input, probabilities within 1e-5, since a batch of other lengths pads differently).
  serve_client.py slow PORT      a client that stops sending mid-body: the server drops it in bounded time
  serve_client.py dropped PORT   a client that closes mid-request; the server then still answers
  serve_client.py trickle PORT SOCKETS DEADLINE
      SOCKETS connections each send one byte of a request head every 0.5 s, never ending it. While
      they do, GET /health and GET /metrics must be answered within 2 s; each trickler must be
      dropped (closed, or answered 408) DEADLINE s (the server's --request-timeout) after its first
      byte, give or take.
  serve_client.py sigterm PORT PID CLIENTS IDLE
      IDLE connections are opened and send nothing (other clients' connections, which hold a server
      thread each where a server gives every connection one); then CLIENTS clients send POST
      /v1/predict back to back, each request on a connection of its own, and after 0.3 s the server
      PID gets SIGTERM (the idle connections close 1 s later). Every request must be answered 200,
      or refused when connecting (the server has stopped accepting): none may go unanswered on a
      connection the server accepted (closed, or reset).
  serve_client.py memory PORT PID ROUNDS REQUESTS INPUT.jsonl
      ROUNDS rounds of REQUESTS requests (4 clients, 1-3 records of INPUT each, every answer 200),
      the server's resident memory (VmRSS of PID) read after each: what the server keeps grows
      while its allocator and LibTorch fill their caches, then levels off. The growth over the
      second half of the rounds must stay under 8 MB (a request's worth leaked each time would grow
      the same in every round).
"""
import http.client
import json
import os
import select
import signal
import socket
import sys
import threading
import time


def post(port, body, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("POST", "/v1/predict", body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def health(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/health")
    r = c.getresponse()
    ok = r.status == 200 and json.loads(r.read()) == {"status": "ok"}
    c.close()
    return ok


def same(got, want):
    if set(got) != set(want) or got.get("label") != want.get("label") or got.get("input") != want.get("input"):
        return False
    return all(abs(a - b) <= 1e-5 for a, b in zip(got.get("probs", []), want.get("probs", [])))


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def memory(port, pid, rounds, requests, input_file):
    records = [json.loads(l) for l in open(input_file, encoding="utf-8")]
    failures = []
    lock = threading.Lock()
    rss = []
    for r in range(rounds):
        def client(c):
            for q in range(c, requests, 4):
                k = 1 + q % 3
                body = json.dumps({"inputs": [records[(q * 5 + j) % len(records)] for j in range(k)]})
                try:
                    status, _ = post(port, body)
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    status = repr(e)
                if status != 200:
                    with lock:
                        failures.append((r, q, status))
        threads = [threading.Thread(target=client, args=(c,)) for c in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        rss.append(rss_kb(pid))
    print("resident MB after each round of", requests, "requests:", " ".join(f"{k / 1024:.1f}" for k in rss))
    if failures:
        print("failures:", failures[:5])
        return 1
    growth = (rss[-1] - rss[len(rss) // 2 - 1]) / 1024
    print(f"growth over the last {rounds - len(rss) // 2} rounds: {growth:.1f} MB")
    return 0 if growth < 8 else 1


def concurrent(port, clients, rounds, input_file, expected_file):
    records = [json.loads(l) for l in open(input_file, encoding="utf-8")]
    expected = [json.loads(l) for l in open(expected_file, encoding="utf-8")]
    assert len(records) == len(expected)
    failures = []
    lock = threading.Lock()

    def client(c):
        for r in range(rounds):
            k = 1 + (c + r) % 3
            idx = [(c * 7 + r * 3 + j) % len(records) for j in range(k)]
            data = b""
            try:
                status, data = post(port, json.dumps({"inputs": [records[i] for i in idx]}))
                outputs = json.loads(data)["outputs"] if status == 200 else None
            except Exception as e:  # noqa: BLE001 - every failure is reported
                status, outputs = repr(e), None
            bad = status != 200 or len(outputs) != k or not all(same(o, expected[i]) for o, i in zip(outputs, idx))
            if bad:
                with lock:
                    failures.append((c, r, status, data[:300]))

    t0 = time.time()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    alive = sum(t.is_alive() for t in threads)
    print(f"{clients} clients x {rounds} requests in {time.time() - t0:.1f} s; failures: {len(failures)}, hung: {alive}")
    for f in failures[:5]:
        print("  ", f)
    return 0 if not failures and not alive else 1


def slow(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
              b'{"inputs":')
    t0 = time.time()
    try:
        got = s.recv(4096)  # the server's read timeout ends the wait: an answer or the connection closed
    except socket.timeout:
        got = None
    waited = time.time() - t0
    s.close()
    print(f"slow client: dropped after {waited:.1f} s ({'timed out' if got is None else repr(got[:40])})")
    return 0 if got is not None and waited < 20 and health(port) else 1


def dropped(port):
    for _ in range(5):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{\"inp")
        s.close()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /hea")
    s.close()
    time.sleep(0.2)
    status, data = post(port, json.dumps({"inputs": [{"text": "x"}]}))
    ok = health(port) and status == 200
    print(f"dropped connections: server still answers ({status})")
    return 0 if ok else 1


def trickle(port, sockets, deadline):
    head = b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Slow: " + b"a" * 4000
    conns = []
    for _ in range(sockets):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.setblocking(False)
        conns.append({"sock": s, "sent": 0, "first": None, "dropped": None, "got": b""})
    probes = {}

    def probe():
        time.sleep(1.0)  # every trickler holds its connection by now
        for path in ("/health", "/metrics"):
            t = time.time()
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", path)
                r = c.getresponse()
                r.read()
                c.close()
                probes[path] = (r.status, time.time() - t)
            except Exception as e:  # noqa: BLE001 - a timeout is the failure reported
                probes[path] = (repr(e), time.time() - t)

    prober = threading.Thread(target=probe)
    prober.start()
    limit = time.time() + deadline + 8
    next_send = 0.0
    while time.time() < limit:
        live = [c for c in conns if c["dropped"] is None]
        if not live:
            break
        now = time.time()
        if now >= next_send:
            next_send = now + 0.5
            for c in live:
                try:
                    c["sock"].send(head[c["sent"]:c["sent"] + 1])
                    c["sent"] += 1
                    if c["first"] is None:
                        c["first"] = now
                except BlockingIOError:
                    pass
                except OSError:
                    c["dropped"] = time.time()
        readable, _, _ = select.select([c["sock"] for c in live if c["dropped"] is None], [], [], 0.05)
        for c in live:
            if c["sock"] not in readable:
                continue
            try:
                data = c["sock"].recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            c["got"] += data
            if not data:
                c["dropped"] = time.time()
    prober.join(10)
    for c in conns:
        c["sock"].close()
    times = [c["dropped"] - c["first"] for c in conns if c["dropped"] is not None and c["first"] is not None]
    held = sum(c["dropped"] is None for c in conns)
    answers = {c["got"][:12] for c in conns}
    print(f"{sockets} tricklers: probes {probes}; dropped {len(times)} after "
          f"{min(times, default=0):.1f}-{max(times, default=0):.1f} s (deadline {deadline} s), still held {held}; "
          f"answers {answers}")
    probes_ok = all(v[0] == 200 and v[1] < 2 for v in probes.values()) and len(probes) == 2
    dropped_ok = held == 0 and all(deadline - 0.6 <= t <= deadline + 3 for t in times)
    answers_ok = all(a in (b"", b"HTTP/1.1 408") for a in answers)
    return 0 if probes_ok and dropped_ok and answers_ok else 1


def sigterm(port, pid, clients, idle):
    body = json.dumps({"inputs": [{"text": "今天天气很好"}]}).encode()
    request = (b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
               b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    counts = {"answered": 0, "refused": 0, "lost": 0}
    lost = []
    lock = threading.Lock()
    stop_at = time.time() + 15

    def client():
        while time.time() < stop_at:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
            except ConnectionRefusedError:
                with lock:
                    counts["refused"] += 1
                return
            data, error = b"", None
            try:
                s.sendall(request)
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError as e:
                error = e
            finally:
                s.close()
            with lock:
                if data.startswith(b"HTTP/1.1 200") and b'"outputs"' in data:
                    counts["answered"] += 1
                else:
                    counts["lost"] += 1
                    lost.append((repr(error), data[:80]))

    holders = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(idle)]
    time.sleep(0.1)
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    os.kill(pid, signal.SIGTERM)
    time.sleep(1)
    for s in holders:
        s.close()
    for t in threads:
        t.join(20)
    alive = sum(t.is_alive() for t in threads)
    total = sum(counts.values())
    print(f"SIGTERM: {total} requests: {counts['answered']} answered, {counts['refused']} refused, "
          f"{counts['lost']} lost {lost[:3]}; hung clients: {alive}")
    return 0 if counts["lost"] == 0 and counts["refused"] == clients and counts["answered"] > 0 and not alive else 1


if __name__ == "__main__":
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "memory":
        sys.exit(memory(port, int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]))
    if mode == "concurrent":
        sys.exit(concurrent(port, int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]))
    if mode == "trickle":
        sys.exit(trickle(port, int(sys.argv[3]), float(sys.argv[4])))
    if mode == "sigterm":
        sys.exit(sigterm(port, int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
    sys.exit({"slow": slow, "dropped": dropped}[mode](port))
