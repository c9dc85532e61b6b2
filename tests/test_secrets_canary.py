"""Secrets never echo: a canary secret, passed every way a credential reaches delta-forensics,
never appears in stdout, stderr, the cache directory (the tool's own files, Spark's log), the
working directory or an export, whole or as any 8-character piece.

Every run is a real `delta-forensics` process (argparse, start-up and error paths as users meet
them), against a table that is missing, a store on a closed port, moto with enforced IAM and
a wrong secret, and (success paths) a small sample table served by moto. Runs go four at a
time: most of them fail before Spark starts.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import servers
from servers import closed_port, upload_dir

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).with_name("delta-forensics")
QUICKSTART = REPO / "sample_logs" / "quickstart" / "table"
ERROR_TEXT = REPO / "sample_logs" / "a-merge-partitions" / "error.txt"
CANARY = "cnry" + secrets.token_hex(14)  # fresh each run: nothing on disk can hold it by chance
PIECES = tuple(CANARY[i : i + 8] for i in range(len(CANARY) - 7))
KEY_ID = "AKIDCANARYTEST000001"
SAS = f"sv=2022-11-02&sp=rl&sig={CANARY}"
BUCKET = "canary"

s3_server = servers.s3_server


def leaks(data: str | bytes) -> list[str]:
    """The canary's 8-character pieces found in `data`."""
    text = data.decode("latin-1") if isinstance(data, bytes) else data
    return [p for p in PIECES if p in text]


def test_leak_check_can_fail():
    assert leaks(f"error: got {CANARY[5:19]}…") and leaks(CANARY.encode()) and not leaks("error: *** (not shown)")


def test_one_definition_of_what_is_secret(tmp_path):
    """Storage, the CLI and the runtime share forensics.safe's rule; what it masks, in-process."""
    from forensics import safe
    from forensics.storage import location, options

    assert options.is_secret_key is safe.is_secret_key and location.scrub_uri_credentials is safe.scrub_uri_credentials
    assert [k for k in ("AWS_SECRET_ACCESS_KEY", "sas_token", "spark.hadoop.fs.s3a.secret.key", "fs.azure.account.key.a.dfs",
                        "AWS_REGION", "spark.sql.shuffle.partitions") if safe.is_secret_key(k)] == [
        "AWS_SECRET_ACCESS_KEY", "sas_token", "spark.hadoop.fs.s3a.secret.key", "fs.azure.account.key.a.dfs"]
    assert safe.scrub_uri_credentials(f"sc://h:1/;token={CANARY};user_id=me s3a://K:{CANARY}@b/t x?sv=1&sig={CANARY}") == (
        "sc://h:1/;token=***;user_id=me s3a://***@b/t x?sv=***&sig=***")
    config = tmp_path / "c.toml"
    config.write_text(f'[profiles.p]\nspark_conf = {{ "spark.hadoop.fs.s3a.secret.key" = "{CANARY}", "spark.x" = "1" }}\n')
    prof = options.load_profile("p", path=config)
    assert not leaks(repr(prof)) and "'spark.x': '1'" in repr(prof)
    # remembered by loading the profile: a library's message quoting part of it is scrubbed
    assert safe.scrub(f"bad value {CANARY[:20]}… for spark.x=1 (true)") == "bad value ***… for spark.x=1 (true)"
    safe.remember_settings({"AWS_SKIP_SIGNATURE": "true", "AWS_WEB_IDENTITY_TOKEN_FILE": "/tmp/token"})
    assert safe.scrub("true /tmp/token") == "true /tmp/token"  # switches and file locations are not secrets


# --------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------


@dataclass
class Run:
    argv: list[str]
    rc: int
    out: str
    err: str


@dataclass
class Sandbox:
    """One cache directory, working directory and config file shared by a group of runs."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def cwd(self) -> Path:
        return self.root / "cwd"

    def run(self, argv: list[str], env: dict[str, str] | None = None, timeout: float = 180) -> Run:
        proc = subprocess.run([str(BIN), *argv], env={**self.env, **(env or {})}, cwd=self.cwd, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return Run(argv, proc.returncode, proc.stdout, proc.stderr)

    def run_all(self, jobs: list[tuple[list[str], dict[str, str]]]) -> list[Run]:
        with ThreadPoolExecutor(max_workers=4) as pool:
            return list(pool.map(lambda job: self.run(*job), jobs))

    def assert_clean(self, runs: list[Run]) -> None:
        """No canary piece in any run's output nor in any file under the cache or working directory."""
        found = [(" ".join(r.argv), where, leaks(text)) for r in runs for where, text in (("stdout", r.out), ("stderr", r.err))]
        for base in (self.cache, self.cwd):
            for p in sorted(base.rglob("*")):
                if p.is_file():
                    found.append((str(p), "file", leaks(p.read_bytes())))
        assert [f for f in found if f[2]] == []


@pytest.fixture
def sandbox(tmp_path) -> Sandbox:
    box = Sandbox(tmp_path)
    box.cache.mkdir()
    box.cwd.mkdir()
    config = tmp_path / "config.toml"
    config.write_text(
        "[profiles.leaky]\n"
        f'storage_options = {{ AWS_ACCESS_KEY_ID = "{KEY_ID}", AWS_SECRET_ACCESS_KEY = "{CANARY}" }}\n'
        f'spark_conf = {{ "spark.hadoop.fs.s3a.secret.key" = "{CANARY}" }}\n'
        f'writer_conf = {{ "spark.hadoop.fs.azure.sas.token" = "{CANARY}" }}\n'
    )
    (tmp_path / "aws-credentials").write_text(f"[canary]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {CANARY}\n")
    keep = {k: v for k, v in os.environ.items() if not k.upper().startswith(("AWS_", "AZURE_", "GOOGLE_")) and "PROXY" not in k.upper()}
    box.env = {**keep, "DELTA_FORENSICS_CACHE_DIR": str(box.cache), "DELTA_FORENSICS_CONFIG": str(config),
               "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws-credentials"), "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
               "COLUMNS": "160"}
    return box


def command(name: str, table: str, out: Path) -> list[str]:
    """`name` with its required arguments, reading `table`."""
    extra = {
        "explain": ["1"],
        "whatif": ["--read-version", "1", "--operation", "DELETE"],
        "export": ["--format", "json", "-o", str(out)],
        "explain-error": ["--error-file", str(ERROR_TEXT)],
    }.get(name, [])
    return [name, table, *extra]


TABLE_COMMANDS = ("history", "snapshot", "stats", "sets", "replay", "evidence", "explain", "whatif", "export", "explain-error")


# --------------------------------------------------------------------------------------
# Usage errors: malformed or mistyped, the value must not come back in the message
# --------------------------------------------------------------------------------------

MALFORMED = {
    "colon-storage-option": ["--storage-option", f"AWS_SECRET_ACCESS_KEY:{CANARY}"],
    "colon-conf": ["--conf", f"spark.hadoop.fs.s3a.secret.key:{CANARY}"],
    "colon-writer-conf": ["--writer-conf", f"spark.hadoop.fs.azure.sas.token:{CANARY}"],
    "bare-value": ["--storage-option", CANARY],
    "empty-key": ["--conf", f"={CANARY}"],
    "space-not-equals": ["--storage-option", "AWS_SECRET_ACCESS_KEY", CANARY],
    "mistyped-flag": ["--storage-opton", f"AWS_SECRET_ACCESS_KEY={CANARY}"],
    "mistyped-flag-json": ["--json", f"--storage-opton=AWS_SECRET_ACCESS_KEY={CANARY}"],
    "ambiguous-abbreviation": [f"--st=AWS_SECRET_ACCESS_KEY={CANARY}"],
    "value-on-a-switch": [f"--json={CANARY}"],
}


ALL_COMMANDS = (*TABLE_COMMANDS, "tui", "schema", "conformance")


@pytest.mark.parametrize("way", sorted(MALFORMED))
def test_usage_errors_name_the_flag_never_the_value(way, sandbox):
    """Each malformed way through two commands (rotating: together they cover every command)
    and before any command (the top-level parser's error)."""
    bad = MALFORMED[way]
    table = str(QUICKSTART)
    i = sorted(MALFORMED).index(way)
    names = [ALL_COMMANDS[(2 * i + k) % len(ALL_COMMANDS)] for k in range(2)]
    args = {"schema": ["schema", "history"], "conformance": ["conformance"]}
    jobs = [(args.get(name) or command(name, table, sandbox.cwd / "out.json")) + bad for name in names]
    jobs.append([*bad, "history", table])
    runs = sandbox.run_all([(job, {}) for job in jobs])
    for r in runs:
        assert r.rc == 2, (r.argv, r.rc, r.err)
        assert "error:" in r.err and r.out == "", (r.argv, r.out, r.err)
    sandbox.assert_clean(runs)
    said = "\n".join(r.err for r in runs)
    if way.startswith("colon-"):
        assert f"{bad[0]} takes KEY=VALUE, got {bad[1].split(':')[0]} followed by ':' (the value is not shown)" in said
    if way.startswith("mistyped-flag"):
        assert "unrecognized option --storage-opton" in said and "did you mean --storage-option?" in said


def test_argparse_never_repeats_a_value(sandbox):
    """An invalid choice, a value of the wrong type, an unknown command: named, not quoted."""
    table = str(QUICKSTART)
    runs = sandbox.run_all([
        (["replay", table, "--isolation-level", CANARY], {}),
        (["history", table, "--from", CANARY], {}),
        ([f"AWS_SECRET_ACCESS_KEY={CANARY}", "history", table], {}),
        (["histroy", table, "--storage-option", f"AWS_SECRET_ACCESS_KEY={CANARY}"], {}),
    ])
    assert [r.rc for r in runs] == [2, 2, 2, 2]
    assert "argument --isolation-level: invalid choice (choose from 'Serializable'" in runs[0].err
    assert "argument --from: invalid int value\n" in runs[1].err
    assert "argument COMMAND: invalid choice (choose from" in runs[2].err
    assert runs[3].err.rstrip().endswith("did you mean history?")
    sandbox.assert_clean(runs)


# --------------------------------------------------------------------------------------
# Store errors: well-formed secrets against a missing table, a closed port, a wrong secret
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    name: str
    table: str  # s3://... or a local path
    options: tuple[str, ...] = ()  # storage options every run against it needs (no credential)

    def uri_with_userinfo(self) -> str:
        if self.table.startswith("s3://"):
            return self.table.replace("s3://", f"s3a://{KEY_ID}:{CANARY}@", 1)
        return f"file://{KEY_ID}:{CANARY}@somehost{self.table}"


def ways(target: Target) -> dict[str, tuple[str, list[str], dict[str, str]]]:
    """way -> (table, extra arguments, extra environment), each carrying the canary once."""
    t, opts = target.table, [a for o in target.options for a in ("--storage-option", o)]
    other = ["--storage-option", f"AWS_ACCESS_KEY_ID={KEY_ID}", "--storage-option", "AWS_SECRET_ACCESS_KEY=not-the-canary-secret"]
    return {
        "storage-option": (t, [*opts, "--storage-option", f"AWS_ACCESS_KEY_ID={KEY_ID}", "--storage-option", f"AWS_SECRET_ACCESS_KEY={CANARY}"], {}),
        "storage-option-mistyped-key": (t, [*opts, "--storage-option", f"AWS_SECRET_ACESS_KEY={CANARY}"], {}),
        "storage-option-sas": (t, [*opts, "--storage-option", f"AZURE_STORAGE_SAS_TOKEN={SAS}"], {}),
        "uri-userinfo": (target.uri_with_userinfo(), opts, {}),
        "uri-query": (f"{t}?{SAS}", opts, {}),
        "config-profile": (t, [*opts, "--profile", "leaky"], {}),
        "aws-credentials-file": (t, opts, {"AWS_PROFILE": "canary"}),
        "environment": (t, opts, {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": CANARY, "AZURE_STORAGE_SAS_TOKEN": SAS}),
        "conf": (t, [*opts, *other, "--conf", f"spark.hadoop.fs.s3a.secret.key={CANARY}"], {}),
        "writer-conf": (t, [*opts, *other, "--writer-conf", f"spark.hadoop.fs.s3a.secret.key={CANARY}"], {}),
        "remote-token": (t, [*opts, *other, "--remote", f"sc://127.0.0.1:{closed_port()}/;token={CANARY}"], {}),
    }


WAYS = sorted(ways(Target("x", "/x")))


def _store_errors(sandbox: Sandbox, target: Target, expected_rc: set[int]) -> None:
    """Every way against `target`, each through two commands (rotating, so every command meets
    every target), all failing with an expected code and no canary anywhere."""
    jobs = []
    for i, (way, (table, extra, env)) in enumerate(sorted(ways(target).items())):
        for k in range(2):
            name = TABLE_COMMANDS[(2 * i + k) % len(TABLE_COMMANDS)]
            jobs.append((command(name, table, sandbox.cwd / f"{way}-{name}.json") + extra, env))
    runs = sandbox.run_all(jobs)
    for r in runs:
        assert r.rc in expected_rc, (r.argv, r.rc, r.err)
        assert r.err.strip(), r.argv
    sandbox.assert_clean(runs)


def test_missing_table(sandbox, tmp_path):
    # 3: not a Delta table; 2: usage (an unknown option, a file: URI naming a host)
    _store_errors(sandbox, Target("missing", str(tmp_path / "no-such-table")), {2, 3})


def test_store_on_a_closed_port(sandbox):
    target = Target("closed", f"s3://{BUCKET}/t", (f"AWS_ENDPOINT_URL=http://127.0.0.1:{closed_port()}", "AWS_ALLOW_HTTP=true",
                                                  "AWS_REGION=us-east-1"))
    _store_errors(sandbox, target, {2, 9, 10})  # 9: store unreachable; 10: no credentials at all (a mistyped key)


@pytest.fixture(scope="module")
def moto_table(s3_server) -> str:
    """The quickstart sample table in a moto bucket (read with any key while IAM is not enforced)."""
    s3_server.create_bucket(BUCKET)
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    upload_dir(s3_server.store(BUCKET), QUICKSTART, prefix)
    return f"s3://{BUCKET}/{prefix}"


def test_store_denies_the_wrong_secret(sandbox, s3_server, moto_table):
    target = Target("denied", moto_table, (f"AWS_ENDPOINT_URL={s3_server.endpoint}", "AWS_ALLOW_HTTP=true", "AWS_REGION=us-east-1"))
    with s3_server.enforced_auth():
        _store_errors(sandbox, target, {2, 10})  # 10: access denied


# --------------------------------------------------------------------------------------
# Success: a real read (Spark starts with the secret in its settings), every command, every export
# --------------------------------------------------------------------------------------


def test_successful_runs_and_exports(sandbox, s3_server, moto_table):
    store = (f"AWS_ENDPOINT_URL={s3_server.endpoint}", "AWS_ALLOW_HTTP=true", "AWS_REGION=us-east-1")
    target = Target("moto", moto_table, store)
    all_ways = ways(target)
    spark_secrets = ["--conf", f"spark.hadoop.fs.s3a.secret.key={CANARY}", "--writer-conf", f"spark.hadoop.fs.s3a.secret.key={CANARY}"]
    env = {"AWS_SECRET_ACCESS_KEY": CANARY, "AZURE_STORAGE_SAS_TOKEN": SAS}  # present, outranked by explicit options

    def env_for(way: str) -> dict[str, str]:  # an environment key would outrank the ~/.aws profile's
        return all_ways[way][2] if way == "aws-credentials-file" else {**env, **all_ways[way][2]}
    table, extra, _ = all_ways["storage-option"]
    first = sandbox.run(["history", table, *extra, *spark_secrets], env)  # cold cache: Spark reads the log
    assert first.rc == 0, first.err
    assert (sandbox.cache / "spark.log").is_file()
    reading = ("uri-userinfo", "config-profile", "storage-option", "uri-query", "aws-credentials-file")
    jobs = []
    for i, name in enumerate(n for n in TABLE_COMMANDS if n not in ("snapshot", "export")):
        way = reading[i % len(reading)]
        table, extra, _ = all_ways[way]
        if way == "uri-query":  # a SAS in an S3 URI carries no S3 key: give one
            extra = [*extra, "--storage-option", f"AWS_ACCESS_KEY_ID={KEY_ID}", "--storage-option", f"AWS_SECRET_ACCESS_KEY={CANARY}"]
        jobs.append((command(name, table, Path()) + extra + spark_secrets, env_for(way)))
    formats = ("json", "csv", "parquet", "chrome-trace", "mermaid", "html")
    for i, fmt in enumerate(formats):
        table, extra, _ = all_ways[reading[i % 3]]
        out = sandbox.cwd / f"timeline.{fmt}"
        redact = ["--redact"] if fmt == "html" else []
        jobs.append((["export", table, "--format", fmt, "-o", str(out), *redact, *extra, *spark_secrets], env_for(reading[i % 3])))
    runs = [first, *sandbox.run_all(jobs)]
    for r in runs:
        assert r.rc == 0, (r.argv, r.rc, r.err)
    exported = sorted(p.name for p in sandbox.cwd.iterdir())
    assert {f"timeline.{f}" for f in formats} <= set(exported), exported
    sandbox.assert_clean(runs)


def test_spark_connect_token_is_not_echoed(sandbox, tmp_path):
    """A `--remote` URL's token, when the Spark Connect session cannot start (a fresh read must
    start it: --no-cache), and an unparseable URL whose error text quotes the token."""
    local = tmp_path / "table"
    shutil.copytree(QUICKSTART, local)
    runs = sandbox.run_all([
        (["history", str(local), "--no-cache", "--remote", f"sc:///;token={CANARY}"], {}),
        (["history", str(local), "--no-cache", "--remote", f"sc://127.0.0.1:{closed_port()}/;token={CANARY};bad"], {}),
    ])
    for r in runs:
        assert r.rc == 6, (r.argv, r.rc, r.err)  # 6: Spark
        assert "cannot reach Spark Connect at sc://" in r.err and ";token=***" in r.err, r.err
    sandbox.assert_clean(runs)


def test_debug_log_level_shows_no_secret(sandbox, s3_server, moto_table):
    """`--log-level debug` (our lines on stderr, Spark at INFO in spark.log) with the canary in the
    URI, the options, the Spark settings and the environment: the log says what happened, never it."""
    store = (f"AWS_ENDPOINT_URL={s3_server.endpoint}", "AWS_ALLOW_HTTP=true", "AWS_REGION=us-east-1")
    all_ways = ways(Target("moto", moto_table, store))
    spark_secrets = ["--conf", f"spark.hadoop.fs.s3a.secret.key={CANARY}", "--writer-conf", f"spark.hadoop.fs.s3a.secret.key={CANARY}"]
    env = {"AWS_SECRET_ACCESS_KEY": CANARY, "AZURE_STORAGE_SAS_TOKEN": SAS}
    runs = []
    for way in ("storage-option", "uri-userinfo", "config-profile"):
        table, extra, way_env = all_ways[way]
        runs.append(sandbox.run(["--log-level", "debug", "replay", table, *extra, *spark_secrets, "--no-cache"], {**env, **way_env}))
    for r in runs:
        assert r.rc == 0, (r.argv, r.rc, r.err)
        assert "delta-forensics: debug: " in r.err and re.search(rf"delta-forensics: info: mirrored s3a?://{BUCKET}/t-\w+: 22 objects listed", r.err), r.err
        assert "delta-forensics: info: starting a Spark session" in r.err and "spark.hadoop.fs.s3a.secret.key" in r.err, r.err
    assert " INFO " in (sandbox.cache / "spark.log").read_text(errors="replace")  # Spark's INFO lines were written
    sandbox.assert_clean(runs)
