"""Importing kafkaline and making a Producer loads no heavy module it does not need yet.

Start-up matters to short programs (a CLI call, a Spark task's worker): the modules below are
loaded where they are used (awaiting a future, checksumming a batch, the Arrow path, a TLS or
SASL connection, a "did you mean" message), not by ``import kafkaline``. Checked in a fresh
interpreter's ``sys.modules``, not by timing (docs/performance.md, "Start-up", has the timings).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

# What a plain producer must not pay for at start-up, and who would use it.
HEAVY_MODULES = {
    "asyncio": "only code awaiting a future",
    "crc32c": "checksums, at the first batch (its __init__ reads importlib.metadata)",
    "importlib.metadata": "the pyarrow version check of send_arrow()",
    "numpy": "send_batch()/send_arrow() columnar paths",
    "pyarrow": "send_arrow()",
    "pandas": "nothing in the producer",
    "hypothesis": "tests only",
    "ssl": "TLS connections (security_protocol SSL or SASL_SSL), or an ssl_context given",
    "hmac": "SASL SCRAM, and comparing two Secrets (it loads OpenSSL's hashes)",
    "hashlib": "SASL SCRAM",
    "_hashlib": "SASL SCRAM (OpenSSL's hashes)",
    "secrets": "SASL nonces",
    "kafkaline.net.sasl": "SASL connections (security_protocol SASL_PLAINTEXT or SASL_SSL)",
    "difflib": "the 'did you mean' hint of a mistyped setting or serializer name",
    "json": "JsonSerializer",
    "cramjam": "compressed batches (lz4, zstd, snappy), at the first one",
    "kafkaline.protocol.api.fetch": "reading records back (the CLI consumer, tests)",
    "kafkaline.protocol.api.list_offsets": "the CLI and tests",
    "kafkaline.protocol.api.create_topics": "creating topics (the CLI, tests)",
    "kafkaline.protocol.api.sasl_handshake": "SASL connections",
    "kafkaline.protocol.api.sasl_authenticate": "SASL connections",
    "kafkaline.protocol.api.add_partitions_to_txn": "a transactional producer's first send",
    "kafkaline.protocol.api.add_offsets_to_txn": "send_offsets_to_transaction()",
    "kafkaline.protocol.api.txn_offset_commit": "send_offsets_to_transaction()",
    "kafkaline.protocol.api.end_txn": "committing or aborting a transaction",
    "kafkaline.producer.transactions.handover": "completing a handed-over transaction",
    "kafkaline.record.reader": "reading batches back (splitting a batch too large, the CLI)",
    "kafkaline.record.control": "reading transaction markers",
    "kafkaline.producer.bulk.sender": "send_batch()/send_arrow(), at the first call",
    "kafkaline.producer.bulk.lists": "send_batch() over lists",
    "kafkaline.producer.bulk.arrow": "send_arrow()",
    "kafkaline.producer.bulk.columnar_path": "the columnar bulk encoder",
}

# Prints one module name a line: json would load json.
_PROGRAM = """
import sys
import kafkaline
from kafkaline import Producer
producer = Producer(bootstrap_servers="127.0.0.1:9")
producer.close()
print("\\n".join(sorted(sys.modules)))
"""


@pytest.fixture(scope="module")
def loaded_modules() -> set[str]:
    completed = subprocess.run(
        [sys.executable, "-c", _PROGRAM],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(completed.stdout.split())


@pytest.mark.parametrize("module", sorted(HEAVY_MODULES))
def test_import_and_a_producer_do_not_load(module: str, loaded_modules: set[str]) -> None:
    assert module not in loaded_modules, f"{module} is loaded; it is for {HEAVY_MODULES[module]}"


def test_the_producer_module_was_loaded(loaded_modules: set[str]) -> None:
    # The check above means something only if the program really imported the producer.
    assert "kafkaline.producer.producer" in loaded_modules
