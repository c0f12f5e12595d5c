"""One module per Kafka API: typed, versioned request and response declarations.

:data:`REQUEST_TYPES` lists every request kafkaline declares; each names its response class in
``RESPONSE_TYPE``.

Each API's module is imported when one of its names is first read from here (PEP 562), so
that a producer does not declare Fetch, ListOffsets, CreateTopics or the SASL messages at
start-up; ``kafkaline.protocol.versions`` keeps the version table without importing them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkaline.protocol.api.add_offsets_to_txn import (
        AddOffsetsToTxnRequest,
        AddOffsetsToTxnResponse,
    )
    from kafkaline.protocol.api.add_partitions_to_txn import (
        AddPartitionsToTxnRequest,
        AddPartitionsToTxnResponse,
    )
    from kafkaline.protocol.api.api_versions import ApiVersionsRequest, ApiVersionsResponse
    from kafkaline.protocol.api.create_topics import CreateTopicsRequest, CreateTopicsResponse
    from kafkaline.protocol.api.end_txn import EndTxnRequest, EndTxnResponse
    from kafkaline.protocol.api.fetch import FetchRequest, FetchResponse
    from kafkaline.protocol.api.find_coordinator import (
        FindCoordinatorRequest,
        FindCoordinatorResponse,
    )
    from kafkaline.protocol.api.init_producer_id import (
        InitProducerIdRequest,
        InitProducerIdResponse,
    )
    from kafkaline.protocol.api.list_offsets import ListOffsetsRequest, ListOffsetsResponse
    from kafkaline.protocol.api.metadata import MetadataRequest, MetadataResponse
    from kafkaline.protocol.api.produce import ProduceRequest, ProduceResponse
    from kafkaline.protocol.api.sasl_authenticate import (
        SaslAuthenticateRequest,
        SaslAuthenticateResponse,
    )
    from kafkaline.protocol.api.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
    from kafkaline.protocol.api.txn_offset_commit import (
        TxnOffsetCommitRequest,
        TxnOffsetCommitResponse,
    )
    from kafkaline.protocol.schema import Request

    #: Every request type kafkaline declares, in API key order.
    REQUEST_TYPES: tuple[type[Request], ...]

# Public name -> the module (under kafkaline.protocol.api) that declares it.
_MODULE_OF: dict[str, str] = {
    "AddOffsetsToTxnRequest": "add_offsets_to_txn",
    "AddOffsetsToTxnResponse": "add_offsets_to_txn",
    "AddPartitionsToTxnRequest": "add_partitions_to_txn",
    "AddPartitionsToTxnResponse": "add_partitions_to_txn",
    "ApiVersionsRequest": "api_versions",
    "ApiVersionsResponse": "api_versions",
    "CreateTopicsRequest": "create_topics",
    "CreateTopicsResponse": "create_topics",
    "EndTxnRequest": "end_txn",
    "EndTxnResponse": "end_txn",
    "FetchRequest": "fetch",
    "FetchResponse": "fetch",
    "FindCoordinatorRequest": "find_coordinator",
    "FindCoordinatorResponse": "find_coordinator",
    "InitProducerIdRequest": "init_producer_id",
    "InitProducerIdResponse": "init_producer_id",
    "ListOffsetsRequest": "list_offsets",
    "ListOffsetsResponse": "list_offsets",
    "MetadataRequest": "metadata",
    "MetadataResponse": "metadata",
    "ProduceRequest": "produce",
    "ProduceResponse": "produce",
    "SaslAuthenticateRequest": "sasl_authenticate",
    "SaslAuthenticateResponse": "sasl_authenticate",
    "SaslHandshakeRequest": "sasl_handshake",
    "SaslHandshakeResponse": "sasl_handshake",
    "TxnOffsetCommitRequest": "txn_offset_commit",
    "TxnOffsetCommitResponse": "txn_offset_commit",
}

# In API key order, as REQUEST_TYPES lists them.
_REQUEST_NAMES = (
    "ProduceRequest",
    "FetchRequest",
    "ListOffsetsRequest",
    "MetadataRequest",
    "FindCoordinatorRequest",
    "SaslHandshakeRequest",
    "ApiVersionsRequest",
    "CreateTopicsRequest",
    "InitProducerIdRequest",
    "AddPartitionsToTxnRequest",
    "AddOffsetsToTxnRequest",
    "EndTxnRequest",
    "TxnOffsetCommitRequest",
    "SaslAuthenticateRequest",
)


def __getattr__(name: str) -> object:
    if name == "REQUEST_TYPES":
        value: object = tuple(__getattr__(request) for request in _REQUEST_NAMES)
    elif name in _MODULE_OF:
        module = importlib.import_module(f"{__name__}.{_MODULE_OF[name]}")
        value = getattr(module, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # the next read is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "REQUEST_TYPES",
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "EndTxnRequest",
    "EndTxnResponse",
    "FetchRequest",
    "FetchResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "MetadataRequest",
    "MetadataResponse",
    "ProduceRequest",
    "ProduceResponse",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
]
