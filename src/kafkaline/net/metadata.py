"""Keeping cluster metadata fresh: when to refresh, which topics to ask for, and waiting for a
topic from another thread.

:class:`Metadata` holds the current :class:`~kafkaline.net.cluster.ClusterMetadata` snapshot
and the refresh policy, the Java client's rules:

* refresh at least every ``metadata_max_age_ms``;
* refresh when asked (:meth:`Metadata.request_update`, e.g. after NOT_LEADER_OR_FOLLOWER), but
  never sooner than the refresh backoff after the previous attempt (``retry_backoff_ms``,
  doubling per failure up to ``retry_backoff_max_ms``), so errors cannot cause a storm;
* a topic seen for the first time is asked for at once, whatever the backoff;
* ask only for the topics the producer uses (a topic unused for ``topic_expiry_ms`` is
  dropped), and never with auto-creation unless the user asked for it.

The I/O thread decides and updates (:meth:`Metadata.time_to_next_update`,
:meth:`Metadata.new_request`, :meth:`Metadata.update`, :meth:`Metadata.failed_update`); other
threads read :attr:`Metadata.cluster` and block in :meth:`Metadata.wait_for_topic`. State
changes under one lock; the snapshot itself is immutable.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping

from kafkaline.config import ExponentialBackoff, UniformRandom
from kafkaline.errors import IllegalStateError, KafkaError, KafkaTimeoutError, ProtocolError
from kafkaline.net.cluster import BrokerNode, ClusterMetadata, TopicPartition
from kafkaline.protocol.api import MetadataRequest, MetadataResponse
from kafkaline.protocol.api.metadata import MetadataRequestTopic


class Metadata:
    """The cluster metadata of one client and the policy that refreshes it.

    Times are monotonic milliseconds; ``clock`` (used only by :meth:`wait_for_topic`) returns
    them. ``wakeup`` is called, outside the lock, when a thread other than the I/O thread
    needs a refresh (:meth:`add_topic`, :meth:`wait_for_topic`): it interrupts the I/O thread's
    poll.
    """

    def __init__(
        self,
        bootstrap: ClusterMetadata,
        *,
        max_age_ms: int,
        refresh_backoff: ExponentialBackoff,
        topic_expiry_ms: int,
        allow_auto_topic_creation: bool,
        clock: Callable[[], float],
        rng: UniformRandom,
        wakeup: Callable[[], None] | None = None,
    ) -> None:
        self._condition = threading.Condition(threading.Lock())
        #: The current snapshot (immutable; reading the reference needs no lock). Replaced
        #: by :meth:`update` only; read-only to everyone else. A plain attribute rather than
        #: a property: the I/O thread reads it about four times per record sent one at a
        #: time, a Python call each as a property.
        self.cluster = bootstrap
        self._max_age_ms = max_age_ms
        self._refresh_backoff = refresh_backoff
        self._topic_expiry_ms = topic_expiry_ms
        self._allow_auto_topic_creation = allow_auto_topic_creation
        self._clock = clock
        self._rng = rng
        self._wakeup = wakeup

        # topic -> when it was last used; dict writes are atomic, so add_topic's fast path
        # for a known topic takes no lock.
        self._topics: dict[str, float] = {}
        self._update_requested = True  # nothing is known yet
        self._new_topic_pending = False
        self._request_version = 0  # bumped by every request for an update
        self._update_version = 0  # bumped by every successful update
        self._in_flight_version: int | None = None
        self._last_refresh_ms = -math.inf  # last attempt, successful or not
        self._last_success_ms = -math.inf
        self._backoff_ms = 0.0
        self._failed_attempts = 0
        # When the refreshes began to fail (the first failure since the last success).
        self._failing_since_ms = math.inf
        self._last_error: KafkaError | None = None
        self._closed = False
        # When the next refresh is due (monotonic ms; infinity while one is in flight), worked
        # out from the fields above whenever one of them changes: see time_to_next_update.
        self._due_at = -math.inf
        self._update_due()

    # ------------------------------------------------------------------ reading

    @property
    def update_version(self) -> int:
        """How many successful updates there were."""
        return self._update_version

    @property
    def topics(self) -> frozenset[str]:
        """The topics asked for in metadata requests."""
        with self._condition:
            return frozenset(self._topics)

    def failing_for_ms(self, now: float) -> float:
        """How long refreshes have failed without a success in between (0: not failing)."""
        return max(now - self._failing_since_ms, 0.0)

    @property
    def last_error(self) -> KafkaError | None:
        """Why the last refresh failed; None after a success."""
        return self._last_error

    # ------------------------------------------------------------------ asking

    def add_topic(self, topic: str, now: float) -> None:
        """Mark ``topic`` as used at ``now``. A topic not known yet is fetched at once
        (the I/O thread is woken). Safe from any thread; cheap for a known topic."""
        if topic in self._topics:
            self._topics[topic] = now
            return
        with self._condition:
            self._topics[topic] = now
            needs_fetch = not self.cluster.has_topic(topic)
            if needs_fetch:
                self._request_update_for_new_topic_locked()
        if needs_fetch and self._wakeup is not None:
            self._wakeup()

    def request_update(self) -> int:
        """Ask for a refresh (it happens once the refresh backoff allows). Returns the
        current :attr:`update_version`. Does not wake the I/O thread."""
        with self._condition:
            self._update_requested = True
            self._request_version += 1
            self._update_due()
            return self._update_version

    def _request_update_for_new_topic_locked(self) -> None:
        self._update_requested = True
        self._request_version += 1
        # A new topic is not an error to back off from: the next request, which will carry
        # it, may go at once (even right after a refresh that did not carry it).
        self._new_topic_pending = True
        self._update_due()

    @property
    def update_requested(self) -> bool:
        """Whether a refresh was asked for and not done yet."""
        return self._update_requested

    # ------------------------------------------------------------------ the I/O thread's side

    def time_to_next_update(self, now: float) -> float:
        """Milliseconds until a refresh is due (0: now). Infinity while one is in flight:
        its response (or failure) comes first."""
        # Read without the lock: the I/O thread asks this up to three times per pass. The
        # due time is one attribute, written (under the lock) after every change of what it
        # depends on, by the I/O thread itself or, from other threads, only to ask for a
        # refresh (then the I/O thread is woken, or not woken at all by request_update()).
        # Reading it while such a request lands gives the answer of just before or just
        # after it, as the locked read did; working it out here from six fields cost more.
        wait = self._due_at - now
        return wait if wait > 0.0 else 0.0

    def _update_due(self) -> None:
        # When the next refresh is due: never while one is in flight; else once the
        # snapshot is older than max_age_ms (at once if one was asked for), and the refresh
        # backoff after the last attempt is over (not waited for a new topic).
        if self._in_flight_version is not None:
            self._due_at = math.inf
            return
        expire_at = (
            -math.inf if self._update_requested else self._last_success_ms + self._max_age_ms
        )
        if self._new_topic_pending:
            self._due_at = expire_at
            return
        allow_at = self._last_refresh_ms + self._backoff_ms
        self._due_at = allow_at if allow_at > expire_at else expire_at

    def is_update_due(self, now: float) -> bool:
        """Whether a refresh should be sent now."""
        return self.time_to_next_update(now) == 0

    def new_request(self, now: float) -> MetadataRequest:
        """The request for the next refresh, for the topics in use; marks a refresh in flight.

        Topics not used for ``topic_expiry_ms`` are dropped first. Kafka answers an empty
        topic list with the brokers only (Tansu 0.6 answers it with every topic).
        """
        with self._condition:
            if self._in_flight_version is not None:
                raise IllegalStateError("a metadata request is already in flight")
            expiry = self._topic_expiry_ms
            for topic, last_used in list(self._topics.items()):
                if now - last_used >= expiry:
                    del self._topics[topic]
            self._in_flight_version = self._request_version
            self._new_topic_pending = False
            self._update_due()
            return MetadataRequest(
                topics=[MetadataRequestTopic(name=topic) for topic in sorted(self._topics)],
                allow_auto_topic_creation=self._allow_auto_topic_creation,
            )

    def update(self, response: MetadataResponse, now: float) -> ClusterMetadata:
        """Install the snapshot built from ``response`` and wake every waiter.

        A response naming no broker is treated as a failed refresh (the previous snapshot is
        kept: no broker would be left to ask). If a topic in use came back with a retriable
        error or a partition without leader, another refresh is requested (after backoff).
        """
        if not response.brokers:
            self.failed_update(now, ProtocolError("the metadata response named no broker"))
            return self.cluster
        with self._condition:
            cluster = ClusterMetadata.from_response(response, previous=self.cluster)
            self.cluster = cluster
            self._update_version += 1
            sent_version = self._in_flight_version if self._in_flight_version is not None else 0
            self._in_flight_version = None
            self._last_refresh_ms = now
            self._last_success_ms = now
            self._failed_attempts = 0
            self._failing_since_ms = math.inf
            self._backoff_ms = self._refresh_backoff.next_delay(0, self._rng)
            self._last_error = None
            self._update_requested = self._request_version > sent_version or self._incomplete(
                cluster
            )
            self._update_due()
            self._condition.notify_all()
            return cluster

    def _incomplete(self, cluster: ClusterMetadata) -> bool:
        for topic in self._topics:
            error = cluster.topic_error(topic)
            if error is not None and error.retriable:
                return True
            partitions = cluster.partitions_for(topic)
            if len(cluster.available_partitions(topic)) < len(partitions):
                return True
        return False

    def failed_update(self, now: float, error: KafkaError) -> None:
        """Record a refresh that failed (no response, connection lost); the next one waits
        for the refresh backoff, which grows per failure."""
        with self._condition:
            self._in_flight_version = None
            self._last_refresh_ms = now
            self._backoff_ms = self._refresh_backoff.next_delay(self._failed_attempts, self._rng)
            if self._failed_attempts == 0:
                self._failing_since_ms = now
            self._failed_attempts += 1
            self._last_error = error
            self._update_due()
            self._condition.notify_all()

    def update_leaders(
        self,
        leaders: Mapping[TopicPartition, tuple[int, int]],
        endpoints: Iterable[BrokerNode] = (),
    ) -> bool:
        """Install the leaders a broker named in its answer (KIP-951: ``(leader id, leader
        epoch)`` per partition, and where to reach them) without waiting for a refresh.
        Returns whether any partition's leader changed (a newer epoch of the same leader is
        installed too, but is no change); see :meth:`ClusterMetadata.with_leaders`."""
        with self._condition:
            before = self.cluster
            cluster = before.with_leaders(leaders, endpoints)
            if cluster is None:
                return False
            self.cluster = cluster
            return any(before.leader_for(tp) != cluster.leader_for(tp) for tp in leaders)

    def rebootstrap(self, bootstrap: ClusterMetadata, now: float) -> None:
        """Forget every broker and go back to ``bootstrap`` (KIP-899; see
        :meth:`ClusterMetadata.rebootstrapped`), then refresh at once: none of the known
        brokers could be reached."""
        with self._condition:
            self.cluster = bootstrap
            self._update_requested = True
            self._request_version += 1
            self._failed_attempts = 0
            self._failing_since_ms = math.inf
            self._backoff_ms = 0.0
            self._update_due()

    # ------------------------------------------------------------------ other threads

    def wait_for_topic(self, topic: str, timeout_ms: float) -> ClusterMetadata:
        """Block until ``topic``'s partitions are known, at most ``timeout_ms``; return the
        snapshot that knows them. Safe from any thread but the I/O thread (which must be
        polling for the refresh to happen).

        Raises the broker's error at once if it is not retriable (e.g.
        TopicAuthorizationFailedError, InvalidTopicError); KafkaTimeoutError naming the topic,
        the time and the last error seen if the time runs out; IllegalStateError if the
        client is closed meanwhile.
        """
        deadline = self._clock() + timeout_ms
        while True:
            with self._condition:
                cluster = self._check_topic_locked(topic, timeout_ms, deadline)
                if cluster is not None:
                    return cluster
                self._topics[topic] = self._clock()
                if not self._update_requested:
                    self._update_requested = True
                    self._request_version += 1
                    self._update_due()
                version = self._update_version
            if self._wakeup is not None:
                self._wakeup()
            with self._condition:
                # Woken by an update, a failed refresh or close(); each is re-checked above.
                if self._update_version == version and not self._closed:
                    remaining_ms = deadline - self._clock()
                    if remaining_ms > 0:
                        self._condition.wait(remaining_ms / 1000)

    def _check_topic_locked(
        self, topic: str, timeout_ms: float, deadline: float
    ) -> ClusterMetadata | None:
        if self._closed:
            raise IllegalStateError(
                f"the client was closed while waiting for metadata of topic {topic!r}"
            )
        cluster = self.cluster
        if cluster.has_topic(topic):
            return cluster
        error = cluster.topic_error(topic)
        if error is not None and not error.retriable:
            raise error
        if self._clock() >= deadline:
            reasons = []
            if error is not None:
                reasons.append(f"the broker says {error}")
            if self._last_error is not None:
                reasons.append(f"last metadata error: {self._last_error}")
            detail = f" ({'; '.join(reasons)})" if reasons else ""
            raise KafkaTimeoutError(
                f"topic {topic!r} not present in metadata after {timeout_ms:.0f} ms{detail}"
            )
        if topic not in self._topics:
            self._request_update_for_new_topic_locked()
        return None

    def close(self) -> None:
        """Wake every waiter; they raise IllegalStateError."""
        with self._condition:
            self._closed = True
            self._condition.notify_all()
