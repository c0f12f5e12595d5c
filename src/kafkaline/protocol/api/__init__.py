"""One module per Kafka API: typed, versioned request and response declarations.

:data:`REQUEST_TYPES` lists every request kafkaline declares; each names its response class in
``RESPONSE_TYPE``.
"""

from __future__ import annotations

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
from kafkaline.protocol.api.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafkaline.protocol.api.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from kafkaline.protocol.api.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from kafkaline.protocol.api.metadata import MetadataRequest, MetadataResponse
from kafkaline.protocol.api.produce import ProduceRequest, ProduceResponse
from kafkaline.protocol.api.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from kafkaline.protocol.api.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from kafkaline.protocol.api.txn_offset_commit import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from kafkaline.protocol.schema import Request

#: Every request type kafkaline declares, in API key order.
REQUEST_TYPES: tuple[type[Request], ...] = (
    ProduceRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    FindCoordinatorRequest,
    SaslHandshakeRequest,
    ApiVersionsRequest,
    CreateTopicsRequest,
    InitProducerIdRequest,
    AddPartitionsToTxnRequest,
    AddOffsetsToTxnRequest,
    EndTxnRequest,
    TxnOffsetCommitRequest,
    SaslAuthenticateRequest,
)

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
