"""One SparkSession per process: a second Table with other settings gets the running session, and is
told what it could not change (a notebook opening several tables must not lose settings silently)."""

from __future__ import annotations

import warnings

import pytest

from forensics.runtime.spark import get_spark


def test_runtime_setting_reaches_the_running_session(spark):
    assert get_spark() is spark
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about: a runtime setting is applied
        s = get_spark(conf={"spark.sql.session.timeZone": "Asia/Tokyo"})
    try:
        assert s is spark
        assert spark.conf.get("spark.sql.session.timeZone") == "Asia/Tokyo"
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_static_setting_is_named_not_silently_dropped(spark):
    with pytest.warns(RuntimeWarning, match=r"spark\.driver\.maxResultSize|spark\.sql\.extensions") as rec:
        get_spark(conf={"spark.sql.extensions": "x.Y"})
    msg = str(rec[0].message)
    assert "spark.sql.extensions" in msg and "x.Y" not in msg  # the name, never the value


def test_other_master_is_reported(spark):
    with pytest.warns(RuntimeWarning, match="already runs in this process"):
        assert get_spark(master="spark://127.0.0.1:1") is spark
