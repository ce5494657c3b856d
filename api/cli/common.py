"""What every ``hippo`` command shares: its settings, the engine or the running
server it works through, argument types and printing."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Generator, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pydantic import ValidationError

if TYPE_CHECKING:
    from hippocampus.config import HippoSettings
    from hippocampus.service import Hippocampus

SERVER_FILE = "hippo.server.json"
"""Written into an embedded data directory by ``hippo serve`` while it runs: where
it listens, so that other commands on that directory talk to it."""


class UsageError(Exception):
    """A request the CLI refuses before touching the engine (exit 2)."""


class RemoteError(Exception):
    """A running server refused or could not be reached (exit 1)."""


def settings(args: argparse.Namespace, **extra: Any) -> HippoSettings:
    """The settings of a command: ``HIPPO_*`` with its flags on top."""
    from hippocampus.config import HippoSettings

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
        raise UsageError(f"invalid settings: {problems}") from e


@contextlib.contextmanager
def engine(config: HippoSettings) -> Iterator[Hippocampus]:
    """The engine, open for one command."""
    from hippocampus.service import Hippocampus

    # A command loads the model only if it embeds something: stats, export,
    # decay or tiers never wait for it.
    service = Hippocampus.from_settings(config, lazy_model=True)
    try:
        yield service
    finally:
        service.close()


def progress(total: int | None, unit: str, desc: str, *, unit_scale: bool = False) -> Any:
    """A progress bar on a terminal, silence in pipes and logs."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        unit=unit,
        unit_scale=unit_scale,
        desc=desc,
        file=sys.stderr,
        disable=None,
        leave=False,
    )


class Server:
    """A running Hippocampus API, over HTTP (the standard library's client)."""

    def __init__(self, url: str, key: str | None) -> None:
        self.url = url.rstrip("/")
        self.key = key

    def collection(self, name: str) -> str:
        """The path of a collection's routes."""
        return f"/v1/collections/{quote(name, safe='')}"

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One request; its JSON answer."""
        with self.open(method, path, body) as response:
            try:
                return json.loads(response.read())
            except OSError as e:
                raise RemoteError(f"the server at {self.url} stopped answering: {e}") from e

    def lines(self, path: str) -> Generator[str, None, None]:
        """A GET whose answer is text, line by line as it comes."""
        with self.open("GET", path) as response:
            while True:
                try:
                    raw = response.readline()
                except OSError as e:
                    raise RemoteError(f"the server at {self.url} stopped answering: {e}") from e
                if not raw:
                    return
                yield raw.decode("utf-8")

    @contextlib.contextmanager
    def open(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> Iterator[Any]:
        """One request, its answer open to be read as it comes (a stream)."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(self.url + path, data, headers, method=method)
        try:
            response = urllib.request.urlopen(request, timeout=120)
        except urllib.error.HTTPError as e:
            raise RemoteError(f"the server at {self.url} answered {e.code}: {_message(e)}") from e
        except (urllib.error.URLError, OSError) as e:
            raise RemoteError(f"cannot reach the server at {self.url}: {e}") from e
        with response:
            yield response


def _message(e: urllib.error.HTTPError) -> str:
    try:
        message: str = json.loads(e.read())["error"]["message"]
        return message
    except (ValueError, KeyError, TypeError):
        return f"HTTP {e.code}"


def server(args: argparse.Namespace, config: HippoSettings) -> Server | None:
    """The server to talk to: --url, else the one serving this data directory (its
    file names it and its process is alive), else none (open the data directory)."""
    url = getattr(args, "url", None)
    if url:
        return Server(url, getattr(args, "key", None))
    if config.store != "embedded":
        return None
    try:
        info = json.loads((config.data_dir / SERVER_FILE).read_text("utf-8"))
        found, pid = str(info["url"]), int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # left by a server that died
    except PermissionError:
        pass  # alive, another user's
    return Server(found, getattr(args, "key", None))


def answer(
    args: argparse.Namespace,
    method: str,
    route: str,
    local: Callable[[Hippocampus], Any],
    body: dict[str, Any] | None = None,
) -> Any:
    """The REST answer to ``method`` on a route of ``args.collection``
    (``route``: what follows ``/v1/collections/{collection}``): from the server
    that owns the data directory (or the one ``--url`` names), else ``local``'s,
    on the engine opened for this command, in the same shape."""
    config = settings(args)
    remote = server(args, config)
    if remote is not None:
        return remote.call(method, remote.collection(args.collection) + route, body)
    with engine(config) as service:
        return local(service)


def aware_time(text: str) -> datetime:
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


def positive(text: str) -> int:
    """An argument that must be a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is less than 1")
    return value


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2))


def first_error(e: ValidationError) -> str:
    """A validation error's first problem, named by its field."""
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else str(err["msg"])
