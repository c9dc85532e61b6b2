"""Scenarios from the engines' own test suites (and, for closed-source Databricks, the rows of its
documentation's conflict tables), answered by the code users run.

The scenario set ships inside this package (`scenarios/<engine>.json`, read with
importlib.resources), so conformance runs on a fresh clone. The files are in our own format,
documented in `scenarios/README.md` and enforced by `cases.validate_document`: one entry per
scenario with an id, a title, the source test (repo, commit, file, test name; for Databricks the
documentation page, table and row), the engine and, for Databricks, its runtime,
isolation levels, partition columns, schema, table properties and protocol, setup files, the
current transaction (operation, what the test read, actions, the commit it writes), the winning
commits, the expected outcome, the `whatif` question for the same transaction, and the reasons a
path cannot state it (`not_expressible`) or is known to differ (`known_difference`). Delta
actions keep Delta's on-disk form.

`cases` loads and validates scenarios and writes each as the log its engine would leave (setup,
winners, then the current transaction as its commit, through `forensics.synth`);
`runner.run_conformance` opens that log with `forensics.Table` and answers it with
`Table.explain` and `Table.whatif`. Nothing here rebuilds a read set or calls the rules directly.
"""
