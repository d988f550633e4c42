"""A real HTTP server on 127.0.0.1 serving generated images and every fault a URL list meets, counting
the requests per path. Used by tests/images/test_download_images.py and bench/download.py.

Paths: /img/<name> (an image of `images`), /missing (404), /flaky/<name> (500 once, then the image),
/busy/<name> (429 with Retry-After once, then the image), /down/<name> (always 503), /slow (a body
trickled past any timeout), /redirect/<name> (302 to /img/<name>), /loop/a <-> /loop/b, /truncated
(half the body its Content-Length promised), /html (a page served as image/jpeg), /bomb (a PNG whose
header claims 100,000 x 100,000 pixels), /huge (Content-Length 10 GB), /noai/<name> (the image with
X-Robots-Tag: noai). `latency` seconds are slept before every answer.
"""
from __future__ import annotations

import io
import struct
import threading
import time
import zlib
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from PIL import Image


def jpeg(seed: int, size: int = 64, exif: Image.Exif | None = None) -> bytes:
    """A small JPEG, different for every seed (a gradient and a seeded colour)."""
    image = Image.linear_gradient("L").resize((size, size)).convert("RGB")
    image.paste((seed * 37 % 256, seed * 91 % 256, seed * 53 % 256), (0, 0, size // 2, size // 2))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=85, **({"exif": exif} if exif is not None else {}))
    return out.getvalue()


def gps_jpeg(seed: int = 7, size: int = 96) -> bytes:
    """A JPEG with EXIF GPS (Sydney: 33°51'36" S, 151°12'36" E) and a capture time."""
    exif = Image.Exif()
    exif[306] = "2019:05:04 12:00:00"
    exif.get_ifd(0x8825).update({1: "S", 2: (33.0, 51.0, 36.0), 3: "E", 4: (151.0, 12.0, 36.0)})
    return jpeg(seed, size=size, exif=exif)


def bomb_png(width: int = 100_000, height: int = 100_000) -> bytes:
    """A valid PNG header claiming width x height pixels, with one tiny IDAT: a decompression bomb."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
            + chunk(b"IEND", b""))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def handle_error(self, request, client_address):
        pass  # a client that hangs up mid-body (a refused /huge, a timed-out /slow) is the test, not an error


class ImageServer:
    def __init__(self, images: dict[str, bytes], latency: float = 0.0, slow_s: float = 3.0):
        self.images, self.latency, self.slow_s = images, latency, slow_s
        self.requests: Counter[str] = Counter()
        self.answer_down_with: bytes | None = None  # set: /down/ recovers and serves these bytes
        self.user_agents: set[str] = set()
        self.active = self.most_active = 0  # requests being answered at once, and the most seen
        self.lock = threading.Lock()
        self.httpd = _Server(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                with server.lock:
                    server.requests[self.path] += 1
                    seen = server.requests[self.path]
                    server.user_agents.add(self.headers.get("User-Agent", ""))
                    server.active += 1
                    server.most_active = max(server.most_active, server.active)
                try:
                    if server.latency:
                        time.sleep(server.latency)
                    server.answer(self, self.path, seen)
                finally:
                    with server.lock:
                        server.active -= 1

        return Handler

    def answer(self, h, path: str, seen: int) -> None:
        kind, _, name = path.split("?")[0].strip("/").partition("/")
        if kind in ("img", "noai") and name in self.images:
            return send(h, 200, self.images[name], **({"X-Robots-Tag": "noai"} if kind == "noai" else {}))
        if kind == "flaky" and name in self.images:
            return send(h, 500, b"busy") if seen == 1 else send(h, 200, self.images[name])
        if kind == "busy" and name in self.images:
            return send(h, 429, b"slow down", **{"Retry-After": "1"}) if seen == 1 else send(h, 200, self.images[name])
        if kind == "down":
            return send(h, 503, b"down") if self.answer_down_with is None else send(h, 200, self.answer_down_with)
        if kind == "redirect":
            return send(h, 302, b"", Location=f"/img/{name}")
        if kind == "loop":
            return send(h, 302, b"", Location="/loop/b" if name == "a" else "/loop/a")
        if kind == "html":
            return send(h, 200, b"<!doctype html><html><body>Not found</body></html>", **{"Content-Type": "image/jpeg"})
        if kind == "bomb":
            return send(h, 200, bomb_png(), **{"Content-Type": "image/png"})
        if kind in ("truncated", "huge", "slow"):
            return self._bad_body(h, kind)
        send(h, 404, b"no such image")

    def _bad_body(self, h, kind: str) -> None:
        body = next(iter(self.images.values()))
        declared = {"truncated": len(body), "huge": 10 ** 10, "slow": len(body)}[kind]
        h.send_response(200)
        h.send_header("Content-Type", "image/jpeg")
        h.send_header("Content-Length", str(declared))
        h.end_headers()
        if kind == "slow":  # a byte every 0.2 s: no single read times out, the whole body does
            try:
                for i in range(int(self.slow_s / 0.2)):
                    h.wfile.write(body[i:i + 1])
                    h.wfile.flush()
                    time.sleep(0.2)
            except OSError:  # the client gave up: that is the point
                pass
        else:
            h.wfile.write(body[: len(body) // 2])
        h.close_connection = True


def send(h, code: int, body: bytes, **headers: str) -> None:
    h.send_response(code)
    h.send_header("Content-Type", headers.pop("Content-Type", "image/jpeg" if code == 200 else "text/plain"))
    h.send_header("Content-Length", str(len(body)))
    for key, value in headers.items():
        h.send_header(key, value)
    h.end_headers()
    h.wfile.write(body)
