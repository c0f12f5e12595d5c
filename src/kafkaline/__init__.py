"""kafkaline: a fast Kafka producer for Python, with a PySpark pipeline integration.

This module only re-exports the public API; importing it starts nothing.
"""

from kafkaline.config import ExponentialBackoff, ProducerConfig
from kafkaline.errors import (
    BrokerError,
    ConfigError,
    InvalidPartitionError,
    KafkaError,
    KafkaTimeoutError,
)
from kafkaline.producer.interceptors import ProducerInterceptor
from kafkaline.producer.partitioner import Partitioner, RoundRobinPartitioner
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
    "BytesSerializer",
    "ConfigError",
    "ExponentialBackoff",
    "InvalidPartitionError",
    "JsonSerializer",
    "KafkaError",
    "KafkaTimeoutError",
    "Partitioner",
    "ProducerConfig",
    "ProducerInterceptor",
    "ProducerRecord",
    "RecordMetadata",
    "RoundRobinPartitioner",
    "Serializer",
    "StringSerializer",
]
__version__ = "0.1.0"
