"""`delta-forensics completion bash|zsh|fish` and the global `--log-level`, run as a user would:
the installed entry point prints each script, each shell parses it, and bash and fish (where
installed) complete real command lines with it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).with_name("delta-forensics")
QUICKSTART = REPO / "sample_logs" / "quickstart" / "table"


def cli(*argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN), *argv], capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, **kw)


@pytest.fixture(scope="module")
def scripts(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("completion")
    paths = {}
    for shell in ("bash", "zsh", "fish"):
        proc = cli("completion", shell)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        paths[shell] = out / f"delta-forensics.{shell}"
        paths[shell].write_text(proc.stdout)
    return paths


def _commands() -> set[str]:
    from forensics.cli.main import command_modules

    return {n.replace("_", "-") for n in command_modules()}


def test_every_script_names_every_command(scripts):
    for shell, path in scripts.items():
        text = path.read_text()
        missing = [c for c in _commands() if c not in text]
        assert missing == [], (shell, missing)
        assert "--log-level" in text and "--isolation-level" in text, shell  # a global flag and a command's flag


def test_unknown_shell_is_a_usage_error():
    proc = cli("completion", "tcsh")
    assert proc.returncode == 2 and "invalid choice (choose from 'bash', 'zsh', 'fish')" in proc.stderr


def _bash_complete(script: Path, words: list[str]) -> list[str]:
    """COMPREPLY for the last word of `words`, from the completion function bash would call."""
    quoted = " ".join(f"'{w}'" for w in words)
    program = f"source '{script}'; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _shtab_delta_forensics; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    proc = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_bash_parses_and_completes(scripts):
    assert subprocess.run(["bash", "-n", str(scripts["bash"])], capture_output=True, timeout=30).returncode == 0
    assert _bash_complete(scripts["bash"], ["delta-forensics", "expl"]) == ["explain", "explain-error"]
    assert "--log-level" in _bash_complete(scripts["bash"], ["delta-forensics", "replay", "t", "--log"])
    assert _bash_complete(scripts["bash"], ["delta-forensics", "--log-level", "de"]) == ["debug"]
    # TABLE completes directories
    assert _bash_complete(scripts["bash"], ["delta-forensics", "history", str(REPO / "sample_logs" / "quicks")]) == [
        str(REPO / "sample_logs" / "quickstart")]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_parses_and_defines_the_completion(scripts):
    proc = subprocess.run(["zsh", "-n", str(scripts["zsh"])], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    program = f"autoload -U compinit; compinit -u -D; source '{scripts['zsh']}' 2>/dev/null; whence -w _shtab_delta_forensics"
    proc = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True, timeout=30)
    assert "_shtab_delta_forensics: function" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_parses_and_completes(scripts, tmp_path):
    assert subprocess.run(["fish", "-n", str(scripts["fish"])], capture_output=True, timeout=30).returncode == 0
    program = (f"source '{scripts['fish']}'; complete -C 'delta-forensics hist'; echo ---; complete -C 'delta-forensics --log-level '"
               f"; echo ---; complete -C 'delta-forensics history {REPO / 'sample_logs' / 'quicks'}'")
    proc = subprocess.run(["fish", "--no-config", "-c", program], capture_output=True, text=True, timeout=30,
                          env={"PATH": f"{BIN.parent}:/usr/bin:/bin", "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    commands, levels, tables = (part.strip().splitlines() for part in proc.stdout.split("---"))
    assert [c.split("\t")[0] for c in commands] == ["history"]
    assert [c.split("\t")[0] for c in levels] == ["debug", "info", "warning", "error"]
    assert [c.split("\t")[0] for c in tables] == [f"{REPO / 'sample_logs' / 'quickstart'}/"]


# --------------------------------------------------------------------------------------
# --log-level: before or after the command; what each level shows
# --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_log_level_lines_on_stderr_only_when_asked(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DELTA_FORENSICS_CACHE_DIR": str(tmp_path / "cache"),
           "DELTA_FORENSICS_ENGINE": "off", "DELTA_FORENSICS_DELTA": "off"}  # this process's own work; no jar download
    debug = cli("--log-level", "debug", "history", str(QUICKSTART), "--json", env=env)  # a cold cache: Spark parses the log
    info = cli("history", str(QUICKSTART), "--json", "--log-level", "info", env=env)  # the cache answers
    quiet = cli("history", str(QUICKSTART), "--json", env=env)
    for proc in (debug, info, quiet):
        assert proc.returncode == 0, proc.stderr
    assert quiet.stdout == debug.stdout == info.stdout  # logging never touches the document
    assert quiet.stderr == ""
    assert "delta-forensics: debug: delta-forensics 0.1.0 on Python" in debug.stderr
    assert "delta-forensics: info: starting a Spark session (master local[2], Java " in debug.stderr
    assert "delta-forensics: info: parsing 20 commit file(s)" in debug.stderr
    assert "delta-forensics: debug:" not in info.stderr
    assert "delta-forensics: info: 20 commit(s) already parsed, from the cache " in info.stderr, info.stderr
    bad = cli("--log-level", "trace", "history", str(QUICKSTART), env=env)
    assert bad.returncode == 2 and "argument --log-level: invalid choice (choose from 'debug', 'info', 'warning', 'error')" in bad.stderr


def test_library_log_lines_are_scrubbed_for_the_application(caplog):
    """In a notebook nothing calls set_log_level: our records reach the application's handlers, a
    secret the tool has seen already masked."""
    import logging

    from forensics import safe
    from forensics.runtime.logs import logger

    secret = "cnryLOGGING" + "7f3a9c21d4e8b605"
    safe.remember_secret(secret)
    with caplog.at_level(logging.INFO, logger="forensics"):
        logger.info("mirrored s3a://AKID:%s@bucket/t with %s", secret, f"sig={secret}")
    assert len(caplog.records) == 1
    said = caplog.records[0].getMessage()
    assert secret not in said and secret[:12] not in said and "bucket/t" in said
