"""The Spark session, the JVM class-data archive, GC tuning and where the tool keeps its own files.
Nothing here knows about Delta; every other stage may use it.
"""
