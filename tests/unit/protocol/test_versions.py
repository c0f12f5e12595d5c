"""Choosing the highest common version per API."""

from __future__ import annotations

import pytest

from kafkaline.errors import NoCompatibleVersionError
from kafkaline.protocol import (
    CLIENT_VERSIONS,
    SUPPORTED_VERSIONS,
    VersionRange,
    broker_version_ranges,
    choose_versions,
    highest_common_version,
)
from kafkaline.protocol.api.api_versions import ApiVersion, ApiVersionsResponse


def test_highest_common_version() -> None:
    assert highest_common_version(0, VersionRange(3, 11), VersionRange(0, 9)) == 9
    assert highest_common_version(0, VersionRange(3, 11), VersionRange(5, 12)) == 11
    assert highest_common_version(0, VersionRange(3, 11), VersionRange(3, 3)) == 3


def test_disjoint_ranges_name_the_api_and_both_ranges() -> None:
    with pytest.raises(NoCompatibleVersionError) as raised:
        highest_common_version(0, VersionRange(3, 11), VersionRange(0, 2))
    assert str(raised.value) == (
        "Produce(0): no common version (kafkaline supports 3-11, the broker supports 0-2)"
    )


def test_api_unknown_to_the_broker() -> None:
    with pytest.raises(NoCompatibleVersionError, match=r"EndTxn\(26\).*does not support"):
        highest_common_version(26, VersionRange(0, 5), None)


def test_choose_versions_skips_optional_apis_and_enforces_required_ones() -> None:
    broker = {0: VersionRange(0, 9), 3: VersionRange(0, 12), 18: VersionRange(0, 3)}
    assert choose_versions(broker, required=[0, 3, 18]) == {0: 9, 3: 12, 18: 3}
    with pytest.raises(NoCompatibleVersionError, match=r"InitProducerId\(22\)"):
        choose_versions(broker, required=[0, 22])
    with pytest.raises(NoCompatibleVersionError, match=r"Produce\(0\).*3-11.*0-2"):
        choose_versions({0: VersionRange(0, 2)}, required=[0])


def test_choose_versions_refuses_to_require_an_api_we_do_not_implement() -> None:
    with pytest.raises(NoCompatibleVersionError, match=r"\(42\)"):
        choose_versions({42: VersionRange(0, 1)}, required=[42])


def test_supported_versions_cover_produce_from_v3_and_fetch_from_v4() -> None:
    assert SUPPORTED_VERSIONS[0] == VersionRange(3, 11)
    assert SUPPORTED_VERSIONS[1] == VersionRange(4, 17)
    assert len(SUPPORTED_VERSIONS) == 14


def test_broker_version_ranges_from_api_versions_response() -> None:
    response = ApiVersionsResponse(
        api_keys=[
            ApiVersion(api_key=0, min_version=0, max_version=11),
            ApiVersion(api_key=18, min_version=0, max_version=4),
        ]
    )
    assert broker_version_ranges(response) == {0: VersionRange(0, 11), 18: VersionRange(0, 4)}


def test_clients_offer_add_partitions_to_txn_up_to_v3_only() -> None:
    assert SUPPORTED_VERSIONS[24] == VersionRange(0, 5)
    assert CLIENT_VERSIONS[24] == VersionRange(0, 3)
    assert choose_versions({24: VersionRange(0, 5)}) == {24: 3}


def test_the_written_out_tables_match_every_request_declaration() -> None:
    # versions.py writes the table out so that start-up need not import every API module.
    from kafkaline.protocol.api import REQUEST_TYPES
    from kafkaline.protocol.versions import API_NAMES

    declared = {
        request.API_KEY: VersionRange(request.VALID_VERSIONS.low, request.VALID_VERSIONS.high or 0)
        for request in REQUEST_TYPES
    }
    assert dict(SUPPORTED_VERSIONS) == declared
    names = {request.API_KEY: request.__name__.removesuffix("Request") for request in REQUEST_TYPES}
    assert dict(API_NAMES) == names
