"""Choosing which version of each API to speak with a broker.

A pure function of two tables: the version ranges the broker advertised in its ApiVersions
response, and the ranges kafkaline implements (:data:`SUPPORTED_VERSIONS`). For every API the
highest version in both wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from kafkaline.errors import NoCompatibleVersionError

if TYPE_CHECKING:
    from kafkaline.protocol.api.api_versions import ApiVersionsResponse


class VersionRange(NamedTuple):
    """An inclusive range of API versions."""

    min: int
    max: int

    def __str__(self) -> str:
        return f"{self.min}-{self.max}"


#: API key -> the versions kafkaline can encode and decode. Written out rather than read from
#: the declarations so that a producer does not import every API's module at start-up; a unit
#: test requires it to equal each request's VALID_VERSIONS (``protocol.api.REQUEST_TYPES``).
SUPPORTED_VERSIONS: Mapping[int, VersionRange] = {
    0: VersionRange(3, 11),  # Produce
    1: VersionRange(4, 17),  # Fetch
    2: VersionRange(0, 10),  # ListOffsets
    3: VersionRange(0, 12),  # Metadata
    10: VersionRange(0, 6),  # FindCoordinator
    17: VersionRange(0, 1),  # SaslHandshake
    18: VersionRange(0, 4),  # ApiVersions
    19: VersionRange(0, 7),  # CreateTopics
    22: VersionRange(0, 5),  # InitProducerId
    24: VersionRange(0, 5),  # AddPartitionsToTxn
    25: VersionRange(0, 4),  # AddOffsetsToTxn
    26: VersionRange(0, 5),  # EndTxn
    28: VersionRange(0, 4),  # TxnOffsetCommit
    36: VersionRange(0, 2),  # SaslAuthenticate
}

_ADD_PARTITIONS_TO_TXN = 24

#: The ranges a client should offer: SUPPORTED_VERSIONS, except AddPartitionsToTxn, whose v4+
#: (batched, several transactions) is for brokers only; clients send v3 at most (KIP-890).
CLIENT_VERSIONS: Mapping[int, VersionRange] = {
    **SUPPORTED_VERSIONS,
    _ADD_PARTITIONS_TO_TXN: VersionRange(SUPPORTED_VERSIONS[_ADD_PARTITIONS_TO_TXN].min, 3),
}

#: API key -> Kafka's name for it, for messages (the request class's name without "Request").
API_NAMES: Mapping[int, str] = {
    0: "Produce",
    1: "Fetch",
    2: "ListOffsets",
    3: "Metadata",
    10: "FindCoordinator",
    17: "SaslHandshake",
    18: "ApiVersions",
    19: "CreateTopics",
    22: "InitProducerId",
    24: "AddPartitionsToTxn",
    25: "AddOffsetsToTxn",
    26: "EndTxn",
    28: "TxnOffsetCommit",
    36: "SaslAuthenticate",
}


def api_name(api_key: int) -> str:
    """A readable name for an API key, e.g. ``"Produce(0)"``."""
    return f"{API_NAMES.get(api_key, 'UnknownApi')}({api_key})"


def broker_version_ranges(response: ApiVersionsResponse) -> dict[int, VersionRange]:
    """The version ranges a broker advertised, by API key."""
    return {
        entry.api_key: VersionRange(entry.min_version, entry.max_version)
        for entry in response.api_keys
    }


def highest_common_version(api_key: int, ours: VersionRange, theirs: VersionRange | None) -> int:
    """The highest version both sides support.

    Raises :class:`~kafkaline.errors.NoCompatibleVersionError` naming the API and both ranges
    if the broker does not know the API (``theirs`` is None) or the ranges do not overlap.
    """
    if theirs is None:
        raise NoCompatibleVersionError(
            f"{api_name(api_key)}: the broker does not support this API "
            f"(kafkaline supports versions {ours})"
        )
    low = max(ours.min, theirs.min)
    high = min(ours.max, theirs.max)
    if low > high:
        raise NoCompatibleVersionError(
            f"{api_name(api_key)}: no common version "
            f"(kafkaline supports {ours}, the broker supports {theirs})"
        )
    return high


def choose_versions(
    broker: Mapping[int, VersionRange],
    ours: Mapping[int, VersionRange] = CLIENT_VERSIONS,
    required: Iterable[int] = (),
) -> dict[int, int]:
    """API key -> the version to use, for every API in ``ours`` (by default
    :data:`CLIENT_VERSIONS`) that shares a version with ``broker``.

    APIs listed in ``required`` must have a common version, else
    :class:`~kafkaline.errors.NoCompatibleVersionError` is raised; others are left out of the
    result (e.g. transactional APIs on a broker without transactions).

    >>> choose_versions({0: VersionRange(0, 9), 18: VersionRange(0, 3)}, required=[0])
    {0: 9, 18: 3}
    """
    required_keys = set(required)
    for api_key in required_keys:
        if api_key not in ours:
            raise NoCompatibleVersionError(
                f"{api_name(api_key)}: kafkaline does not implement this API"
            )
    chosen: dict[int, int] = {}
    for api_key, our_range in ours.items():
        try:
            chosen[api_key] = highest_common_version(api_key, our_range, broker.get(api_key))
        except NoCompatibleVersionError:
            if api_key in required_keys:
                raise
    return chosen
