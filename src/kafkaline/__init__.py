"""kafkaline: a fast Kafka producer for Python, with a PySpark pipeline integration.

This module only re-exports the public API; importing it starts nothing.
"""

from kafkaline.errors import ConfigError, KafkaError, KafkaTimeoutError

__all__ = ["ConfigError", "KafkaError", "KafkaTimeoutError"]
__version__ = "0.1.0"
