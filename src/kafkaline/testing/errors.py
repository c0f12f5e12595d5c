"""Errors of the local test broker. They hang off kafkaline's root :class:`KafkaError`.

:class:`~kafkaline.errors.BrokerBinaryNotFound` (no Tansu binary) lives in kafkaline.errors.
"""

from __future__ import annotations

from kafkaline.errors import KafkaError


class LocalBrokerError(KafkaError, RuntimeError):
    """The local broker could not do what was asked. The message carries the broker's (or the
    CLI's) own output, so the cause is visible in the test report."""


class BrokerStartError(LocalBrokerError):
    """The broker process exited during start, or its port was not free."""


class BrokerStartTimeoutError(BrokerStartError, TimeoutError):
    """The broker process runs but did not answer ApiVersions within the start timeout."""


class TopicCommandError(LocalBrokerError):
    """``tansu topic create``/``delete`` failed, or the broker's metadata did not show the
    change."""
