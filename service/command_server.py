"""The service's command process: a warm copy of the `xmdata` command for every later command.

A command's own process spends ~2.5 CPU-s importing Prefect, Dask, pandas, polars and the flows
before it reads a row. This process imports them once (and starts no thread), then waits on a Unix
socket in the service's private folder. For each command the client (service/client.py) sends its
arguments, working folder and environment, with its stdin, stdout and stderr as file descriptors
(SCM_RIGHTS); this process forks, and the child becomes that command: the client's descriptors as
0/1/2, its folder, its environment, `xmdata.cli.main(argv)`, its exit status sent back. The client
forwards its signals to the child; a child whose client is gone (killed) is killed too, at once.

Only the owner gets in: the socket sits in the 0700 secrets folder, and a connection whose peer
(SO_PEERCRED) is another user is closed unread. A command whose environment differs from this
process's where Python or the libraries read it as they load (service/warm_cold.py) is
refused, and the client runs it in its own process. The process ends with the service, or when its socket
is removed. Started by a command that started the service, it imports only once that command has
ended (at most AFTER_COMMAND_LIMIT_S later): on 2 cores its imports slowed the first demo.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

from xmdata.runtime import settings

from .service_files import INFO_NAME, SOCKET_NAME, command_environment
from .warm_cold import differing, import_time_hashes
from .warm_imports import warm_up

HEADER = struct.Struct("!I")  # the length of the JSON message that follows
MAX_MESSAGE = 4 << 20
FDS = 3  # stdin, stdout, stderr
AFTER_COMMAND_LIMIT_S = 60.0  # the longest the imports wait for the command that started the service


def recv_message(conn: socket.socket) -> tuple[dict, list[int]]:
    """One length-prefixed JSON message, and the descriptors sent with its first bytes."""
    data, fds = b"", []
    while len(data) < HEADER.size or len(data) < HEADER.size + HEADER.unpack_from(data)[0]:
        chunk, more, _flags, _addr = socket.recv_fds(conn, 1 << 16, FDS)
        if not chunk:
            raise ConnectionError("closed before a whole message")
        data, fds = data + chunk, fds + list(more)
        if len(data) >= HEADER.size and HEADER.unpack_from(data)[0] > MAX_MESSAGE:
            raise ConnectionError("message too large")
    return json.loads(data[HEADER.size:HEADER.size + HEADER.unpack_from(data)[0]]), fds


def send_message(conn: socket.socket, message: dict, fds: list[int] = ()) -> None:
    body = json.dumps(message).encode()
    payload = HEADER.pack(len(body)) + body
    if fds:
        socket.send_fds(conn, [payload], list(fds))
    else:
        conn.sendall(payload)


def peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def _become_the_command(conn: socket.socket, message: dict, fds: list[int]) -> None:
    """In the forked child: take the client's descriptors, folder and environment, run, report."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    if os.isatty(1):
        sys.stdout.reconfigure(line_buffering=True)
    os.chdir(message["cwd"])
    settings.become_environment(message["env"])
    _follow_python_switches()
    sys.argv = ["xmdata", *message["argv"]]

    finished = threading.Event()

    def watch_client() -> None:
        """The client closed the connection before the command ended: it was killed (kill -9, or it
        could not forward a signal). The command dies as a command killed so would have: at once."""
        try:
            conn.recv(1)
        except OSError:
            pass
        if not finished.is_set():
            os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch_client, daemon=True, name="xmdata-client-watch").start()
    from xmdata.cli import main
    from xmdata.exit_codes import FAILED, INTERRUPTED

    from xmdata.runtime.process_end import PROCESS_ENDS

    def report(code: int) -> None:  # a command that ends at once (process_end.exit_now) still says its status
        finished.set()
        send_message(conn, {"exit": code, "cpu_s": round(sum(os.times()[:2]), 3)})

    PROCESS_ENDS.report_exit_to(report)

    try:
        # The pid last, just before main: the client forwards a signal it got while waiting once it has
        # the pid, and a Ctrl-C must then find the command where it ends as one (130), not before.
        send_message(conn, {"pid": os.getpid()})
        code = main(message["argv"])
    except SystemExit as exc:  # argparse's --help and usage errors
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:  # before main's own handler (in its first imports)
        code = INTERRUPTED
    except BaseException:  # as the command's own process would: the traceback on its stderr
        import traceback

        traceback.print_exc()
        code = FAILED
    PROCESS_ENDS.run()  # what the command started (decoder processes): its end skips exit handlers
    finished.set()  # from here the client may go: its status is on its way
    sys.stdout.flush()
    sys.stderr.flush()
    usage = os.times()
    try:
        send_message(conn, {"exit": code, "cpu_s": round(usage.user + usage.system, 3)})
    except OSError:
        pass
    sys.exit(code)


def _follow_python_switches() -> None:
    """The command's PYTHONDONTWRITEBYTECODE and PYTHONUNBUFFERED (warm_cold.WARM_WHEN_DIFFERENT), as
    Python would have applied them at the start of a process of the command's own."""
    import io

    sys.dont_write_bytecode = settings.PYTHONDONTWRITEBYTECODE.get()
    if settings.PYTHONUNBUFFERED.get():
        sys.stdout, sys.stderr = (io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding=stream.encoding,
                                                   errors=stream.errors, write_through=True)
                                  for fd, stream in ((1, sys.stdout), (2, sys.stderr)))


def wait_for_first_command(pid: int | None, service_pid: int, limit_s: float = AFTER_COMMAND_LIMIT_S) -> None:
    """Before the imports: until the command that started the service ends (or LIMIT_S pass, or the
    service goes). On 2 cores the ~4 CPU-s of imports took a core from that command while it ran;
    commands that come meanwhile run in their own process, as without a command process."""
    deadline = time.monotonic() + limit_s
    while pid and _alive(pid) and _alive(service_pid) and time.monotonic() < deadline:
        time.sleep(0.2)


def serve(folder: str, service_pid: int, fingerprint: str, after_pid: int | None = None) -> None:
    wait_for_first_command(after_pid, service_pid)
    warm_up()
    if not _alive(service_pid):  # stopped while this imported: nothing to serve
        print("command process: the service stopped; not serving", flush=True)
        return
    if threading.active_count() != 1:  # a fork copies one thread: nothing may run beside it
        print(f"command process: imports started threads {threading.enumerate()}; not serving", flush=True)
        return
    own = import_time_hashes(settings.child_env())
    path = os.path.join(folder, SOCKET_NAME)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # srw------- : the owner connects (write), no one else
    try:
        listener.bind(path)
    except FileNotFoundError:  # the service's folder went with it
        print("command process: the service's folder is gone; not serving", flush=True)
        return
    finally:
        os.umask(old_umask)
    listener.listen(16)
    listener.settimeout(1.0)
    socket_id = os.stat(path).st_ino
    info = {"pid": os.getpid(), "socket": path, "fingerprint": fingerprint, "service_pid": service_pid,
            "import_time": own}
    from xmdata.runtime.owner_only import write_private

    write_private(os.path.join(folder, INFO_NAME), json.dumps(info))
    print(f"command process {os.getpid()} ready on {path}", flush=True)
    try:
        while _still_wanted(path, socket_id, service_pid):
            _reap()
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            _handle(conn, listener, own)
    finally:
        if _still_wanted(path, socket_id, service_pid=os.getpid()):  # ours still, not a later service's
            for name in (SOCKET_NAME, INFO_NAME):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(folder, name))


def _handle(conn: socket.socket, listener: socket.socket, own: dict[str, str]) -> None:
    fds: list[int] = []
    try:
        conn.settimeout(10.0)
        if peer_uid(conn) != os.getuid():
            return
        message, fds = recv_message(conn)
        if len(fds) != FDS or not isinstance(message.get("argv"), list) or not isinstance(message.get("env"), dict):
            send_message(conn, {"refused": "malformed request"})
            return
        if differ := differing(import_time_hashes(message["env"]), own):  # the client checked; a later service may not be
            send_message(conn, {"refused": "environment", "differ": differ})
            return
        conn.settimeout(None)
        if os.fork() == 0:
            listener.close()
            try:
                _become_the_command(conn, message, fds)
            finally:
                os._exit(1)  # never back into the server's loop
    except (OSError, ValueError, ConnectionError) as exc:
        print(f"command process: a request failed: {exc}", flush=True)
    finally:
        for fd in fds:
            os.close(fd)
        conn.close()


def _reap() -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _still_wanted(path: str, socket_id: int, service_pid: int) -> bool:
    try:
        return _alive(service_pid) and os.stat(path).st_ino == socket_id
    except FileNotFoundError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", required=True)
    parser.add_argument("--service-pid", type=int, required=True)
    parser.add_argument("--fingerprint", required=True)
    parser.add_argument("--after-pid", type=int, default=None)
    args = parser.parse_args()
    os.environ.update(command_environment(settings.child_env()))  # as a command sets them, before any import
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    serve(args.folder, args.service_pid, args.fingerprint, args.after_pid)


if __name__ == "__main__":
    main()
