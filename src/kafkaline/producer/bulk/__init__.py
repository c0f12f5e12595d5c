"""Bulk sending: ``Producer.send_batch()`` and ``Producer.send_arrow()``.

- :mod:`~kafkaline.producer.bulk.result`: :class:`BatchSendResult`, what a bulk call returns;
- :mod:`~kafkaline.producer.bulk.sender`: :class:`~kafkaline.producer.bulk.sender.BulkSender`,
  the checks of a call and the choice of its encoder (the ``bulk_encoder`` setting);
- :mod:`~kafkaline.producer.bulk.lists`: checks and grouping over Python lists;
- :mod:`~kafkaline.producer.bulk.arrow`: reading Arrow columns;
- :mod:`~kafkaline.producer.bulk.columnar_path`, :mod:`~kafkaline.producer.bulk.columnar` and
  :mod:`~kafkaline.producer.bulk.columns`: the ``columnar`` encoder (numpy and pyarrow).
"""

from kafkaline.producer.bulk.result import BatchSendResult

__all__ = ["BatchSendResult"]
