"""Scenarios from the engines' own test suites, run through the reader and the rules.

The scenario set ships inside this package (`scenarios/<engine>.json`, read with
importlib.resources), so conformance runs on a fresh clone. The files are in our own format,
documented in `scenarios/README.md` and enforced by `cases.validate_document`: one entry per
scenario with an id, a title, the source test (repo, commit, file, test name), the engine,
isolation levels, partition columns, schema, table properties and protocol, setup files, the
current transaction (operation, read predicates/files/whole-table flag/app ids, actions), the
winning commits and the expected outcome. Delta actions keep Delta's on-disk form.

`cases` loads, validates and materializes scenarios; `runner.run_conformance` replays them.
"""
