"""Writers of Delta logs in delta-spark's exact on-disk format (bench logs, sample incidents).

delta-spark's JVM jars cannot be downloaded here, so logs that no available engine can write
are assembled in the form delta-spark writes them; every such log says so (sample_logs/README.md).
"""

from forensics.synth.generate import SynthConfig, SynthResult, synthesize
from forensics.synth.sparkformat import DEFAULT_ENGINE, SparkLogWriter, TableDirNotEmpty, TableState

__all__ = [
    "DEFAULT_ENGINE",
    "SparkLogWriter",
    "SynthConfig",
    "SynthResult",
    "TableDirNotEmpty",
    "TableState",
    "synthesize",
]
