"""Idempotence and transactions (KIP-98) for the producer:

- :mod:`~kafkaline.producer.transactions.idempotence`: :class:`IdempotenceManager`, the
  idempotent producer's id, epoch and per-partition sequences;
- :mod:`~kafkaline.producer.transactions.manager`: :class:`TransactionManager`, that plus a
  transaction's state and its requests, for a producer with a ``transactional_id``;
- :mod:`~kafkaline.producer.transactions.coordinator_requests`: those requests, one handler
  each;
- :mod:`~kafkaline.producer.transactions.state`: the states, and
  :class:`TransactionIdentity`;
- :mod:`~kafkaline.producer.transactions.calls`: the steps of the Producer's transaction
  methods (commit, abort, send offsets, the identity to hand over, completing it);
- :mod:`~kafkaline.producer.transactions.handover`: completing a transaction another producer
  opened (:meth:`kafkaline.Producer.complete_transaction`).
"""

from kafkaline.producer.transactions.state import TransactionIdentity, TransactionState

__all__ = ["TransactionIdentity", "TransactionState"]
