#!/usr/bin/env python3
"""A local stand-in for the Hugging Face Hub's download routes, for tests/regression/test_hub_models.sh.

Serves model repositories built from local folders (their top-level files, and the files of the
subfolders named with --subdirs) at one commit each, by the routes huggingface_hub and unif use:
  GET  /api/models/{repo}/revision/{rev}      {"id", "sha", "siblings": [{"rfilename"}]}
  GET  /api/models/{repo}/tree/{rev}          the file list (recursive), with LFS sha256 and sizes
  HEAD/GET /{repo}/resolve/{rev}/{file}       a regular file: 200 with ETag (git blob sha1),
                                              X-Repo-Commit, Content-Length; an LFS file (*.safetensors,
                                              *.bin): 302 to the CDN with X-Linked-Etag (sha256),
                                              X-Linked-Size, X-Repo-Commit
  HEAD/GET /cdn/{repo}/{sha256}               on a second port (another origin): the LFS bytes
GET honours `Range: bytes=N-` (206, Content-Range). Errors carry X-Error-Code as the Hub's do
(RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo).

Usage: hub_server.py PORTFILE LOG --repo ID=DIR [--repo ...] [--subdirs A,B] [--private ID --token T]
                     [--corrupt ID]
  PORTFILE      written once listening: "HUBPORT CDNPORT"
  LOG           one line a request: "hub|cdn METHOD PATH range=... auth=..."
  --private ID  the repo's Hub routes require "Authorization: Bearer T" (401 without, 403 with another)
  --corrupt ID  the CDN sends the repo's LFS files with their last byte changed (same length)
"""
import argparse
import hashlib
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin", ".model")


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, repo_id, folder, subdirs):
        self.id = repo_id
        self.files = {}
        for root, dirs, names in os.walk(folder):
            rel_root = os.path.relpath(root, folder)
            if rel_root != "." and rel_root.split(os.sep)[0] not in subdirs:
                dirs[:] = []
                continue
            for name in sorted(names):
                rel = name if rel_root == "." else os.path.join(rel_root, name).replace(os.sep, "/")
                with open(os.path.join(root, name), "rb") as f:
                    self.files[rel] = f.read()
        digest = hashlib.sha1(repo_id.encode())
        for name in sorted(self.files):
            digest.update(name.encode() + b"\0" + self.files[name])
        self.sha = digest.hexdigest()

    def lfs(self, name):
        return name.endswith(LFS_SUFFIXES)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("portfile")
    ap.add_argument("log")
    ap.add_argument("--repo", action="append", default=[])
    ap.add_argument("--subdirs", default="")
    ap.add_argument("--private", action="append", default=[])
    ap.add_argument("--token")
    ap.add_argument("--corrupt", action="append", default=[])
    args = ap.parse_args()
    subdirs = set(filter(None, args.subdirs.split(",")))
    repos = {}
    for spec in args.repo:
        repo_id, folder = spec.split("=", 1)
        repos[repo_id] = Repo(repo_id, folder, subdirs)
    blobs = {}  # "repo/sha256" -> the bytes the CDN sends
    for repo in repos.values():
        for name, data in repo.files.items():
            if repo.lfs(name):
                sent = data[:-1] + bytes([data[-1] ^ 0xFF]) if repo.id in args.corrupt else data
                blobs[repo.id + "/" + hashlib.sha256(data).hexdigest()] = sent
    log_lock = threading.Lock()
    ports = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def record(self):
            with log_lock, open(args.log, "a") as f:
                f.write("%s %s %s range=%s auth=%s\n" % (
                    "cdn" if self.server.server_address[1] == ports.get("cdn") else "hub", self.command,
                    self.path, self.headers.get("Range", "-"), self.headers.get("Authorization", "-").replace(" ", "_")))

        def send(self, status, body=b"", headers=None, content_type="application/octet-stream"):
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def error(self, status, code, message):
            self.send(status, json.dumps({"error": message}).encode(),
                      {"X-Error-Code": code, "X-Error-Message": message}, "application/json")

        def bytes_with_range(self, data, headers):
            rng = self.headers.get("Range")
            if rng and rng.startswith("bytes=") and self.command == "GET":
                first = int(rng[len("bytes="):].split("-")[0])
                if first >= len(data):
                    return self.send(416, b"", {"Content-Range": "bytes */%d" % len(data)})
                part = data[first:]
                headers = dict(headers, **{"Content-Range": "bytes %d-%d/%d" % (first, len(data) - 1, len(data))})
                return self.send(206, part, headers)
            self.send(200, data, headers)

        def authorized(self, repo_id):
            if repo_id not in args.private:
                return True
            got = self.headers.get("Authorization")
            if got is None:
                self.error(401, "RepoNotFound", "Invalid username or password.")
                return False
            if got != "Bearer " + args.token:
                self.error(403, "GatedRepo", "Access to this model is restricted.")
                return False
            return True

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            self.record()
            path = urlsplit(self.path).path
            if self.server.server_address[1] == ports.get("cdn"):
                key = path[len("/cdn/"):]
                if not path.startswith("/cdn/") or key not in blobs:
                    return self.send(404, b"no such blob")
                return self.bytes_with_range(blobs[key], {"ETag": '"%s"' % key.rsplit("/", 1)[1]})
            parts = [unquote(p) for p in path.split("/")]
            if path.startswith("/api/models/"):
                # /api/models/{org}/{name}/(revision|tree)/{rev}
                rest = parts[3:]
                for i, word in enumerate(rest):
                    if word in ("revision", "tree") and i >= 1:
                        repo_id, kind, rev = "/".join(rest[:i]), word, "/".join(rest[i + 1:])
                        break
                else:
                    return self.error(404, "RepoNotFound", "no such route")
                if not self.authorized(repo_id):
                    return
                repo = repos.get(repo_id)
                if repo is None:
                    return self.error(404, "RepoNotFound", "Repository not found")
                if rev not in ("main", repo.sha):
                    return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
                if kind == "revision":
                    body = {"id": repo.id, "modelId": repo.id, "sha": repo.sha,
                            "siblings": [{"rfilename": n} for n in sorted(repo.files)]}
                else:
                    body = []
                    for n in sorted(repo.files):
                        data = repo.files[n]
                        entry = {"type": "file", "path": n, "size": len(data), "oid": git_blob_sha1(data)}
                        if repo.lfs(n):
                            entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                                            "pointerSize": 134}
                        body.append(entry)
                return self.send(200, json.dumps(body).encode(), content_type="application/json")
            # /{org}/{name}/resolve/{rev}/{file...}
            if "resolve" not in parts:
                return self.error(404, "RepoNotFound", "no such route")
            i = parts.index("resolve")
            repo_id, rev, name = "/".join(parts[1:i]), parts[i + 1], "/".join(parts[i + 2:])
            if not self.authorized(repo_id):
                return
            repo = repos.get(repo_id)
            if repo is None:
                return self.error(404, "RepoNotFound", "Repository not found")
            if rev not in ("main", repo.sha):
                return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
            if name not in repo.files:
                return self.send(404, b"Entry not found", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": repo.sha})
            data = repo.files[name]
            if repo.lfs(name):
                sha = hashlib.sha256(data).hexdigest()
                return self.send(302, b"", {
                    "Location": "http://127.0.0.1:%d/cdn/%s/%s" % (ports["cdn"], repo.id, sha),
                    "X-Linked-Etag": '"%s"' % sha, "X-Linked-Size": str(len(data)), "X-Repo-Commit": repo.sha,
                    "ETag": '"%s"' % git_blob_sha1(b"pointer " + sha.encode())})
            self.bytes_with_range(data, {"ETag": '"%s"' % git_blob_sha1(data), "X-Repo-Commit": repo.sha})

    hub = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    cdn = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ports["hub"], ports["cdn"] = hub.server_address[1], cdn.server_address[1]
    threading.Thread(target=cdn.serve_forever, daemon=True).start()
    with open(args.portfile + ".tmp", "w") as f:
        f.write("%d %d\n" % (ports["hub"], ports["cdn"]))
    os.replace(args.portfile + ".tmp", args.portfile)
    try:
        hub.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
