"""`xmdata explore RELEASE`: its arguments and what it does — (re)write RELEASE/explore/ when missing,
then serve the release folder on 127.0.0.1 behind a random token in the URL's path (the loopback
interface is everybody's on a shared machine: a request without the token gets 404), or print the
page's path (`--no-serve`; the page opens from file:// as well)."""
from __future__ import annotations

import argparse
import functools
import hmac
import http.server
import os
import secrets
import urllib.parse

from xmdata.cli_command import Command
from xmdata.cli_params import port_number

IMAGES = "_images"  # the URL folder --images is served under, beside the release's own files


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("release", help="a release folder (`xmdata release --out`)")
    p.add_argument("--port", type=port_number, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--images", default=None,
                   help="the folder the release's image paths are relative to (the scoring stage's image folder), "
                        "served beside the release for the thumbnails; images are never copied into a release")
    p.add_argument("--no-serve", action="store_true", help="write explore/ if missing and print the page's path")


def explore(args: argparse.Namespace) -> int:
    from xmdata.schemas.contract import ContractError
    from xmdata.tasks.release.explore import ensure_explore

    page = os.path.join(ensure_explore(args.release), "index.html")
    if args.images and not os.path.isdir(args.images):
        raise ContractError(f"--images {args.images}: no such folder")
    if args.no_serve:
        query = "?images=" + urllib.parse.quote(f"file://{os.path.abspath(args.images)}/", safe=":/") if args.images else ""
        print(f"file://{os.path.abspath(page)}{query}")
        return 0
    token = secrets.token_urlsafe(24)
    try:
        server = explore_server(args.release, token, args.port, args.images, os.path.dirname(page))
    except OSError as exc:  # the port is taken
        raise ContractError(f"--port {args.port}: {exc.strerror or exc}") from None
    query = f"?images=../{IMAGES}/" if args.images else ""
    print(f"http://127.0.0.1:{server.server_address[1]}/{token}/explore/index.html{query}  (Ctrl-C stops it)",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def explore_server(release: str, token: str, port: int = 0, images: str | None = None,
                   page: str | None = None):
    """A threading HTTP server on 127.0.0.1 for RELEASE's files under /TOKEN/ (IMAGES under
    /TOKEN/_images/, and PAGE, the explore folder when it is not the release's own, under
    /TOKEN/explore/), read-only, without directory listings."""
    own = os.path.abspath(os.path.join(release, "explore"))
    folders = {IMAGES: images, "explore": page if page and os.path.abspath(page) != own else None}
    handler = functools.partial(_TokenHandler, directory=os.path.abspath(release), token=token,
                                folders={k: os.path.abspath(v) for k, v in folders.items() if v})
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


class _TokenHandler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, directory: str, token: str, folders: dict[str, str], **kwargs):
        self.release, self.token, self.folders = directory, token, folders
        super().__init__(*args, directory=directory, **kwargs)

    def send_head(self):
        prefix = f"/{self.token}/"
        if not hmac.compare_digest(self.path[:len(prefix)].encode(), prefix.encode()):
            self.send_error(404)
            return None
        return super().send_head()

    def translate_path(self, path: str) -> str:
        rest, self.directory = path[len(self.token) + 1:], self.release  # what follows /TOKEN (send_head checked it)
        for name, folder in self.folders.items():
            if rest.startswith(f"/{name}/"):
                rest, self.directory = rest[len(name) + 1:], folder
        return super().translate_path(rest)  # keeps the path inside self.directory: no `..` leaves it

    def list_directory(self, path):
        self.send_error(404)
        return None

    def log_message(self, format, *args):  # quiet: the URL holds the token
        pass


EXPLORE = Command("explore", "browse a release in a browser: images on a map, captions, translations with their "
                  "candidates and scores, CLIPScores, rejects (RELEASE/explore/index.html)", add_arguments, explore,
                  guide="how-to/releases.md")
