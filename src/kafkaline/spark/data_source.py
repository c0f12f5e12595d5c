"""The ``kafkaline`` Python Data Source: checks options and schema on the driver and picks
the writer (Arrow where this Spark has Arrow writers, rows otherwise)."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamWriter, DataSourceWriter
from pyspark.sql.types import StructType

from kafkaline.spark.exactly_once import ExactlyOnceOptions
from kafkaline.spark.exactly_once_writers import (
    ExactlyOnceRowStreamWriter,
    ExactlyOnceRowWriter,
    check_transactional_properties,
)
from kafkaline.spark.sink_options import SinkOptions
from kafkaline.spark.sink_schema import SinkColumns, SinkSchemaError, check_schema
from kafkaline.spark.writers import KafkalineRowStreamWriter, KafkalineRowWriter

try:
    from kafkaline.spark.arrow_writers import KafkalineArrowStreamWriter, KafkalineArrowWriter
    from kafkaline.spark.exactly_once_arrow_writers import (
        ExactlyOnceArrowStreamWriter,
        ExactlyOnceArrowWriter,
    )

    HAS_ARROW_WRITERS = True
except ImportError:  # pyspark 4.0: no DataSourceArrowWriter; the row writers do the work
    HAS_ARROW_WRITERS = False


class KafkalineDataSource(DataSource):
    """Writes a DataFrame's rows to Kafka: ``df.write.format("kafkaline")`` (batch, append
    only) and ``df.writeStream.format("kafkaline")`` (streaming). Read is not supported."""

    @classmethod
    def name(cls) -> str:
        return "kafkaline"

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        options, columns = self._check(schema, overwrite)
        eos = self._exactly_once(options, streaming=False)
        if eos is not None:
            if HAS_ARROW_WRITERS:
                return ExactlyOnceArrowWriter(options, columns, schema, eos)
            return ExactlyOnceRowWriter(options, columns, schema, eos)
        if HAS_ARROW_WRITERS:
            return KafkalineArrowWriter(options, columns, schema)
        return KafkalineRowWriter(options, columns, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options, columns = self._check(schema, overwrite)
        eos = self._exactly_once(options, streaming=True)
        if eos is not None:
            if HAS_ARROW_WRITERS:
                return ExactlyOnceArrowStreamWriter(options, columns, schema, eos)
            return ExactlyOnceRowStreamWriter(options, columns, schema, eos)
        if HAS_ARROW_WRITERS:
            return KafkalineArrowStreamWriter(options, columns, schema)
        return KafkalineRowStreamWriter(options, columns, schema)

    def _check(self, schema: StructType, overwrite: bool) -> tuple[SinkOptions, SinkColumns]:
        if overwrite:
            raise SinkSchemaError(
                "the kafkaline sink only appends (a Kafka topic cannot be overwritten): use "
                "mode('append')"
            )
        options = SinkOptions.parse(self.options)
        return options, check_schema(schema, options.topic)

    def _exactly_once(self, options: SinkOptions, streaming: bool) -> ExactlyOnceOptions | None:
        # deliveryGuarantee and the options that go with it (exactly_once.py).
        eos = ExactlyOnceOptions.parse(self.options, streaming)
        if eos is not None:
            check_transactional_properties(options)
        return eos
