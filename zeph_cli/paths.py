"""Where zeph keeps its files: config dir, data dir, cache dir, database.

Invariant: every location is derived from the environment passed in
(`ZEPH_HOME`, `ZEPH_CONFIG`, XDG variables via platformdirs); nothing is
created here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

APP_NAME = "zeph"
DATABASE_NAME = "zeph.db"


def _platformdirs():
    import platformdirs

    return platformdirs


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg:
        return Path(xdg) / APP_NAME
    return Path(_platformdirs().user_config_dir(APP_NAME, appauthor=False))


def default_config_path(env: Mapping[str, str] | None = None) -> Path:
    return config_dir(env) / "config.toml"


def global_project_file(env: Mapping[str, str] | None = None) -> Path:
    """The user-wide ZEPH.md, read before any project's own files."""
    return config_dir(env) / "ZEPH.md"


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("ZEPH_HOME"):
        return Path(env["ZEPH_HOME"]).expanduser()
    xdg = env.get("XDG_DATA_HOME")
    if xdg:
        return Path(xdg) / APP_NAME
    return Path(_platformdirs().user_data_dir(APP_NAME, appauthor=False))


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Files zeph can rebuild (the embedded model's saved prompt state): `ZEPH_HOME/cache` when ZEPH_HOME is
    set, so one variable moves (and isolates) everything, else the XDG or platform cache dir."""
    env = os.environ if env is None else env
    if env.get("ZEPH_HOME"):
        return Path(env["ZEPH_HOME"]).expanduser() / "cache"
    xdg = env.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / APP_NAME
    return Path(_platformdirs().user_cache_dir(APP_NAME, appauthor=False))


def database_path(env: Mapping[str, str] | None = None) -> Path:
    return data_dir(env) / DATABASE_NAME


def mcp_log_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where stdio MCP servers' stderr goes, one `ID.log` per server."""
    return data_dir(env) / "mcp"


def home_relative(path: str) -> str:
    """`path` with the home directory written as `~`, for listings."""
    home = str(Path.home())
    return "~" + path[len(home):] if home != "/" and path.startswith(home + os.sep) else path
