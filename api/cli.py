"""``hippo``: run the server, or work on a data directory from a shell.

Every command builds :class:`~engine.config.HippoSettings` from the environment
(``HIPPO_*``) with the command-line flags on top, opens the engine (``setup`` and
``migrate``: the stores alone), does one thing and closes it again; the
embedding model loads only if the command embeds something. Only ``serve``
keeps the engine open; while it runs it owns the embedded data directory and
names itself there (``hippo.server.json``): ``remember`` and ``recall`` then
talk to it over HTTP (as they do to any server given by ``--url``), and the
other commands refuse to touch the directory.

Exit codes: 0 done, 1 the engine refused or failed (``error: …`` on stderr; a
memory the quality gate rejected included), 2 bad usage, 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import os
import signal
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, NoReturn, TextIO
from urllib.parse import quote

from pydantic import ValidationError

from hippocampus.api.auth import is_loopback
from hippocampus.config import HippoSettings
from hippocampus.errors import DataDirLockedError, HippoError, InvalidInputError
from hippocampus.model import NewMemory, RecallFilters, RecallResult
from hippocampus.retrieve import DEFAULT_RECIPE, RECIPES
from hippocampus.service import Hippocampus
from hippocampus.store.factory import open_store

if TYPE_CHECKING:
    from hippocampus.store.neo4j import Neo4jStore

_SNIPPET = 80


class _UsageError(Exception):
    """A request the CLI refuses before touching the engine (exit 2)."""


# -- settings and the engine ------------------------------------------------------


def _settings(args: argparse.Namespace, **extra: Any) -> HippoSettings:
    overrides: dict[str, Any] = dict(extra)
    if args.data_dir is not None:
        overrides["data_dir"] = args.data_dir
    if args.embedder is not None:
        overrides["embedder"] = args.embedder
    try:
        # Init arguments outrank HIPPO_* variables in pydantic-settings: flags win.
        return HippoSettings(**overrides)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}"
            for err in e.errors()
        )
        raise _UsageError(f"invalid settings: {problems}") from e


@contextlib.contextmanager
def _engine(settings: HippoSettings) -> Iterator[Hippocampus]:
    # A command loads the model only if it embeds something: stats, export,
    # decay or tiers never wait for it.
    service = Hippocampus.from_settings(settings, lazy_model=True)
    try:
        yield service
    finally:
        service.close()


def _progress(total: int | None, unit: str, desc: str, *, unit_scale: bool = False) -> Any:
    from tqdm import tqdm

    # disable=None: a bar on a terminal, silence in pipes and logs.
    return tqdm(
        total=total,
        unit=unit,
        unit_scale=unit_scale,
        desc=desc,
        file=sys.stderr,
        disable=None,
        leave=False,
    )


# -- serve ------------------------------------------------------------------------


def _cmd_serve(args: argparse.Namespace) -> int:
    extra: dict[str, Any] = {}
    if args.host is not None:
        extra["host"] = args.host
    if args.port is not None:
        extra["port"] = args.port
    settings = _settings(args, **extra)
    if not settings.key_map() and not is_loopback(settings.host.strip("[]")):
        raise _UsageError(
            f"refusing to serve on {settings.host}: no API keys are configured, so anyone "
            "who can reach the port could read and write every collection. Set "
            "HIPPO_API_KEYS (KEY=collection,...;KEY2=*) or serve on 127.0.0.1."
        )
    level = logging.getLevelNamesMapping().get(settings.log_level.upper())
    if level is None:
        raise _UsageError(f"HIPPO_LOG_LEVEL={settings.log_level!r} is not a logging level")
    if args.workers > 1 and settings.store == "embedded":
        raise _UsageError(
            f"--workers {args.workers} needs the Neo4j store: one process owns an embedded "
            "data directory. Serve one worker, or set HIPPO_STORE=neo4j."
        )
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.workers > 1:
        return _serve_workers(args, settings, level)
    import uvicorn

    from hippocampus.api.app import create_app

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


def _positive(text: str) -> int:
    """An argument that must be a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is less than 1")
    return value


def _serve_workers(args: argparse.Namespace, settings: HippoSettings, level: int) -> int:
    """Serve with several worker processes, each with an engine of its own over the
    one Neo4j database (uvicorn's workers build the app from its factory, reading
    ``HIPPO_*`` like the server does; the flags given here are passed on that way)."""
    import uvicorn

    # Reach the store once first, so that a wrong address or password is reported
    # here, plainly, not once per worker.
    with _engine(settings):
        pass
    if args.embedder is not None:
        os.environ["HIPPO_EMBEDDER"] = args.embedder
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


def _cmd_mcp(args: argparse.Namespace) -> int:
    from hippocampus.api.mcp import create_mcp_server, full_access

    settings = _settings(args)
    # stdout carries the protocol: anything else goes to stderr.
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    with _engine(settings) as service:
        server = create_mcp_server(lambda: service, full_access, default_collection=args.collection)
        server.run("stdio")
    return 0


# -- a running server ---------------------------------------------------------------

SERVER_FILE = "hippo.server.json"
"""Written into an embedded data directory by ``hippo serve`` while it runs: where
it listens, so that other commands on that directory talk to it."""


class _Server:
    """A running Hippocampus API, over HTTP (the standard library's client)."""

    def __init__(self, url: str, key: str | None) -> None:
        self.url = url.rstrip("/")
        self.key = key

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(self.url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as e:
            try:
                error = json.loads(e.read())["error"]
                message = error["message"]
            except (ValueError, KeyError, TypeError):
                message = f"HTTP {e.code}"
            raise _RemoteError(f"the server at {self.url} answered {e.code}: {message}") from e
        except (urllib.error.URLError, OSError) as e:
            raise _RemoteError(f"cannot reach the server at {self.url}: {e}") from e


class _RemoteError(Exception):
    """A running server refused or could not be reached (exit 1)."""


def _server(args: argparse.Namespace, settings: HippoSettings) -> _Server | None:
    """The server to talk to: --url, else the one serving this data directory (its
    file names it and its process is alive), else none (open the data directory)."""
    if args.url:
        return _Server(args.url, args.key)
    if settings.store != "embedded":
        return None
    try:
        info = json.loads((settings.data_dir / SERVER_FILE).read_text("utf-8"))
        url, pid = str(info["url"]), int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # left by a server that died
    except PermissionError:
        pass  # alive, another user's
    return _Server(url, args.key)


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


# -- memories ---------------------------------------------------------------------


def _aware_time(text: str) -> datetime:
    """An ISO 8601 time with a UTC offset, for argparse; a time without one is
    refused rather than guessed (local time or UTC?)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time (e.g. 2024-05-01T14:03:00Z)"
        ) from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no UTC offset: add Z (UTC) or one like +02:00"
        )
    return moment


def _cmd_remember(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    try:
        item = NewMemory(
            content=text,
            id=args.id,
            category=args.category,
            tags=args.tag or [],
            importance=args.importance,
            source=args.source,
            conversation_id=args.conversation,
            occurred_at=args.occurred_at,
            speaker=args.speaker,
        )
    except ValidationError as e:
        raise InvalidInputError(_first_error(e)) from e
    settings = _settings(args)
    server = _server(args, settings)
    if server is not None:
        body = server.call(
            "POST",
            f"/v1/collections/{quote(args.collection, safe='')}/memories",
            {
                k: v
                for k, v in {
                    "content": item.content,
                    "id": item.id,
                    "category": item.category,
                    "tags": list(item.tags),
                    "importance": item.importance,
                    "source": item.source,
                    "conversation_id": item.conversation_id,
                    "occurred_at": _iso(item.occurred_at),
                    "speaker": item.speaker,
                }.items()
                if v is not None
            },
        )
    else:
        from hippocampus.api.schemas import RememberOut

        with _engine(settings) as service:
            outcome = service.remember(args.collection, item)
        body = RememberOut.from_engine(outcome).model_dump(mode="json")
    if args.json:
        _print_json(body)
        return 1 if body["rejected"] else 0
    if body["id"] is None:
        print(f"error: not stored (quality {body['quality'] or 0.0:.2f})", file=sys.stderr)
        for reason in body["reasons"]:
            print(f"reason: {reason}", file=sys.stderr)
        return 1
    print(body["id"])
    if body["duplicate_of"] is not None:
        print(f"duplicate_of: {body['duplicate_of']}")
    for other in body["conflicts_with"]:
        print(f"conflicts_with: {other}")
    for other in body.get("supersedes", []):
        print(f"supersedes: {other}")
    for reason in body["reasons"]:
        print(f"reason: {reason}")
    return 0


def _cmd_recall(args: argparse.Namespace) -> int:
    detail: Literal["compact", "full"] = "full" if args.full or not args.json else "compact"
    settings = _settings(args)
    server = _server(args, settings)
    filters = RecallFilters(
        occurred_after=args.occurred_after,
        occurred_before=args.occurred_before,
        speakers=args.speaker or [],
    )
    if server is not None:
        body = server.call(
            "POST",
            f"/v1/collections/{quote(args.collection, safe='')}/recall",
            {
                "query": args.query,
                "limit": args.limit,
                "recipe": args.recipe,
                "explain": args.explain,
                "detail": detail,
                "filters": {
                    "occurred_after": _iso(filters.occurred_after),
                    "occurred_before": _iso(filters.occurred_before),
                    "speakers": filters.speakers,
                },
            },
        )
    else:
        from hippocampus.api.schemas import RecallOut

        with _engine(settings) as service:
            result = service.recall(
                args.collection,
                args.query,
                limit=args.limit,
                recipe=args.recipe,
                explain=args.explain,
                filters=filters,
            )
        body = RecallOut.from_engine(result, detail=detail).model_dump(mode="json")
    if args.json:
        # The API's answer to the same request: `results`, compact unless --full.
        _print_json(body)
    else:
        _print_results(body["results"])
        for warning in body["warnings"]:
            print(f"warning: {warning}", file=sys.stderr)
    return 0


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _print_hits(result: RecallResult, out: TextIO | None = None) -> None:
    from hippocampus.api.schemas import RecallOut

    body = RecallOut.from_engine(result, detail="full").model_dump(mode="json")
    _print_results(body["results"], out)


def _print_results(results: list[dict[str, Any]], out: TextIO | None = None) -> None:
    """A recall's results (as POST /recall answers them, full), one line each."""
    out = out or sys.stdout
    if not results:
        print("(no memories found)", file=out)
        return
    id_width = min(36, max(2, *(len(h["id"]) for h in results)))
    cat_width = max(8, *(len(h["memory"]["category"]) for h in results))
    print(
        f"{'#':>2}  {'score':>6}  {'id':<{id_width}}  {'category':<{cat_width}}  content", file=out
    )
    for rank, hit in enumerate(results, start=1):
        memory = hit["memory"]
        print(
            f"{rank:>2}  {hit['score']:>6.3f}  {_cut(hit['id'], id_width):<{id_width}}  "
            f"{memory['category']:<{cat_width}}  {_cut(memory['content'], _SNIPPET)}",
            file=out,
        )
        for newer in memory.get("superseded_by") or []:
            print(f"{'':>10}superseded by {newer}", file=out)
        for path in hit.get("paths") or []:
            anchor = path["anchor"]
            walk = " -> ".join(
                [f"{anchor['kind']}:{anchor['name']}"]
                + [
                    f"[{s['type']} {s['weight']:.2f}] {s['kind']}:{_cut(s['name'], 30)}"
                    for s in path["steps"]
                ]
            )
            print(f"{'':>10}via {walk}  ({path['strength']:.3f})", file=out)


def _cut(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


# -- backup -----------------------------------------------------------------------


def _cmd_export(args: argparse.Namespace) -> int:
    counts = {"memory": 0, "edge": 0}
    with _engine(_settings(args)) as service:
        records = service.export(args.collection)
        if args.out is None or str(args.out) == "-":
            for record in records:
                counts[record["type"]] = counts.get(record["type"], 0) + 1
                sys.stdout.write(_jsonl(record))
            sys.stdout.flush()
        else:
            # Written beside the target and renamed at the end: a failed export
            # never leaves a truncated backup under the name of a good one.
            out: Path = args.out
            partial = out.with_name(out.name + ".partial")
            try:
                with partial.open("w", encoding="utf-8") as f:
                    for record in records:
                        counts[record["type"]] = counts.get(record["type"], 0) + 1
                        f.write(_jsonl(record))
                    f.flush()
                    os.fsync(f.fileno())
                partial.replace(out)
            finally:
                partial.unlink(missing_ok=True)
    print(
        f"exported {counts['memory']} memories and {counts['edge']} edges from {args.collection}",
        file=sys.stderr,
    )
    return 0


def _jsonl(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def _cmd_import(args: argparse.Namespace) -> int:
    path: Path = args.file
    with contextlib.ExitStack() as stack:
        if str(path) == "-":
            stream: IO[bytes] = sys.stdin.buffer
            total = None
        else:
            try:
                stream = stack.enter_context(path.open("rb"))
                total = path.stat().st_size
            except OSError as e:
                raise InvalidInputError(f"cannot read {path}: {e.strerror or e}") from e
        service = stack.enter_context(_engine(_settings(args)))
        # Progress in bytes read: exact without a first pass over a large file.
        bar = stack.enter_context(_progress(total, "B", "import", unit_scale=True))
        records = _read_jsonl(stream, bar.update)
        first = next(records, None)
        # Into --collection when given, else the collection the file's header names.
        named = first.get("collection") if first and first.get("type") == "header" else None
        collection = args.collection or (named if isinstance(named, str) else None) or "default"
        report = service.import_records(
            collection, itertools.chain([first] if first is not None else [], records)
        )
        pending = service.pending_count(collection)
    print(
        f"imported {report.memories} memories and {report.edges} edges into "
        f"{collection} ({report.skipped_existing} already present)"
    )
    if pending:
        print(
            f"{pending} memories of {collection} have no vector from {service.embedder.name} "
            f"and are not found by similarity until embedded: run hippo reindex -c {collection}"
        )
    return 0


def _read_jsonl(stream: IO[bytes], advance: Any) -> Iterator[dict[str, Any]]:
    for number, raw in enumerate(stream, start=1):
        advance(len(raw))
        line = raw.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InvalidInputError(
                f"line {number} is not JSON: {e}", field=f"line {number}"
            ) from e
        if not isinstance(record, dict):
            raise InvalidInputError(f"line {number} is not a JSON object", field=f"line {number}")
        yield record


# -- maintenance ------------------------------------------------------------------


def _cmd_reindex(args: argparse.Namespace) -> int:
    with _engine(_settings(args)) as service:
        pending = service.pending_count(args.collection)
        name = service.embedder.name
        print(
            f"{pending} memories of {args.collection} wait for a vector from {name}",
            file=sys.stderr,
        )
        with _progress(pending, "memories", "reindex") as bar:
            done = service.reindex(args.collection, progress=bar.update)
    print(f"re-embedded {done} memories of {args.collection} with {name}")
    return 0


def _cmd_tiers(args: argparse.Namespace) -> int:
    with _engine(_settings(args)) as service:
        report = service.apply_tiers(args.collection)
    if args.json:
        _print_json(report.model_dump(mode="json"))
        return 0
    print(
        f"tier pass on {args.collection}: {report.examined} examined, {report.archived} "
        f"archived, {report.quarantined} quarantined, {report.restored} restored"
    )
    for change in report.changes:
        print(f"  {change['id']}: {change['from']} -> {change['to']} ({change['reason']})")
    if report.retrained is not None:
        run = report.retrained
        print(f"quality model retrained: {'kept' if run.accepted else 'discarded'} ({run.reason})")
    return 0


def _cmd_use(args: argparse.Namespace) -> int:
    if len(set(args.ids)) < 2:
        raise _UsageError("name at least two different memories used together")
    with _engine(_settings(args)) as service:
        edges = service.record_use(args.collection, args.ids, context=args.context or [])
    for edge in edges:
        print(f"{edge.source} -- {edge.target}  weight {edge.weight:.2f}")
    return 0


def _cmd_decay(args: argparse.Namespace) -> int:
    with _engine(_settings(args)) as service:
        decayed = service.decay(args.collection)
    print(f"decay pass on {args.collection}: {decayed} edges decayed")
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    with _engine(_settings(args)) as service:
        stats = service.stats(args.collection)
    if args.json:
        _print_json(stats.model_dump(mode="json"))
        return 0
    rows: list[tuple[str, Any]] = [
        ("collection", stats.collection),
        ("memories", stats.memories),
        ("pending embeddings", stats.pending_embeddings),
        ("events", stats.events),
        ("events retained", stats.events_retained),
        ("embedder", stats.embedder),
        ("extractor", stats.extractor),
        ("quality min score", stats.quality.min_score),
        ("quality model", f"v{stats.quality.model_version}"),
        (
            "quality trained at",
            stats.quality.trained_at.isoformat() if stats.quality.trained_at else "never (prior)",
        ),
    ]
    for title, counts in (
        ("category", stats.by_category),
        ("tier", stats.by_tier),
        ("hubs", stats.hubs),
        ("edges", stats.edges),
    ):
        rows.extend((f"{title}: {name}", n) for name, n in sorted(counts.items()))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


def _cmd_setup(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if settings.store != "neo4j":
        print("the embedded store needs no setup: it creates its tables when it opens")
        return 0
    dimensions = settings.neo4j.vector_dimensions or _embedder_dimensions(settings)
    with contextlib.closing(_neo4j_store(settings, dimensions)) as store:
        print(
            f"setting up Neo4j at {settings.neo4j.uri} (database {settings.neo4j.database}, "
            f"{dimensions}-d vector index); waiting until every index is online",
            flush=True,
        )
        store.setup(timeout_s=args.timeout)
    print("the Neo4j schema is ready")
    return 0


def _embedder_dimensions(settings: HippoSettings) -> int:
    from hippocampus.embed import make_embedder

    embedder = make_embedder(
        settings.embedder,
        model_path=settings.model_path,
        batch_size=settings.embed_batch_size,
        precision=settings.embed_precision,
    )
    return embedder.dim


def _neo4j_store(settings: HippoSettings, dimensions: int | None = None) -> Neo4jStore:
    from hippocampus.store.neo4j import Neo4jStore

    store = open_store(settings, kind="neo4j", dimensions=dimensions)
    assert isinstance(store, Neo4jStore)
    return store


def _cmd_migrate(args: argparse.Namespace) -> int:
    from hippocampus.service import PORTABLE_STATE, PORTABLE_STATE_PREFIXES
    from hippocampus.store.copy import copy_collection

    into = args.into or args.collection
    if args.source == args.target and into == args.collection:
        raise _UsageError(
            "copying a collection onto itself: name another store with --to, "
            "or another collection with --into"
        )
    settings = _settings(args)
    with contextlib.ExitStack() as stack:
        source = stack.enter_context(contextlib.closing(open_store(settings, kind=args.source)))
        target = source
        if args.target != args.source:
            target = stack.enter_context(contextlib.closing(open_store(settings, kind=args.target)))
        for store in {id(source): source, id(target): target}.values():
            store.check()
        bar = stack.enter_context(_progress(None, "memories", "migrate"))
        report = copy_collection(
            source,
            target,
            args.collection,
            into=into,
            progress=bar.update,
            states=PORTABLE_STATE,
            state_prefixes=PORTABLE_STATE_PREFIXES,
        )
    renamed = f" as {into}" if into != args.collection else ""
    print(
        f"copied {args.collection} from {args.source} to {args.target}{renamed}: "
        f"{report.memories} memories ({report.vectors} with vectors), {report.edges} edges, "
        f"{report.hub_vectors} hub vectors, {report.events} events"
        + (
            f", {report.states} learned state document{'s' * (report.states != 1)}"
            if report.states
            else ""
        )
    )
    return 0


_BENCH_DIR = Path(__file__).resolve().parents[1] / "bench"


def _benches() -> dict[str, str]:
    """The runnable benchmarks of the source checkout: name -> first docstring line."""
    found: dict[str, str] = {}
    if not _BENCH_DIR.is_dir():
        return found
    for path in sorted(_BENCH_DIR.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if 'if __name__ == "__main__"' not in text:
            continue
        doc = text.split('"""', 2)[1] if text.startswith('"""') else ""
        found[path.stem] = " ".join(doc.strip().splitlines()[0].split()) if doc.strip() else ""
    return found


def _cmd_bench(args: argparse.Namespace) -> int:
    import subprocess

    benches = _benches()
    if not benches:
        print(
            f"error: no benchmarks here: they are in a source checkout ({_BENCH_DIR})",
            file=sys.stderr,
        )
        return 1
    if args.name is None:
        width = max(len(name) for name in benches)
        for name, summary in benches.items():
            print(f"{name:<{width}}  {summary}")
        print("\nrun one: hippo bench NAME [its options]; hippo bench NAME --help for them")
        return 0
    if args.name not in benches:
        raise _UsageError(f"no benchmark {args.name!r}; one of: {', '.join(benches)}")
    # Each benchmark is its own program (bench/NAME.py): run with this interpreter
    # from the checkout, its options passed on untouched.
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{args.name}", *args.options],
        cwd=_BENCH_DIR.parent,
        check=False,
    )
    return done.returncode


def _cmd_demo(args: argparse.Namespace) -> int:
    from hippocampus.demo import DEMO_QUERIES, load_demo

    with _engine(_settings(args)) as service:
        outcomes = load_demo(service, args.collection)
        created = sum(o.created for o in outcomes)
        print(
            f"loaded {created} demo memories into {args.collection} "
            f"({len(outcomes) - created} were already there); embedder {service.embedder.name}"
        )
        for query in DEMO_QUERIES:
            print(f"\n? {query}")
            _print_hits(service.recall(args.collection, query, limit=args.limit))
    return 0


# -- plumbing ---------------------------------------------------------------------


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2))


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else str(err["msg"])


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``hippo`` argument parser."""
    common = _Parser(add_help=False)
    common.add_argument(
        "--data-dir", type=Path, help="embedded store directory (default: $HIPPO_DATA_DIR)"
    )
    common.add_argument(
        "--embedder",
        choices=("minilm", "hashing"),
        help="minilm (the model) or hashing (no model) (default: $HIPPO_EMBEDDER)",
    )
    collection = _Parser(add_help=False)
    collection.add_argument("--collection", "-c", default="default", help="default: %(default)s")
    remote = _Parser(add_help=False)
    remote.add_argument(
        "--url",
        help="talk to the server at this URL (default: the one serving --data-dir, if any; "
        "else open the data directory)",
    )
    remote.add_argument("--key", help="the API key for --url, when the server has keys")

    parser = _Parser(
        prog="hippo", description="Hippocampus: a graph-based associative memory engine."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_: str, *parents: _Parser) -> _Parser:
        return sub.add_parser(name, help=help_, description=help_, parents=[common, *parents])

    p = add("serve", "run the REST API")
    p.add_argument("--host", help="default: $HIPPO_HOST or 127.0.0.1")
    p.add_argument("--port", type=int, help="default: $HIPPO_PORT or 8000")
    p.add_argument(
        "--workers",
        type=_positive,
        default=1,
        help="worker processes (default: 1; more than one needs the Neo4j store, since one "
        "process owns an embedded data directory)",
    )
    p.set_defaults(run=_cmd_serve)

    p = add(
        "mcp",
        "serve the MCP tools on stdio, for an MCP client that starts this command "
        "(a running server offers the same at /mcp)",
        collection,
    )
    p.set_defaults(run=_cmd_mcp)

    p = add("remember", "store one memory", collection, remote)
    p.add_argument("text", metavar="TEXT", help="the memory's content; - reads stdin")
    p.add_argument("--category", default="insight", help="default: %(default)s")
    p.add_argument("--tag", action="append", help="a tag (repeatable)")
    p.add_argument("--id", help="an external id (default: a new uuid)")
    p.add_argument("--importance", type=float, default=0.5, help="0-1, default: %(default)s")
    p.add_argument("--source", help="where the memory comes from")
    p.add_argument(
        "--conversation", help="the conversation it was said in (turns are linked in order)"
    )
    p.add_argument(
        "--occurred-at",
        type=_aware_time,
        help="when it happened, ISO 8601 with an offset (2024-05-01T14:03:00Z); default: now",
    )
    p.add_argument("--speaker", help="who said it")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_cmd_remember)

    p = add("recall", "find memories similar to a query", collection, remote)
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--limit", "-n", type=int, default=10, help="default: %(default)s")
    p.add_argument(
        "--json", action="store_true", help="print the result as JSON, as POST /recall answers"
    )
    p.add_argument(
        "--full", action="store_true", help="with --json: each memory's whole retrieval block"
    )
    p.add_argument(
        "--recipe",
        default=DEFAULT_RECIPE,
        help=f"one of {', '.join(RECIPES)} (default %(default)s)",
    )
    p.add_argument("--explain", action="store_true", help="show the graph paths behind each hit")
    p.add_argument(
        "--occurred-after",
        type=_aware_time,
        help="only memories that happened at or after this time (ISO 8601 with an offset)",
    )
    p.add_argument(
        "--occurred-before",
        type=_aware_time,
        help="only memories that happened before this time (exclusive)",
    )
    p.add_argument("--speaker", action="append", help="only memories said by them (repeatable)")
    p.set_defaults(run=_cmd_recall)

    p = add("import", "load a JSONL export into a collection")
    p.add_argument(
        "--collection",
        "-c",
        help="the collection to load into (default: the one the file's header names)",
    )
    p.add_argument("file", metavar="FILE", type=Path, help="a file written by export; - is stdin")
    p.set_defaults(run=_cmd_import)

    p = add("export", "write a collection as JSONL (a full backup)", collection)
    p.add_argument("--out", "-o", type=Path, help="output file (default: stdout)")
    p.set_defaults(run=_cmd_export)

    p = add("reindex", "embed memories that have no vector from the current model", collection)
    p.set_defaults(run=_cmd_reindex)

    p = add("use", "record memories used together (strengthens their association)", collection)
    p.add_argument("ids", metavar="ID", nargs="+", help="two or more memory ids")
    p.add_argument("--context", action="append", help="a concept of the context (repeatable)")
    p.set_defaults(run=_cmd_use)

    p = add("decay", "one temporal decay pass over the edges (once a day counts)", collection)
    p.set_defaults(run=_cmd_decay)

    p = add(
        "tiers", "apply the tier policy: archive idle memories, quarantine bad ones", collection
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_cmd_tiers)

    p = add("stats", "counts for a collection", collection)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_cmd_stats)

    p = add("setup", "create the Neo4j schema (constraints, vector and full-text indexes)")
    p.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds to wait for the indexes to come online (default: %(default)s)",
    )
    p.set_defaults(run=_cmd_setup)

    p = add("migrate", "copy a collection between the embedded store and Neo4j", collection)
    p.add_argument(
        "--from", dest="source", choices=("embedded", "neo4j"), required=True, help="read from"
    )
    p.add_argument(
        "--to", dest="target", choices=("embedded", "neo4j"), required=True, help="write to"
    )
    p.add_argument("--into", help="the collection's name in the target (default: the same)")
    p.set_defaults(run=_cmd_migrate)

    p = sub.add_parser(
        "bench",
        help="run a benchmark (bench/NAME.py) of a source checkout; none: list them",
        description="Run one of the benchmarks in bench/ (each prints a table), or list them.",
    )
    p.add_argument("name", metavar="NAME", nargs="?", help="the benchmark; none: list them")
    p.add_argument("options", metavar="OPTION", nargs=argparse.REMAINDER, help="passed on to it")
    p.set_defaults(run=_cmd_bench)

    p = add("demo", "load example memories and run a few recalls")
    p.add_argument("--collection", "-c", default="demo", help="default: %(default)s")
    p.add_argument("--limit", "-n", type=int, default=3, help="results per query")
    p.set_defaults(run=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hippo`` with ``argv`` (default: the process arguments); returns the exit code."""
    # The model stack draws a "Loading weights" bar on every start; the CLI's own
    # output is what people read. Read by huggingface_hub when transformers loads.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, or a usage error already printed
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    try:
        code: int = args.run(args)
        return code
    except _UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except _RemoteError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except DataDirLockedError as e:
        print(f"error: {e.message}", file=sys.stderr)
        print(
            "hint: the data dir is in use by a running server, which owns it; "
            "remember and recall talk to it (or give --url), other work goes "
            "through its REST API, or stop the server first",
            file=sys.stderr,
        )
        return 1
    except HippoError as e:
        where = f" ({e.field})" if e.field and e.field not in e.message else ""
        print(f"error: {e.message}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `hippo export | head`: the reader left; nothing to report.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps interpreter exit quiet
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
