"""``hippo serve`` (the REST API) and ``hippo mcp`` (the MCP tools on stdio)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from hippocampus.api.cli import common
from hippocampus.api.cli.common import SERVER_FILE, UsageError, positive

if TYPE_CHECKING:
    from hippocampus.config import HippoSettings


def register(
    add: Any, collection: argparse.ArgumentParser, remote: argparse.ArgumentParser
) -> None:
    """The commands of this group, added to the ``hippo`` parser."""
    p = add("serve", "run the REST API")
    p.add_argument("--host", help="default: $HIPPO_HOST or 127.0.0.1")
    p.add_argument("--port", type=int, help="default: $HIPPO_PORT or 8000")
    p.add_argument(
        "--workers",
        type=positive,
        default=1,
        help="worker processes (default: 1; more than one needs the Neo4j store, since one "
        "process owns an embedded data directory)",
    )
    p.set_defaults(run=serve)

    p = add(
        "mcp",
        "serve the MCP tools on stdio, for an MCP client that starts this command "
        "(a running server offers the same at /mcp)",
        collection,
    )
    p.set_defaults(run=mcp)


def serve(args: argparse.Namespace) -> int:
    from hippocampus.api.auth import is_loopback

    extra: dict[str, Any] = {}
    if args.host is not None:
        extra["host"] = args.host
    if args.port is not None:
        extra["port"] = args.port
    settings = common.settings(args, **extra)
    if not settings.key_map() and not is_loopback(settings.host.strip("[]")):
        raise UsageError(
            f"refusing to serve on {settings.host}: no API keys are configured, so anyone "
            "who can reach the port could read and write every collection. Set "
            "HIPPO_API_KEYS (KEY=collection,...;KEY2=*) or serve on 127.0.0.1."
        )
    level = logging.getLevelNamesMapping().get(settings.log_level.upper())
    if level is None:
        raise UsageError(f"HIPPO_LOG_LEVEL={settings.log_level!r} is not a logging level")
    if args.workers > 1 and settings.store == "embedded":
        raise UsageError(
            f"--workers {args.workers} needs the Neo4j store: one process owns an embedded "
            "data directory. Serve one worker, or set HIPPO_STORE=neo4j."
        )
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.workers > 1:
        return _serve_workers(args, settings, level)
    import uvicorn

    from hippocampus.api.app import create_app
    from hippocampus.service import Hippocampus

    service = Hippocampus.from_settings(settings)
    with contextlib.closing(service):
        # The CLI opens the engine itself (not the app on start-up) so that a locked
        # data dir or a missing model is reported here, plainly, before uvicorn runs.
        app = create_app(settings, service=service)
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
        where = settings.data_dir.resolve() if settings.store == "embedded" else settings.neo4j.uri
        print(
            f"hippo: store {settings.store} at {where}, "
            f"embedder {service.embedder.name}, extractor {service.extractor.name}",
            flush=True,
        )
        if not settings.key_map():
            print("hippo: no API keys configured: serving loopback only", flush=True)
        print(f"hippo: serving http://{host}:{settings.port} (docs at /docs)", flush=True)
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                host=settings.host,
                port=settings.port,
                log_level=level,
                # One process owns an embedded data dir: never more than one worker.
                workers=1,
            )
        )

        def stop(signum: int, frame: object) -> None:
            # Uvicorn shuts down gracefully on SIGTERM/SIGINT, then raises the signal
            # again with the handlers it found; if those were the defaults the process
            # would die before the store is closed. This handler lets run() return, and
            # also covers a signal that lands before uvicorn has installed its own.
            server.should_exit = True

        previous: dict[signal.Signals, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, stop)
        local = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else host
        try:
            with _announced(settings, f"http://{local}:{settings.port}", lambda: server.started):
                server.run()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    return 0


def _serve_workers(args: argparse.Namespace, settings: HippoSettings, level: int) -> int:
    """Serve with several worker processes, each with an engine of its own over the
    one Neo4j database (uvicorn's workers build the app from its factory, reading
    ``HIPPO_*`` like the server does; these settings, flags included, are
    passed on that way: :meth:`HippoSettings.environment`)."""
    import uvicorn

    # Reach the store once first, so that a wrong address or password is reported
    # here, plainly, not once per worker.
    with common.engine(settings):
        pass
    # The workers are started by uvicorn, which passes them nothing but the
    # environment: these settings (the flags on top of HIPPO_*) go whole.
    os.environ.update(settings.environment())
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    print(f"hippo: store neo4j at {settings.neo4j.uri}, {args.workers} workers", flush=True)
    if not settings.key_map():
        print("hippo: no API keys configured: serving loopback only", flush=True)
    print(f"hippo: serving http://{host}:{settings.port} (docs at /docs)", flush=True)
    uvicorn.run(
        "hippocampus.api.app:create_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=args.workers,
        log_level=level,
    )
    return 0


def mcp(args: argparse.Namespace) -> int:
    from hippocampus.api.mcp import create_mcp_server, full_access

    config = common.settings(args)
    # stdout carries the protocol: anything else goes to stderr.
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    with common.engine(config) as service:
        server = create_mcp_server(lambda: service, full_access, default_collection=args.collection)
        server.run("stdio")
    return 0


@contextlib.contextmanager
def _announced(settings: HippoSettings, url: str, started: Callable[[], bool]) -> Iterator[None]:
    """Name this server in its embedded data directory once it listens (``started``
    says so), until it stops."""
    if settings.store != "embedded":
        yield
        return
    path = settings.data_dir / SERVER_FILE
    done = threading.Event()

    def announce() -> None:
        # Only once it answers: a command that read the file earlier would be refused.
        while not done.is_set():
            if started():
                path.write_text(json.dumps({"url": url, "pid": os.getpid()}), encoding="utf-8")
                return
            done.wait(0.05)

    thread = threading.Thread(target=announce, name="hippo-announce", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        with contextlib.suppress(OSError):
            path.unlink()
