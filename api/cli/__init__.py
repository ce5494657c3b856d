"""``hippo``: run the server, or work on a data directory from a shell.

Every command builds :class:`~hippocampus.config.HippoSettings` from the
environment (``HIPPO_*``) with the command-line flags on top. While ``hippo
serve`` runs it owns its embedded data directory and names itself there
(``hippo.server.json``): the commands that work on a collection (``remember``,
``recall``, ``demo``, ``export``, ``reindex``, ``use``, ``decay``, ``tiers``,
``stats``) then talk to it over HTTP, as they do to any server given by
``--url``. Otherwise they open the engine (``setup`` and ``migrate``: the stores
alone), do one thing and close it again; the embedding model loads only if the
command embeds something. ``import`` and ``migrate`` need the directory itself.

One module per group of commands; each imports what its commands need when
they run, so ``hippo --help`` loads none of the engine.

Exit codes: 0 done, 1 the engine refused or failed (``error: …`` on stderr; a
memory the quality gate rejected included), 2 bad usage, 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from hippocampus.api.cli import backup, bench, maintenance, memories, serve
from hippocampus.api.cli.common import RemoteError, UsageError
from hippocampus.errors import DataDirLockedError, HippoError


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

    def add(name: str, help_: str, *parents: _Parser) -> Any:
        return sub.add_parser(name, help=help_, description=help_, parents=[common, *parents])

    serve.register(add, collection, remote)
    memories.register(add, collection, remote)
    backup.register(add, collection, remote)
    maintenance.register(add, collection, remote)
    bench.register(sub)
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
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RemoteError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except DataDirLockedError as e:
        print(f"error: {e.message}", file=sys.stderr)
        print(
            "hint: the data dir is in use by a running server, which owns it; the commands "
            "on a collection talk to it (or give --url); import and migrate need the "
            "directory itself: stop the server first",
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
