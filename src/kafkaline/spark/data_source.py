"""The ``kafkaline`` Python Data Source: checks options and schema on the driver and picks
the writer (Arrow where this Spark has Arrow writers, rows otherwise)."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamWriter, DataSourceWriter
from pyspark.sql.types import StructType

from kafkaline.spark.sink_options import SinkOptions
from kafkaline.spark.sink_schema import SinkColumns, SinkSchemaError, check_schema
from kafkaline.spark.writers import KafkalineRowStreamWriter, KafkalineRowWriter

try:
    from kafkaline.spark.arrow_writers import KafkalineArrowStreamWriter, KafkalineArrowWriter

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
        if HAS_ARROW_WRITERS:
            return KafkalineArrowWriter(options, columns, schema)
        return KafkalineRowWriter(options, columns, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options, columns = self._check(schema, overwrite)
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
