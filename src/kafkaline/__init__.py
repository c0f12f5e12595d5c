"""kafkaline: a fast Kafka producer for Python, with a PySpark pipeline integration.

This module only re-exports the public API; importing it starts nothing.
"""

from kafkaline.config import ExponentialBackoff, ProducerConfig
from kafkaline.errors import (
    BrokerError,
    BufferExhaustedError,
    ConfigError,
    DeliveryTimeoutError,
    InvalidPartitionError,
    KafkaError,
    KafkaTimeoutError,
    ProducerClosedError,
    ProducerForkedError,
    RecordTooLargeError,
    SenderFailedError,
)
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

__all__ = [
    "BrokerError",
    "BufferExhaustedError",
    "BytesSerializer",
    "ConfigError",
    "DeliveryTimeoutError",
    "ExponentialBackoff",
    "FutureRecordMetadata",
    "InvalidPartitionError",
    "JsonSerializer",
    "KafkaError",
    "KafkaTimeoutError",
    "Partitioner",
    "Producer",
    "ProducerClosedError",
    "ProducerConfig",
    "ProducerForkedError",
    "ProducerInterceptor",
    "ProducerRecord",
    "RecordMetadata",
    "RecordTooLargeError",
    "RoundRobinPartitioner",
    "SenderFailedError",
    "Serializer",
    "StringSerializer",
]
__version__ = "0.1.0"
