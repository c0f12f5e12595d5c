"""Creating topics with the broker's own CLI (``tansu topic create``)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping

from kafkaline.errors import ConfigError
from kafkaline.testing.errors import TopicCreationError

# Kafka's own rule (org.apache.kafka.common.internals.Topic). Tansu checks none of it: it
# happily creates "", "bad name!" or a topic with 0 partitions, which clients then choke on.
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def validate_topic(name: str, partitions: int) -> None:
    """Raise ConfigError unless ``name`` and ``partitions`` are what a Kafka broker accepts."""
    if not _LEGAL_TOPIC_NAME.fullmatch(name) or name in {".", ".."}:
        raise ConfigError(
            f"topic name {name!r} is not a legal Kafka topic name: 1-249 characters of "
            "ASCII letters, digits, '.', '_' or '-', and not '.' or '..'"
        )
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise ConfigError(f"partitions={partitions!r} must be an int >= 1")


def run_topic_create(
    broker_bin: str,
    broker_url: str,
    name: str,
    partitions: int,
    *,
    env: Mapping[str, str],
    timeout: float,
) -> None:
    """Run ``BIN topic create --broker URL --partitions N NAME``; raise TopicCreationError
    with the CLI's output if it fails (e.g. the topic exists already)."""
    argv = [broker_bin, "topic", "create", "--broker", broker_url]
    argv += ["--partitions", str(partitions), name]
    try:
        completed = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(env),
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        output = (exc.output or b"").decode("utf-8", errors="replace")
        raise TopicCreationError(
            f"creating topic {name!r} did not finish within {timeout} s: {' '.join(argv)}\n{output}"
        ) from exc
    if completed.returncode != 0:
        output = completed.stdout.decode("utf-8", errors="replace").strip()
        raise TopicCreationError(
            f"creating topic {name!r} failed (exit code {completed.returncode}): "
            f"{' '.join(argv)}\n{output}"
        )
