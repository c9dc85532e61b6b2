"""Catalog names resolved through the Spark session's catalog (a caller's session, here the test's
real local one): the table registered with its location answers as the same table by path."""

from __future__ import annotations

import io
import uuid
from contextlib import redirect_stderr, redirect_stdout

import pytest

from forensics import NotADeltaTable, Table
from forensics.cli.main import main


@pytest.fixture
def registered(spark, sample_logs):
    """`dfx_<id>.orders` in the session catalog, an external table at the quickstart table's path."""
    db = f"dfx_{uuid.uuid4().hex[:8]}"
    path = str(sample_logs / "quickstart" / "table")
    spark.sql("CREATE DATABASE " + db)  # a name built here, not read from a log
    spark.catalog.createTable(f"{db}.orders", path=path, source="parquet")
    yield f"{db}.orders", path


def test_a_catalog_name_reads_the_table_it_names(registered, spark):
    name, path = registered
    by_name = Table(name, spark=spark)
    assert by_name.catalog_name == name
    assert by_name.location == path
    assert by_name.history().equals(Table(path).history())
    assert Table(f"spark_catalog.{name}", spark=spark).location == path


def test_an_unknown_name_is_not_a_table(spark):
    with pytest.raises(NotADeltaTable, match="no such table in the Spark session's catalog"):
        Table(f"dfx_{uuid.uuid4().hex[:8]}.nope", spark=spark)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["history", f"dfx_{uuid.uuid4().hex[:8]}.nope"])
    assert code == 3 and len(err.getvalue().strip().splitlines()) == 1 and "Traceback" not in err.getvalue()
