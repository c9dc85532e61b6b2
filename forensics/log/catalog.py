"""A catalog name (`schema.table`, `spark_catalog.schema.table`) resolved to the table's location.

Through the Spark session the table is read with (a caller's session, a cluster's, or the local
one): where Delta's JVM classes are present, delta-spark's `DeltaTable.forName(...).detail()`;
otherwise the session catalog's table metadata, reached through Spark's own parser (the name is
parsed, never run as SQL). Unity Catalog's REST API is not used (see docs/stores.md).
"""

from __future__ import annotations

from typing import Any

from forensics.errors import ExitCode, ForensicsError
from forensics.runtime.spark import delta_jvm_available


def resolve_table_name(name: str, spark: Any) -> str:
    """The storage location the session's catalog records for `name`."""
    if delta_jvm_available(spark):
        from delta.tables import DeltaTable  # delta-spark's Python API, usable only with its JVM classes

        try:
            return str(DeltaTable.forName(spark, name).detail().select("location").first()[0])
        except Exception:  # noqa: BLE001 - registered under another provider (or unknown): the location
            pass  # the catalog records is still the table's; asked below, with the catalog's own message
    jss = getattr(spark, "_jsparkSession", None)
    if jss is None:
        raise ForensicsError(ExitCode.USAGE, f"{name}: resolving a catalog name needs a classic SparkSession (Spark Connect "
                             "does not expose table locations here); give the table's storage URI")
    state = jss.sessionState()
    plain = name[len("spark_catalog."):] if name.lower().startswith("spark_catalog.") else name
    try:
        ident = state.sqlParser().parseTableIdentifier(plain)
        return str(state.catalog().getTableMetadata(ident).location().toString())
    except Exception as e:  # noqa: BLE001 - Py4J wraps the catalog's AnalysisException
        raise ForensicsError(ExitCode.NOT_A_TABLE, f"{name}: no such table in the Spark session's catalog ({_first(e)})") from None


def _first(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    line = next((ln for ln in text if "Exception" in ln or "cannot be found" in ln), text[0] if text else type(e).__name__)
    return line.split(": ", 1)[-1][:200]
