""":class:`CompressionRatioEstimator`: how well a topic's records compress, per topic.

New batches are sized by it: with an estimate of 0.5 a 16 KiB batch takes ~32 KiB of records
before compression, so it is ~16 KiB once compressed. It follows Java's
``CompressionRatioEstimator``: a batch compressing worse than the estimate raises it at once
by at least 0.05 (too full a batch risks MESSAGE_TOO_LARGE), a batch compressing better
lowers it by at most 0.005 (slowly, to be safe).
"""

from __future__ import annotations

__all__ = ["CompressionRatioEstimator"]

#: How much a worse-compressing batch raises the estimate at least (Java's DETERIORATE_STEP).
DETERIORATE_STEP = 0.05
#: How much a better-compressing batch lowers the estimate at most (Java's IMPROVING_STEP).
IMPROVING_STEP = 0.005
#: The estimate never goes below this: the record builder needs a ratio in (0, 1].
MIN_RATIO = 0.01


class CompressionRatioEstimator:
    """Per-topic estimates of compressed / uncompressed size, starting at 1.0.

    Updated by the Sender's thread only (at drain); read by appending threads, which only
    need a recent value (a float read is atomic).

    >>> estimator = CompressionRatioEstimator()
    >>> estimator.update("events", 0.3)
    0.995
    >>> estimator.update("events", 0.999)  # worse: back up at once
    1.0
    """

    __slots__ = ("_ratios",)

    def __init__(self) -> None:
        self._ratios: dict[str, float] = {}

    def estimate(self, topic: str) -> float:
        """The current estimate for ``topic`` (1.0 before any batch was observed)."""
        return self._ratios.get(topic, 1.0)

    def update(self, topic: str, observed_ratio: float) -> float:
        """Fold in the ratio a sealed batch of ``topic`` achieved; return the new estimate."""
        current = self._ratios.get(topic, 1.0)
        if observed_ratio > current:
            current = max(current + DETERIORATE_STEP, observed_ratio)
        elif observed_ratio < current:
            current = max(current - IMPROVING_STEP, observed_ratio)
        current = min(1.0, max(MIN_RATIO, current))
        self._ratios[topic] = current
        return current

    def reset(self, topic: str, ratio: float = 1.0) -> None:
        """Set ``topic``'s estimate (to 1.0 after a split: assume no compression)."""
        self._ratios[topic] = min(1.0, max(MIN_RATIO, ratio))
