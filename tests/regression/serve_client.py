"""Clients for test_serve.sh (Python standard library only), every wait bounded.

  serve_client.py concurrent PORT CLIENTS ROUNDS INPUT.jsonl EXPECTED.jsonl
      CLIENTS threads, each ROUNDS requests of 1-3 records of INPUT; every answer must be 200 and
      each output match EXPECTED's line for that record (`unif predict`'s answer: same label and
      input, probabilities within 1e-5, since a batch of other lengths pads differently).
  serve_client.py slow PORT      a client that stops sending mid-body: the server drops it in bounded time
  serve_client.py dropped PORT   a client that closes mid-request; the server then still answers
"""
import http.client
import json
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


if __name__ == "__main__":
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "concurrent":
        sys.exit(concurrent(port, int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]))
    sys.exit({"slow": slow, "dropped": dropped}[mode](port))
