"""The Sender's cost per batch on a topic of many partitions, without a broker.

Issue 17: on a topic of thousands of partitions a batch holds a record or two, so what the I/O
thread does per batch (ready, drain, seal, the request's bytes, the response's decoding,
completing the batch's futures, giving its memory back) decides. Each round, the main thread
appends one 100-byte keyed record to every partition, then an I/O thread runs one
``Sender.run_once``: a fake client frames the produce request with the real
``ClientProtocol`` (v11) and answers it during the poll with real response bytes, decoded by
``ProduceResponse.decode``. GC is off; the appends happen on the main thread only.

Count the I/O thread's instructions at two round counts and difference them (start-up
cancels)::

    PYTHONHASHSEED=0 .venv/bin/python benchmarks/io_batch_cost.py --partitions 1000 \
        --callgrind                      # runs itself under valgrind: 3 and 8 rounds

Without ``--callgrind`` it runs the rounds once and prints the I/O thread's CPU per batch
(timed: noisy on a loaded machine).
"""

from __future__ import annotations

import argparse
import gc
import glob
import os
import subprocess
import sys
import tempfile
import threading
import time

from kafkaline.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata
from kafkaline.net.response import ClientResponse, OnComplete
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.buffer_pool import BufferPool
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.producer.sender import Sender
from kafkaline.protocol import Request
from kafkaline.protocol.api import ProduceResponse
from kafkaline.protocol.api.produce import PartitionProduceResponse, TopicProduceResponse
from kafkaline.protocol.framing import ClientProtocol

TOPIC = "many"
TIMESTAMP = 1_700_000_000_000
VERSION = 11


class _Metadata:
    def __init__(self, cluster: ClusterMetadata) -> None:
        self.cluster = cluster

    def add_topic(self, topic: str, now: float) -> None:
        pass

    def request_update(self) -> int:
        return 0

    def update_leaders(self, leaders: object, endpoints: object = ()) -> bool:
        return False


class _Client:
    """Frames each request as the network client would and answers it in the next poll."""

    def __init__(self, cluster: ClusterMetadata, answer: bytes) -> None:
        self.metadata = _Metadata(cluster)
        self._protocol = ClientProtocol("bench")
        self._answer = answer
        self._pending: list[tuple[Request, OnComplete]] = []

    def now(self) -> float:
        return 0.0

    def ready(self, node_id: int, now: float) -> bool:
        return True

    def connection_delay(self, node_id: int, now: float) -> float:
        return 0.0

    def send(
        self,
        node_id: int,
        request: Request,
        on_complete: OnComplete | None = None,
        now: float | None = None,
        *,
        version: int | None = None,
    ) -> int:
        assert on_complete is not None
        self._protocol.send_buffers(request, VERSION)
        self._pending.append((request, on_complete))
        return len(self._pending)

    def api_versions(self, node_id: int) -> dict[int, int]:
        return {}

    def poll(self, timeout_ms: float, now: float | None = None) -> list[ClientResponse]:
        pending, self._pending = self._pending, []
        for request, on_complete in pending:
            response = ProduceResponse.decode(self._answer, VERSION)
            on_complete(ClientResponse(1, request, VERSION, 0, response, None, 0.0, 1.0))
        return []

    def in_flight_request_count(self, node_id: int | None = None) -> int:
        return len(self._pending)

    def least_loaded_node(self, now: float) -> int | None:
        return 1

    def wakeup(self) -> None:
        pass

    def close(self) -> list[ClientResponse]:
        return []


def _answer(partitions: int) -> bytes:
    """A successful ProduceResponse v11 for every partition of the topic."""
    answers = [
        PartitionProduceResponse(index=p, error_code=0, base_offset=100, log_append_time_ms=-1)
        for p in range(partitions)
    ]
    response = ProduceResponse(
        responses=[TopicProduceResponse(name=TOPIC, partition_responses=answers)]
    )
    return bytes(response.encode(VERSION))


def run(partitions: int, rounds: int) -> float:
    """Run ``rounds`` rounds; return the I/O thread's CPU seconds."""
    cluster = ClusterMetadata(
        [BrokerNode(1, "b1", 9092)],
        [PartitionMetadata(TOPIC, p, leader=1) for p in range(partitions)],
    )
    client = _Client(cluster, _answer(partitions))
    accumulator = RecordAccumulator(
        batch_size=16384,
        linger_ms=0,
        buffer_pool=BufferPool(1 << 30, 16384),
    )
    sender = Sender(
        client,
        accumulator,
        acks=1,
        request_timeout_ms=30_000,
        max_request_size=1 << 30,
        retries=5,
        guarantee_message_order=False,
    )
    value = os.urandom(100)
    keys = [b"key-%06d" % p for p in range(partitions)]
    go = threading.Semaphore(0)
    done = threading.Semaphore(0)
    cpu = [0.0]

    def io_thread() -> None:
        for _ in range(rounds):
            go.acquire()
            start = time.thread_time()
            sender.run_once(1.0)
            cpu[0] += time.thread_time() - start
            done.release()

    thread = threading.Thread(target=io_thread, name="bench-io")
    thread.start()
    futures: list[FutureRecordMetadata] = []
    for _ in range(rounds):
        for partition in range(partitions):
            result = accumulator.append(TOPIC, partition, TIMESTAMP, keys[partition], value)
            futures.append(result[0])
        go.release()
        done.acquire()
        if not all(future.done() for future in futures):
            raise RuntimeError("a record was not completed in its round")
        futures.clear()
    thread.join()
    return cpu[0]


def _io_instructions(partitions: int, rounds: int) -> int:
    """The instructions the I/O thread ran, under callgrind (thread 2 of the process)."""
    with tempfile.TemporaryDirectory() as out_dir:
        out = os.path.join(out_dir, "cg.out")
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--separate-threads=yes",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                "--partitions",
                str(partitions),
                "--rounds",
                str(rounds),
            ],
            check=True,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        (thread_file,) = glob.glob(out + "*-02")
        with open(thread_file) as lines:
            for line in lines:
                if line.startswith("summary:") or line.startswith("totals:"):
                    return int(line.split()[1])
    raise RuntimeError("no instruction total in callgrind's output")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--callgrind", action="store_true", help="count, 3 and 8 rounds")
    args = parser.parse_args()
    gc.disable()
    if args.callgrind:
        short, long = 3, 8
        counts = [_io_instructions(args.partitions, rounds) for rounds in (short, long)]
        per_batch = (counts[1] - counts[0]) / ((long - short) * args.partitions)
        print(
            f"partitions={args.partitions}: {per_batch:,.0f} I/O-thread instructions per "
            f"batch (callgrind, {short} and {long} rounds differenced)"
        )
        return
    cpu = run(args.partitions, args.rounds)
    print(
        f"partitions={args.partitions}: {cpu / (args.rounds * args.partitions) * 1e6:.2f} "
        f"I/O-thread CPU us per batch ({args.rounds} rounds)"
    )


if __name__ == "__main__":
    main()
