"""Opening a LadybugDB store so that a kill -9 at any instant never leaves it unopenable.

What was measured (kill -9 a writer at random instants; truncate a real WAL at random offsets):

* COMMIT writes the transaction's WAL records in 4 KiB ``pwrite``s, then ``fdatasync``s, then
  returns (strace), so an acknowledged commit is on disk. Checkpoints are shadow-paged (``.shadow``
  file, ``.wal.checkpoint`` rename, fsyncs and intent files); no kill inside one lost data or broke
  an open.
* What breaks is the *tail* of the WAL: a kill between two of a large commit's pwrites leaves a WAL
  that ends inside a record, and the default open fails with "Checksum verification failed, the
  WAL file is corrupted" or "Reading past the end of the file" (26 of 28 random cut offsets; kills
  injected at such pwrites reproduce it).
  Deleting the WAL then loses every commit since the last checkpoint.
* Opened with ``throw_on_wal_replay_failure=False``, cut WALs open (43 of 43 offsets) and hold
  exactly the commits whose records lie wholly before the cut; commits made after such a recovery
  survive a further crash (the engine drops the torn tail).

So the project needs no journal of its own: a WAL is append-only between checkpoints and every
acknowledged commit was fsynced before the cut, so replaying the longest valid prefix restores
every acknowledged commit, and nothing of the interrupted one (a transaction's records count only
with its commit record). ``open_database`` opens strictly first, so a clean store is opened exactly
as before and a recovery is logged, then tolerantly, then checkpoints so the torn tail is gone.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def sidecars(path: Path) -> list[Path]:
    """Every file next to ``path`` that belongs to the store (WAL, shadow pages, locks, compaction)."""
    if not path.parent.is_dir():
        return []
    return sorted(p for p in path.parent.iterdir() if p.name.startswith(path.name + ".") and p.is_file())


def compact_path(path: Path) -> Path:
    return path.with_name(path.name + ".compact")


def remove_store_files(path: Path) -> None:
    """Delete a store file and its sidecars (used for an abandoned compaction target)."""
    for p in [path, *sidecars(path)]:
        p.unlink(missing_ok=True)


def fsync_dir(path: Path) -> None:
    # A rename or unlink is durable only once the directory entry is flushed.
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_database(path: Path, **options: Any) -> tuple[Any, bool]:
    """A ``ladybug.Database`` at ``path``, recovered to its last acknowledged commit if the last
    process died mid-write, and whether such a recovery happened. ``options`` go to
    ``ladybug.Database`` (e.g. ``checkpoint_threshold``)."""
    import ladybug

    from graph.embedded import queries as Q

    # A compaction interrupted before its swap leaves only a half-built copy: never the store itself.
    remove_store_files(compact_path(path))
    try:
        return ladybug.Database(str(path), throw_on_wal_replay_failure=True, **options), False
    except RuntimeError as strict_error:
        wal = path.with_name(path.name + ".wal")
        if not wal.exists() or "Could not set lock" in str(strict_error):  # another process holds it
            raise
        log.warning("store %s: WAL replay failed (%s); reopening with the valid prefix of the WAL", path,
                    strict_error)
        try:
            db = ladybug.Database(str(path), throw_on_wal_replay_failure=False, **options)
        except RuntimeError:
            raise strict_error from None
    conn = ladybug.Connection(db)
    try:
        conn.execute(Q.CHECKPOINT)  # the recovered state goes to the data file; the torn WAL goes away
    finally:
        conn.close()
    return db, True
