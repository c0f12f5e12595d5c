"""Broker error codes 60 and up, one class each (see :mod:`kafkaline.errors`)."""

from __future__ import annotations

from kafkaline.errors.base import BrokerError


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
