"""A STAND-IN for the Hugging Face Hub's HTTP API on 127.0.0.1 — not the Hub. It answers what
huggingface_hub 0.36.2's client calls for a dataset repo, read from that client's own code
(hf_api.py, _commit_api.py, lfs.py, file_download.py): create repo (POST /api/repos/create), revision info
(GET /api/datasets/ID[/revision/REV], siblings included), refs, branch, tag, tree (recursive), paths-info,
preupload (upload modes, remote oids), the LFS batch API (`basic` transfer only: it never offers Xet), the
LFS PUT and verify, validate-yaml, the ndjson commit (parentCommit checked: 412 when the head moved) and
resolve (HEAD and GET with X-Repo-Commit, ETag, X-Linked-Etag/Size). Every request but a download from a
public repo needs the one token it was started with (Authorization: Bearer); every request is recorded
for the tests to check, and faults can be injected (an answer's status, a PUT that hangs)."""
from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

LFS_SUFFIXES = (".parquet", ".png", ".jpg", ".jpeg", ".arrow", ".tar", ".zip", ".bin")  # the Hub's .gitattributes
LFS_MIN_SIZE = 10 * 1024 * 1024  # the Hub stores larger files in LFS whatever their name


def git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Blob:
    size: int
    oid: str  # git id of the content (regular) or of the pointer (LFS)
    sha256: str | None = None  # an LFS file's content id
    data: bytes | None = None  # a regular file's content

    def entry(self, path: str) -> dict:
        out = {"type": "file", "path": path, "size": self.size, "oid": self.oid}
        if self.sha256:
            out["lfs"] = {"oid": self.sha256, "size": self.size, "pointerSize": 134}
        return out


@dataclass
class Repo:
    private: bool
    commits: dict[str, dict[str, Blob]] = field(default_factory=dict)  # commit oid -> tree
    messages: dict[str, dict] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (commit, message)


@dataclass
class Request:
    method: str
    path: str
    query: dict
    body: bytes
    authorized: bool


class HubStandIn:
    """The stand-in's state and its server; `url` is its endpoint."""

    def __init__(self, token: str):
        self.token = token
        self.repos: dict[str, Repo] = {}
        self.lfs: dict[str, bytes] = {}
        self.requests: list[Request] = []
        self.faults: list[tuple[str, str, int]] = []  # (method, path regex, status): answered once each
        self.hang_put_after: int | None = None  # after this many LFS PUTs, the next ones hang (a killed client)
        self._puts = 0
        self.hanging = threading.Event()
        self.before_commit = None  # called once before the next commit is applied (another client's commit)
        self.drop_commit_answer = False  # the next commit is applied, then its connection closed unanswered
        self.after_412 = None
        self.lock = threading.Lock()
        self._counter = 0
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        self.server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop(self):
        self.hang_put_after = None
        self.hanging.set()
        self.server.shutdown()
        self.server.server_close()

    def arrived(self) -> int:
        """Count an LFS PUT arriving; how many have."""
        with self.lock:
            self._puts += 1
            return self._puts

    def signature(self, path: str) -> str:
        return hashlib.sha256(f"{self.token}:{path}".encode()).hexdigest()[:32]

    # what the tests read
    def calls(self, method: str, pattern: str) -> list[Request]:
        return [r for r in self.requests if r.method == method and re.search(pattern, r.path)]

    def lfs_bytes_received(self) -> int:
        return sum(len(r.body) for r in self.calls("PUT", r"^/lfs-upload/"))

    def head(self, repo_id: str, branch: str = "main") -> str:
        return self.repos[repo_id].branches[branch]

    def tree(self, repo_id: str, revision: str = "main") -> dict[str, Blob]:
        repo = self.repos[repo_id]
        return repo.commits[repo.branches.get(revision, revision)]

    def commit_outside(self, repo_id: str, files: dict[str, bytes], branch: str = "main") -> str:
        """A commit by someone else (a moved head)."""
        with self.lock:
            repo = self.repos[repo_id]
            tree = dict(repo.commits[repo.branches[branch]])
            for path, data in files.items():
                tree[path] = Blob(len(data), git_sha1(data), data=data)
            return self._new_commit(repo, branch, tree, {"summary": "outside"})

    # the state's changes
    def _new_commit(self, repo: Repo, branch: str, tree: dict[str, Blob], header: dict) -> str:
        self._counter += 1
        oid = hashlib.sha1(f"{self._counter}:{json.dumps(sorted(tree))}".encode()).hexdigest()
        repo.commits[oid], repo.messages[oid] = tree, header
        repo.branches[branch] = oid
        return oid

    def create(self, repo_id: str, private: bool) -> bool:
        with self.lock:
            if repo_id in self.repos:
                return False
            repo = Repo(private)
            attributes = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n*.png filter=lfs diff=lfs merge=lfs -text\n"
            self._new_commit(repo, "main", {".gitattributes": Blob(len(attributes), git_sha1(attributes),
                                                                     data=attributes)}, {"summary": "initial commit"})
            self.repos[repo_id] = repo
            return True


def _handler(hub: HubStandIn):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet: the tests read hub.requests
            pass

        def handle(self):
            try:
                super().handle()
            except (BrokenPipeError, ConnectionResetError):  # a client killed mid-request
                pass

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                return self.rfile.read(length)
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                data = b""
                while True:
                    size = int(self.rfile.readline().strip(), 16)
                    if size == 0:
                        self.rfile.readline()
                        return data
                    data += self.rfile.read(size)
                    self.rfile.readline()
            return b""

        def _send(self, status: int, payload=None, headers: dict | None = None, raw: bytes | None = None,
                  head: bool = False):
            data = raw if raw is not None else (json.dumps(payload).encode() if payload is not None else b"")
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            if raw is None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if not head:
                self.wfile.write(data)

        def _error(self, status: int, message: str, code: str | None = None):
            self._send(status, {"error": message}, {"X-Error-Code": code} if code else {})

        def _handle(self, method: str):
            url = urlparse(self.path)
            path, query = unquote(url.path), parse_qs(url.query)
            if method == "PUT" and path.startswith("/lfs-upload/") and hub.hang_put_after is not None \
                    and hub.arrived() > hub.hang_put_after:
                hub.hanging.set()  # mid-upload: nothing of this file read, until the client is gone
                while hub.hang_put_after is not None:
                    time.sleep(0.05)
                self.close_connection = True
                return  # its client was killed: the upload never arrived
            body = self._body() if method in ("POST", "PUT") else b""
            authorized = self.headers.get("Authorization") == f"Bearer {hub.token}"
            hub.requests.append(Request(method, path, query, body, authorized))
            for fault in list(hub.faults):
                if fault[0] == method and re.search(fault[1], path):
                    hub.faults.remove(fault)
                    return self._error(fault[2], "injected fault")
            public_read = method in ("GET", "HEAD") and "/resolve/" in path
            signed = path.startswith("/lfs-upload/") and query.get("sig") == [hub.signature(path)]
            if not authorized and not public_read and not signed:
                return self._error(401, "Invalid credentials in Authorization header")
            self.authorized = authorized
            try:
                return self._route(method, path, query, body)
            except KeyError as exc:
                return self._error(404, f"not found: {exc}", "EntryNotFound")
            except ValueError as exc:  # a body cut short (its client killed) or not JSON
                return self._error(400, f"bad request body: {exc}")

        def do_GET(self):
            self._handle("GET")

        def do_HEAD(self):
            self._handle("HEAD")

        def do_POST(self):
            self._handle("POST")

        def do_PUT(self):
            self._handle("PUT")

        def _repo(self, repo_id: str) -> Repo | None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._error(404, "Repository not found", "RepoNotFound")
            return repo

        def _commit_of(self, repo: Repo, revision: str) -> str | None:
            oid = repo.branches.get(revision) or (repo.tags[revision][0] if revision in repo.tags else None) \
                or (revision if revision in repo.commits else None)
            if oid is None:
                self._error(404, f"Revision Not Found for url: {revision}", "RevisionNotFound")
            return oid

        def _route(self, method, path, query, body):
            base = hub.url
            if method == "POST" and path == "/api/repos/create":
                req = json.loads(body)
                repo_id = f"{req['organization']}/{req['name']}"
                if not hub.create(repo_id, bool(req.get("private"))):
                    return self._error(409, "You already created this dataset repo")
                return self._send(200, {"url": f"{base}/datasets/{repo_id}"})
            if method == "POST" and path == "/api/validate-yaml":
                return self._send(200, {"errors": [], "warnings": []})
            if m := re.fullmatch(r"/lfs-upload/([0-9a-f]{64})", path):
                if hashlib.sha256(body).hexdigest() != m.group(1):
                    return self._error(400, "sha256 does not match")
                hub.lfs[m.group(1)] = body
                return self._send(200, {})
            if path == "/lfs-verify":
                req = json.loads(body)
                return self._send(200, {}) if req["oid"] in hub.lfs else self._error(404, "object not found")
            if m := re.fullmatch(r"/datasets/([^/]+/[^/]+)\.git/info/lfs/objects/batch", path):
                req = json.loads(body)
                if self._repo(m.group(1)) is None:
                    return
                objects = []
                for obj in req["objects"]:
                    entry = {"oid": obj["oid"], "size": obj["size"]}
                    if obj["oid"] not in hub.lfs:
                        upload = f"/lfs-upload/{obj['oid']}"  # signed, as the Hub's presigned storage URLs
                        entry["actions"] = {"upload": {"href": f"{base}{upload}?sig={hub.signature(upload)}"},
                                            "verify": {"href": f"{base}/lfs-verify"}}
                    objects.append(entry)
                return self._send(200, {"transfer": "basic", "objects": objects})  # never "xet"
            if m := re.fullmatch(r"/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path):
                repo = self._repo(m.group(1))
                if repo is not None and repo.private and not self.authorized:
                    return self._error(401, "Invalid credentials in Authorization header")
                if repo is None or (oid := self._commit_of(repo, m.group(2))) is None:
                    return
                blob = repo.commits[oid].get(m.group(3))
                if blob is None:
                    return self._error(404, "Entry not found", "EntryNotFound")
                data = hub.lfs[blob.sha256] if blob.sha256 else blob.data
                headers = {"X-Repo-Commit": oid, "ETag": f'"{blob.oid}"'}
                if blob.sha256:
                    headers |= {"X-Linked-Etag": f'"{blob.sha256}"', "X-Linked-Size": str(blob.size)}
                return self._send(200, raw=data, headers=headers, head=method == "HEAD")
            m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)(?:/(revision|refs|tree|paths-info|preupload|commit|tag|"
                             r"branch)(?:/([^/]+)(?:/(.*))?)?)?", path)
            if not m:
                return self._error(404, f"no route {method} {path}")
            repo_id, action, revision, rest = m.groups()
            repo = self._repo(repo_id)
            if repo is None:
                return
            if method == "GET" and action in (None, "revision"):
                oid = self._commit_of(repo, revision or "main")
                if oid is None:
                    return
                siblings = [{"rfilename": p, "size": b.size, "blobId": b.oid,
                             **({"lfs": {"size": b.size, "sha256": b.sha256, "pointerSize": 134}} if b.sha256 else {})}
                            for p, b in sorted(repo.commits[oid].items())]
                return self._send(200, {"id": repo_id, "sha": oid, "private": repo.private, "siblings": siblings})
            if method == "GET" and action == "refs":
                return self._send(200, {
                    "branches": [{"name": n, "ref": f"refs/heads/{n}", "targetCommit": o} for n, o in repo.branches.items()],
                    "converts": [], "tags": [{"name": n, "ref": f"refs/tags/{n}", "targetCommit": o}
                                            for n, (o, _) in repo.tags.items()]})
            if method == "POST" and action == "branch":
                start = json.loads(body or b"{}").get("startingPoint") or "main"
                with hub.lock:
                    repo.branches.setdefault(revision, repo.branches.get(start, start))
                return self._send(200, {})
            oid = self._commit_of(repo, revision or "main")
            if oid is None:
                return
            tree = repo.commits[oid]
            if method == "GET" and action == "tree":
                prefix = f"{rest}/" if rest else ""
                files = [b.entry(p) for p, b in sorted(tree.items()) if p.startswith(prefix)]
                folders = sorted({p[:i] for p in tree if p.startswith(prefix) for i in
                                  [k for k, c in enumerate(p) if c == "/"]})
                return self._send(200, [{"type": "directory", "path": f, "oid": "0" * 40} for f in folders] + files)
            if method == "POST" and action == "paths-info":
                paths = parse_qs(body.decode()).get("paths", [])
                return self._send(200, [tree[p].entry(p) for p in paths if p in tree])
            if method == "POST" and action == "preupload":
                files = []
                for f in json.loads(body)["files"]:
                    lfs = f["path"].endswith(LFS_SUFFIXES) or f["size"] >= LFS_MIN_SIZE
                    known = tree.get(f["path"])
                    files.append({"path": f["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False,
                                  "oid": (known.sha256 if known and known.sha256 else known.oid) if known else None})
                return self._send(200, {"files": files, "commitOid": oid})
            if method == "POST" and action == "tag":
                req = json.loads(body)
                if req["tag"] in repo.tags:
                    return self._error(409, "Tag already exists")
                repo.tags[req["tag"]] = (oid, req.get("message", ""))
                return self._send(200, {})
            if method == "POST" and action == "commit":
                return self._commit(repo, repo_id, revision, body)
            return self._error(404, f"no route {method} {path}")

        def _commit(self, repo: Repo, repo_id: str, branch: str, body: bytes):
            lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
            header = lines[0]["value"]
            if hub.before_commit:
                hook, hub.before_commit = hub.before_commit, None
                hook()
            with hub.lock:
                head = repo.branches[branch]
                if header.get("parentCommit") and header["parentCommit"] != head:
                    if hub.after_412:  # called once after the next 412 is decided (a branch deleted meanwhile)
                        hook, hub.after_412 = hub.after_412, None
                        hook()
                    return self._error(412, "A commit has happened since. Please refresh and try again.")
                tree = dict(repo.commits[head])
                for item in lines[1:]:
                    value = item["value"]
                    if item["key"] == "file":
                        data = base64.b64decode(value["content"])
                        tree[value["path"]] = Blob(len(data), git_sha1(data), data=data)
                    elif item["key"] == "lfsFile":
                        if value["oid"] not in hub.lfs:
                            return self._error(400, f"LFS object {value['oid']} was never uploaded")
                        pointer = (f"version https://git-lfs.github.com/spec/v1\noid sha256:{value['oid']}\n"
                                   f"size {value['size']}\n").encode()
                        tree[value["path"]] = Blob(value["size"], git_sha1(pointer), sha256=value["oid"])
                    elif item["key"] == "deletedFile":
                        tree.pop(value["path"])
                    elif item["key"] == "deletedFolder":
                        tree = {p: b for p, b in tree.items() if not p.startswith(value["path"].rstrip("/") + "/")}
                oid = hub._new_commit(repo, branch, tree, header)
                if hub.drop_commit_answer:  # committed, and the answer lost on the way back
                    hub.drop_commit_answer = False
                    self.close_connection = True
                    return None
            return self._send(200, {"commitUrl": f"{hub.url}/datasets/{repo_id}/commit/{oid}", "commitOid": oid,
                                    "pullRequestUrl": None, "success": True})

    return Handler
