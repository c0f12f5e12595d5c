"""Creating and deleting topics with the broker's own CLI (``tansu topic create|delete``)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping

from kafkaline.errors import ConfigError
from kafkaline.testing.errors import TopicCommandError

# Kafka's own rule (org.apache.kafka.common.internals.Topic). Tansu checks none of it: it
# happily creates "", "bad name!" or a topic with 0 partitions, which clients then choke on.
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def validate_topic_name(name: str) -> None:
    """Raise ConfigError unless ``name`` is a name a Kafka broker accepts."""
    if not isinstance(name, str) or not _LEGAL_TOPIC_NAME.fullmatch(name) or name in {".", ".."}:
        raise ConfigError(
            f"topic name {name!r} is not a legal Kafka topic name: 1-249 characters of "
            "ASCII letters, digits, '.', '_' or '-', and not '.' or '..'"
        )


def validate_partitions(partitions: int) -> None:
    """Raise ConfigError unless ``partitions`` is a partition count a Kafka broker accepts."""
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
    """Run ``BIN topic create --broker URL --partitions N NAME``; raise TopicCommandError
    with the CLI's output if it fails (e.g. the topic exists already)."""
    argv = [broker_bin, "topic", "create", "--broker", broker_url]
    argv += ["--partitions", str(partitions), name]
    _run(argv, f"creating topic {name!r}", env=env, timeout=timeout)


def run_topic_delete(
    broker_bin: str, broker_url: str, name: str, *, env: Mapping[str, str], timeout: float
) -> None:
    """Run ``BIN topic delete --broker URL NAME``; raise TopicCommandError with the CLI's
    output if it fails (e.g. there is no such topic)."""
    argv = [broker_bin, "topic", "delete", "--broker", broker_url, name]
    _run(argv, f"deleting topic {name!r}", env=env, timeout=timeout)


def _run(argv: list[str], what: str, *, env: Mapping[str, str], timeout: float) -> None:
    command = " ".join(argv)
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
        output = (exc.output or b"").decode("utf-8", errors="replace").strip()
        raise TopicCommandError(
            f"{what} did not finish within {timeout} s: {command}\n{output}"
        ) from exc
    if completed.returncode != 0:
        output = completed.stdout.decode("utf-8", errors="replace").strip()
        raise TopicCommandError(
            f"{what} failed (exit code {completed.returncode}): {command}\n{output}"
        )
