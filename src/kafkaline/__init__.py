"""kafkaline: a fast Kafka producer for Python, with a PySpark pipeline integration.

This module only re-exports the public API; importing it starts nothing.
"""

import logging

from kafkaline.config import ExponentialBackoff, ProducerConfig, Secret
from kafkaline.errors import (
    AuthenticationError,
    BrokerError,
    BufferExhaustedError,
    ConfigError,
    DeliveryOutcomeUnknownError,
    DeliveryTimeoutError,
    InvalidPartitionError,
    InvalidProducerEpochError,
    KafkaError,
    KafkaTimeoutError,
    ProducerClosedError,
    ProducerFencedError,
    ProducerForkedError,
    RecordTooLargeError,
    SaslAuthenticationError,
    SenderFailedError,
    SslAuthenticationError,
    TransactionAbortedError,
    TransactionStateError,
)
from kafkaline.producer.bulk import BatchSendResult
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.producer.interceptors import ProducerInterceptor
from kafkaline.producer.partitioner import Partitioner, RoundRobinPartitioner
from kafkaline.producer.producer import Producer
from kafkaline.producer.record import ProducerRecord
from kafkaline.producer.record_metadata import RecordMetadata
from kafkaline.producer.serializers import (
    BytesSerializer,
    JsonSerializer,
    Serializer,
    StringSerializer,
)
from kafkaline.producer.transactions import TransactionIdentity

__all__ = [
    "AuthenticationError",
    "BatchSendResult",
    "BrokerError",
    "BufferExhaustedError",
    "BytesSerializer",
    "ConfigError",
    "DeliveryOutcomeUnknownError",
    "DeliveryTimeoutError",
    "ExponentialBackoff",
    "FutureRecordMetadata",
    "InvalidPartitionError",
    "InvalidProducerEpochError",
    "JsonSerializer",
    "KafkaError",
    "KafkaTimeoutError",
    "Partitioner",
    "Producer",
    "ProducerClosedError",
    "ProducerConfig",
    "ProducerFencedError",
    "ProducerForkedError",
    "ProducerInterceptor",
    "ProducerRecord",
    "RecordMetadata",
    "RecordTooLargeError",
    "RoundRobinPartitioner",
    "SaslAuthenticationError",
    "Secret",
    "SenderFailedError",
    "Serializer",
    "SslAuthenticationError",
    "StringSerializer",
    "TransactionAbortedError",
    "TransactionIdentity",
    "TransactionStateError",
]
__version__ = "0.1.0"

# The library convention: nothing is printed unless the application configures logging.
logging.getLogger(__name__).addHandler(logging.NullHandler())
