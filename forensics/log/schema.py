"""The table schema at a version: logical names, Spark types, physical (column-mapped) names.

Predicates in commitInfo use logical names; partitionValues and file statistics are keyed
by physical names when column mapping is on (`delta.columnMapping.mode` = name or id).
This module is the one place that translates between the two.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from forensics.model import Metadata


@dataclass(frozen=True)
class Column:
    name: str  # logical name, as in the schema
    type: str  # Spark simple type name: "string", "int", "long", "date", "decimal(10,2)", ... ; "struct" etc. for nested
    nullable: bool = True
    physical_name: str | None = None  # delta.columnMapping.physicalName, when mapped
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def stored_name(self) -> str:
        """The key used in partitionValues and stats."""
        return self.physical_name or self.name


def _type_name(t: Any) -> str:
    if isinstance(t, str):
        return t
    if isinstance(t, dict):
        return str(t.get("type", "unknown"))
    return "unknown"


@dataclass(frozen=True)
class TableSchema:
    columns: tuple[Column, ...]
    partition_columns: tuple[str, ...]  # logical names, in partition-schema order
    column_mapping_mode: str = "none"

    # ---- construction -------------------------------------------------------------

    @classmethod
    def from_metadata(cls, metadata: Metadata | None) -> "TableSchema":
        if metadata is None:
            return cls(columns=(), partition_columns=())
        return cls.from_schema_string(
            metadata.schema_string,
            metadata.partition_columns,
            metadata.configuration.get("delta.columnMapping.mode", "none"),
        )

    @classmethod
    def from_schema_string(
        cls,
        schema_string: str | None,
        partition_columns: tuple[str, ...] | list[str] = (),
        column_mapping_mode: str = "none",
    ) -> "TableSchema":
        """The schema a metaData's schemaString describes; one parse per distinct text (replay
        asks once per window, a million-commit log has a handful of schemas)."""
        args = (schema_string, tuple(partition_columns or ()), column_mapping_mode or "none")
        try:
            return _from_schema_string(*args)
        except TypeError:  # an unhashable value where a log should have a name: parsed, not cached
            return cls._parse_schema_string(*args)

    @classmethod
    def _parse_schema_string(cls, schema_string: str | None, partition_columns: tuple[str, ...],
                             column_mapping_mode: str) -> "TableSchema":
        cols: list[Column] = []
        if schema_string:
            try:
                parsed = json.loads(schema_string)
            except (ValueError, TypeError):
                parsed = None
            if isinstance(parsed, dict):
                for f in parsed.get("fields", []) or []:
                    if not isinstance(f, dict) or "name" not in f:
                        continue
                    md = f.get("metadata") or {}
                    if not isinstance(md, dict):
                        md = {}
                    phys = md.get("delta.columnMapping.physicalName")
                    cols.append(
                        Column(
                            name=str(f["name"]),
                            type=_type_name(f.get("type")),
                            nullable=bool(f.get("nullable", True)),
                            physical_name=str(phys) if phys and column_mapping_mode != "none" else None,
                            metadata=md,
                        )
                    )
        return cls(columns=tuple(cols), partition_columns=partition_columns, column_mapping_mode=column_mapping_mode)

    @classmethod
    def from_simple(cls, types: dict[str, str], partition_columns: list[str] | tuple[str, ...] = ()) -> "TableSchema":
        """Build from {"col": "int", ...} (what-if input, scenario schemas)."""
        return cls(
            columns=tuple(Column(name=k, type=v) for k, v in types.items()),
            partition_columns=tuple(partition_columns),
        )

    # ---- lookups ---------------------------------------------------------------------

    def column(self, name: str) -> Column | None:
        """Case-insensitive lookup by logical name (Spark's default resolution)."""
        low = name.lower()
        for c in self.columns:
            if c.name.lower() == low:
                return c
        return None

    def is_partition_column(self, name: str) -> bool:
        low = name.lower()
        return any(p.lower() == low for p in self.partition_columns)

    def type_of(self, name: str) -> str | None:
        c = self.column(name)
        return c.type if c else None

    def physical_name(self, name: str) -> str:
        c = self.column(name)
        return c.stored_name if c else name

    def partition_schema(self) -> list[Column]:
        out = []
        for p in self.partition_columns:
            c = self.column(p)
            out.append(c if c else Column(name=p, type="string"))
        return out

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


@lru_cache(maxsize=256)
def _from_schema_string(schema_string: str | None, partition_columns: tuple[str, ...], column_mapping_mode: str) -> TableSchema:
    return TableSchema._parse_schema_string(schema_string, partition_columns, column_mapping_mode)
