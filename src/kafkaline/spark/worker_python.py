"""Does the Python that Spark starts for its workers have kafkaline?

Spark starts worker processes with ``spark.pyspark.python``, else ``PYSPARK_PYTHON``, else
``python3`` from PATH, not with the driver's interpreter. Outside an activated virtualenv that
is often a Python without kafkaline, and then every task (and the data source's planning)
fails with ``No module named 'kafkaline'``. With a local master the workers run on this
machine, so :func:`check_worker_python` can ask that interpreter before anything is planned.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

from kafkaline.errors import ConfigError

#: How long the worker interpreter may take to import kafkaline.
_IMPORT_TIMEOUT_S = 60.0


def worker_python(spark: Any) -> str:
    """The interpreter Spark starts for Python workers (as configured, maybe a bare name)."""
    configured: str | None = spark.sparkContext.getConf().get("spark.pyspark.python")
    if configured:
        return configured
    python_exec: str = getattr(spark.sparkContext, "pythonExec", None) or os.environ.get(
        "PYSPARK_PYTHON", "python3"
    )
    return python_exec


def check_worker_python(spark: Any) -> None:
    """Raise ConfigError, saying what to set, when the workers of a local master would run a
    Python that cannot import kafkaline. Other masters' workers run elsewhere: not checked."""
    master: str = spark.sparkContext.master
    if not master.startswith("local"):
        return
    configured = worker_python(spark)
    found = shutil.which(configured)
    # Not resolved through symlinks: a virtualenv's python links to the base interpreter,
    # which does not see the virtualenv's packages.
    if found is not None and os.path.abspath(found) == os.path.abspath(sys.executable):
        return
    if found is not None:
        try:
            done = subprocess.run(
                [found, "-c", "import kafkaline"],
                capture_output=True,
                timeout=_IMPORT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            pass
        else:
            if done.returncode == 0:
                return
    where = f"{configured!r} ({found})" if found is not None else f"{configured!r} (not found)"
    raise ConfigError(
        f"Spark's Python workers would run {where}, which cannot import kafkaline: set "
        f"PYSPARK_PYTHON={sys.executable} before the SparkSession starts, or the Spark "
        f"setting spark.pyspark.python"
    )
