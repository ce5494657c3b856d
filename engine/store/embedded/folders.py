"""Folders of files beside the database (saved vector graphs, index snapshots),
written whole or not at all."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_whole(folder: Path, fill: Callable[[Path], None]) -> None:
    """Replace ``folder`` by what ``fill`` writes into an empty folder beside it:
    the files are flushed to disk, then the new folder is renamed into place, so
    ``folder`` holds the old files or the new ones, never a mix.

    Raises:
        whatever ``fill`` raises, or OSError: ``folder`` is left as it was.
    """
    folder.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(dir=folder.parent, prefix=folder.name + ".new-"))
    try:
        fill(fresh)
        for path in fresh.iterdir():
            _fsync(path)
        old = folder.with_name(folder.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if folder.exists():
            os.replace(folder, old)
        os.replace(fresh, folder)
        shutil.rmtree(old, ignore_errors=True)
        _fsync(folder.parent)  # the renames themselves
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
