"""A local S3 server (moto's) behind the broker's durable ``s3://tansu/`` storage.

Tansu's memory storage forgets everything when the broker stops; with its S3 storage pointed
at a moto server that outlives broker restarts, topics and records survive them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from kafkaline.testing._ports import LOOPBACK
from kafkaline.testing._process import SpawnThread, tail_of_log
from kafkaline.testing.errors import BrokerStartError, BrokerStartTimeoutError

BUCKET = "tansu"
STORAGE_URL = f"s3://{BUCKET}/"
INSTALL_HINT = "storage='s3' runs a local S3 server from moto: pip install 'moto[server]'"

# Any region works with moto; Tansu's S3 client needs one to be set.
_REGION = "us-east-1"
_HTTP_TIMEOUT = 1.0
_POLL_INTERVAL = 0.02


def _moto_server_installed() -> bool:
    # moto's [server] extra is what brings flask; moto alone cannot serve HTTP.
    return all(importlib.util.find_spec(name) is not None for name in ("moto", "flask"))


def endpoint(port: int) -> str:
    """The S3 server's URL."""
    return f"http://{LOOPBACK}:{port}"


def broker_env(port: int) -> dict[str, str]:
    """What Tansu's S3 client needs to use the local server: any credentials, plain HTTP."""
    return {
        "AWS_ACCESS_KEY_ID": "kafkaline-testing",
        "AWS_SECRET_ACCESS_KEY": "kafkaline-testing",
        "AWS_DEFAULT_REGION": _REGION,
        "AWS_REGION": _REGION,
        "AWS_ENDPOINT": endpoint(port),
        "AWS_ALLOW_HTTP": "true",
    }


def _http(method: str, url: str) -> int:
    """Status of one request, ignoring any proxy settings (the server is on loopback)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, method=method, data=b"" if method == "PUT" else None)
    try:
        with opener.open(request, timeout=_HTTP_TIMEOUT) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as exc:
        return exc.code


def start_s3_server(
    port: int, log_path: Path, timeout: float, spawner: SpawnThread
) -> subprocess.Popen[bytes]:
    """Start ``moto.server`` on ``127.0.0.1:port``, wait until it answers, create the bucket.

    Raises BrokerStartError (moto missing, or it exited) or BrokerStartTimeoutError, with the
    server's log tail. The caller owns the returned process and must kill it.
    """
    if not _moto_server_installed():
        raise BrokerStartError(INSTALL_HINT)
    argv = [sys.executable, "-m", "moto.server", "-H", LOOPBACK, "-p", str(port)]
    process = spawner.spawn(argv, env=dict(os.environ), log_path=log_path)
    try:
        _wait_until_ready(process, port, log_path, time.monotonic() + timeout)
        status = _http("PUT", f"{endpoint(port)}/{BUCKET}")
        if status != 200:
            raise BrokerStartError(
                f"creating bucket {BUCKET!r} on the local S3 server answered HTTP {status}; "
                f"{_excerpt(log_path)}"
            )
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process


def _wait_until_ready(
    process: subprocess.Popen[bytes], port: int, log_path: Path, deadline: float
) -> None:
    while True:
        if process.poll() is not None:
            raise BrokerStartError(
                f"the local S3 server exited during start (exit code {process.returncode}); "
                f"{_excerpt(log_path)}"
            )
        with contextlib.suppress(OSError):  # refused or reset: still starting
            if _http("GET", f"{endpoint(port)}/moto-api/") == 200:
                return
        if time.monotonic() >= deadline:
            raise BrokerStartTimeoutError(
                f"the local S3 server did not answer on {endpoint(port)} in time; "
                f"{_excerpt(log_path)}"
            )
        time.sleep(_POLL_INTERVAL)


def _excerpt(log_path: Path) -> str:
    return f"S3 server log {log_path} ends with:\n{tail_of_log(log_path)}"
