"""Broker error codes -1 to 59, one class each (see :mod:`kafkaline.errors`)."""

from __future__ import annotations

from kafkaline.errors.base import BrokerError

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
