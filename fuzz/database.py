"""The Hypothesis example database of a run (a check's, a campaign's): a local directory, or Redis shared by machines.

``open_database(spec)``:

* ``None`` / ``"none"``      -> no database (every run starts from its seed only);
* ``"redis://host:port/db"`` -> Hypothesis' ``RedisExampleDatabase`` on that server,
  so shards on several machines share (and replay) each other's failing examples;
* anything else              -> a ``DirectoryBasedExampleDatabase`` in that folder; a path that
  names an existing regular file (or lies under one) is an error (:func:`check_spec`): Hypothesis
  would accept it silently and store nothing.

Examples are keyed per cell (``tokenlaw:<operator>-<contract>-<backend>-<dtype>``).
"""
from __future__ import annotations

from pathlib import Path

from hypothesis.database import DirectoryBasedExampleDatabase

from tokenlaw.operators.errors import InvalidArgument

DEFAULT_DIR = Path(".hypothesis") / "tokenlaw"
KEY_PREFIX = b"tokenlaw-example:"


def check_spec(spec) -> None:
    """Raise InvalidArgument unless ``spec`` names no database, a Redis URL, or a directory (existing or
    to be made): checked before a run starts, without connecting to anything.

    >>> check_spec("none"), check_spec("redis://localhost:6379/0"), check_spec(".hypothesis/tokenlaw")
    (None, None, None)
    """
    if spec is None or str(spec).lower() == "none":
        return
    text = str(spec)
    if text.startswith(("redis://", "rediss://", "unix://")):
        return
    if "://" in text:
        raise InvalidArgument(f"--database: expected a directory, 'none' or a redis:// URL, got {text!r}")
    # the nearest existing path at or above it must be a directory: Hypothesis' directory database
    # accepts a regular file without complaint and then stores (and replays) nothing
    path = Path(text)
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        where = "is" if existing == path else f"lies under {str(existing)!r}, which is"
        raise InvalidArgument(f"--database: expected a directory, 'none' or a redis:// URL; {text!r} {where} "
                              f"not a directory")


def open_database(spec=DEFAULT_DIR):
    """The ExampleDatabase named by ``spec`` (see the module docstring)."""
    check_spec(spec)
    if spec is None or str(spec).lower() == "none":
        return None
    text = str(spec)
    if text.startswith(("redis://", "rediss://", "unix://")):
        return _redis(text)
    return DirectoryBasedExampleDatabase(text)


def _redis(url: str):
    try:
        import redis  # optional: the redis client, only for a redis:// database
        from hypothesis.extra.redis import RedisExampleDatabase  # optional: needs the redis client
    except ImportError as err:       # pragma: no cover - redis is a declared dependency
        raise InvalidArgument(f"--database {url}: the redis client is not installed ({err})") from None
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.exceptions.RedisError as err:
        raise InvalidArgument(f"--database: cannot reach the Redis server at {url} ({err})") from None
    return RedisExampleDatabase(client, key_prefix=KEY_PREFIX)
