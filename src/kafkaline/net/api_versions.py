"""The versions a connection uses, from the broker's ApiVersions answer: a lower ApiVersions
version to retry with when the broker refused ours (KIP-511), else the version chosen per API."""

from __future__ import annotations

from collections.abc import Collection

from kafkaline.errors import NoCompatibleVersionError, UnsupportedVersionError, error_for_code
from kafkaline.protocol import VersionRange, broker_version_ranges, choose_versions
from kafkaline.protocol.api import ApiVersionsRequest, ApiVersionsResponse

__all__ = ["api_versions_fallback", "chosen_versions"]


def api_versions_fallback(response: ApiVersionsResponse, sent_version: int) -> int | None:
    """The ApiVersions version to ask again with when the broker answered
    UNSUPPORTED_VERSION to ``sent_version``; None when it did not (or v0 was refused)."""
    if response.error_code != UnsupportedVersionError.code or sent_version <= 0:
        return None
    # Since Kafka 2.4 (KIP-511) the broker lists its own ApiVersions range in this answer;
    # older brokers list nothing, and v0 is the safe fallback (Java does this).
    theirs = next(
        (
            entry.max_version
            for entry in response.api_keys
            if entry.api_key == ApiVersionsRequest.API_KEY
        ),
        0,
    )
    return max(0, min(theirs, sent_version - 1))  # strictly lower: no loop


def chosen_versions(
    response: ApiVersionsResponse,
    sent_version: int,
    required: Collection[int],
    description: str,
) -> tuple[dict[int, VersionRange], dict[int, int]]:
    """The broker's version ranges and the version chosen per API. Raises the broker's
    error if it refused, NoCompatibleVersionError (naming ``description``, the connection)
    if a ``required`` API has no version both sides speak."""
    if response.error_code:
        raise error_for_code(response.error_code)(
            f"ApiVersions v{sent_version} refused by {description}"
        )
    broker_versions = broker_version_ranges(response)
    try:
        versions = choose_versions(broker_versions, required=required)
    except NoCompatibleVersionError as error:
        raise NoCompatibleVersionError(f"{description}: {error}") from None
    return broker_versions, versions
