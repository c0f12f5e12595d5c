"""Bulk sending: ``Producer.send_batch()`` and ``Producer.send_arrow()``.

- :mod:`~kafkaline.producer.bulk.result`: :class:`BatchSendResult`, what a bulk call returns;
- :mod:`~kafkaline.producer.bulk.sender`: :class:`~kafkaline.producer.bulk.sender.BulkSender`,
  the checks of a call, handed then to a bulk encoder;
- :mod:`~kafkaline.producer.bulk.encoder`: the encoders' one interface, ``BulkEncoder``, and
  ``choose_encoder``, which picks one from the ``bulk_encoder`` setting;
- :mod:`~kafkaline.producer.bulk.records_path`: the ``records`` encoder (``append_many``);
- :mod:`~kafkaline.producer.bulk.per_record`: the ``per-record`` encoder (interceptors);
- :mod:`~kafkaline.producer.bulk.columnar_path`, :mod:`~kafkaline.producer.bulk.columnar` and
  :mod:`~kafkaline.producer.bulk.columns`: the ``columnar`` encoder (numpy and pyarrow);
- :mod:`~kafkaline.producer.bulk.lists`: checks and grouping over Python lists;
- :mod:`~kafkaline.producer.bulk.arrow`: reading Arrow columns.
"""

from kafkaline.producer.bulk.result import BatchSendResult

__all__ = ["BatchSendResult"]
