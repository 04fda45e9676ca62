"""`harn-ls serve --tcp`: a loopback listener where each connection is its own session, and only a
client that presents the server's token gets one.

Why a token: any local process (another user's on a shared machine, a browser page posting to
`http://127.0.0.1:PORT/`, a sandboxed program) can reach a loopback port; without a key it could
pick a folder, read its state documents and run Accept (which writes SKILL.md). The token is 32
random bytes, written to a file only its owner can read (0600 in a 0700 folder) whose path the
server prints; a client passes it as `initializationOptions.token`. Until a connection's first
message is an `initialize` request carrying it, nothing reaches the language server: no token, a
wrong one, another first message, an HTTP request, a first message over 1 MB or none within 10 s
are refused and the connection closed. What it does not protect against: a process running as
the same user (it can read the file, as it can read the project itself).

Each admitted connection gets a fresh server (lsp/server.create_server): its own projects,
settings, documents and diagnostics; its `exit` or its disconnect ends that session only.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import os
import secrets
import signal
import sys

from harn_ls.cache.dirs import cache_root
from harn_ls.lsp import server as S
from harn_ls.lsp import transport

FIRST_MESSAGE_SECONDS = 10.0
TOKEN_OPTION = "token"


def token_dir(env=os.environ) -> str:
    """`$XDG_RUNTIME_DIR/harn-ls` (a per-user folder the system clears) when set, else the cache root's `tcp/`."""
    runtime = env.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        return os.path.join(runtime, "harn-ls")
    return os.path.join(cache_root(env), "tcp")


def write_token(host: str, port: int) -> tuple[str, str]:
    """A fresh token in a new user-only file; (token, path)."""
    folder = token_dir()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)  # an existing folder made by something else: ours only from now on
    safe_host = "".join(c if c.isalnum() else "_" for c in host)
    path = os.path.join(folder, f"tcp-{safe_host}-{port}.token")
    token = secrets.token_urlsafe(32)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a stale file of an earlier server on this port (or a link planted there)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token, path


def admission(token: str, path: str):
    """The check of a connection's first message (lsp/transport.serve_stream's `admit`)."""
    refusal = (f"harn-ls serve --tcp: present the token from {path} as initializationOptions.{TOKEN_OPTION} "
               "in the initialize request; connection closed")

    def admit(first) -> str | None:
        if not (isinstance(first, dict) and first.get("method") == "initialize" and "id" in first):
            return refusal
        params = first.get("params")
        options = params.get("initializationOptions") if isinstance(params, dict) else None
        offered = options.get(TOKEN_OPTION) if isinstance(options, dict) else None
        if not isinstance(offered, str) or not hmac.compare_digest(offered.encode(), token.encode()):
            return refusal
        return None
    return admit


async def _session(reader: asyncio.StreamReader, stream: asyncio.StreamWriter, harn: str, allow_probes: bool,
                   admit) -> None:
    peer = stream.get_extra_info("peername")
    ls = S.create_server()
    ls.harn_override = harn
    ls.probes_allowed = allow_probes
    S.SESSION.set(ls)  # this connection's log records go to this client only

    writer = transport.FramedWriter(stream.write, stream.close)
    ls.protocol.set_writer(writer, include_headers=False)
    try:
        why = await transport.serve_stream(ls.protocol, reader, writer, admit=admit,
                                           first_message_within=FIRST_MESSAGE_SECONDS, close_on_frame_error=True)
    except (ConnectionError, OSError) as exc:
        why = f"connection error: {exc}"
    sys.stderr.write(f"harn-ls: session {peer} ended ({why})\n")
    sys.stderr.flush()
    await S.end_session(ls)  # (before the writer closes: a shutdown answered late still goes out)
    with contextlib.suppress(ConnectionError, OSError):
        await stream.drain()
    writer.close()


async def _listen(host: str, port: int, harn: str, allow_probes: bool) -> int:
    token, path = write_token(host, port)
    admit = admission(token, path)
    # Each connection's session task, held while it runs: never read, but before Python 3.12
    # asyncio.start_server keeps no reference to the task it makes for a connection, and the event
    # loop holds tasks only weakly, so a session could be collected mid-flight without this.
    sessions: set[asyncio.Task] = set()

    async def on_connect(reader: asyncio.StreamReader, stream: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            sessions.add(task)
        try:
            await _session(reader, stream, harn, allow_probes, admit)
        finally:
            sessions.discard(task)

    try:
        listener = await asyncio.start_server(on_connect, host, port, limit=1 << 16)
    except OSError as exc:
        os.unlink(path)
        reason = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        sys.stderr.write(f"harn-ls: cannot listen on {host}:{port}: {reason}\n")
        return 2
    main = asyncio.current_task()
    assert main is not None  # (this coroutine runs as a task)
    for sig in (signal.SIGTERM, signal.SIGINT):
        # stop serving and remove the token file (a terminated server leaves no key behind)
        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().add_signal_handler(sig, main.cancel)
    sys.stderr.write(f"harn-ls: listening on {host}:{port} (probes {'on' if allow_probes else 'off'}, harn = {harn}); "
                     f"token in {path} (pass it as initializationOptions.{TOKEN_OPTION})\n")
    sys.stderr.flush()
    try:
        async with listener:
            await listener.serve_forever()
    except asyncio.CancelledError:
        pass
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return 0


def serve(address: tuple[str, int], harn: str, allow_probes: bool) -> int:
    host, port = address
    try:
        return asyncio.run(_listen(host, port, harn, allow_probes))
    except KeyboardInterrupt:
        return 0
