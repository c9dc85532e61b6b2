"""`engine start|status|stop`: the warm engine, a resident local process that keeps the Spark
session between commands (docs/engine.md). Commands start it by themselves; these
subcommands start it ahead of time (with its Spark session), show it, and stop it."""

from __future__ import annotations

import argparse
import sys

from forensics.cli.common import add_utc_argument


def add_parser(sub) -> None:
    p = sub.add_parser("engine", help="start, show or stop the warm engine that keeps Spark running between commands",
                       description=__doc__)
    add_utc_argument(p)  # also before the action: `engine --utc status`
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    start = actions.add_parser("start", help="start the engine for this environment and its Spark session (or show the running one)")
    start.add_argument("--idle", metavar="DURATION",
                       help="stop after this long without a command: 90s, 20m, 1h (default 20m; also DELTA_FORENSICS_ENGINE_IDLE)")
    start.add_argument("--no-warm", action="store_true", help="do not start Spark until a command needs it")
    status = actions.add_parser("status", help="show the engine for this environment (pid, socket, idle time, versions)")
    stop = actions.add_parser("stop", help="stop the engine for this environment")
    for q in (status, stop):
        q.add_argument("--all", action="store_true", help="every engine under the cache directory, whatever its settings")
    for q in (start, status, stop):
        q.add_argument("--utc", action="store_true", default=argparse.SUPPRESS,
                       help="show times in UTC (default: local time with its offset; also DELTA_FORENSICS_UTC=1)")
        q.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from forensics import engine_start, engine_status, engine_stop
    from forensics.times import fmt_time, utc_default

    utc = args.utc or utc_default()
    if args.action == "start":
        _show([engine_start(args.idle, warm=not args.no_warm)], utc, fmt_time)
    elif args.action == "status":
        _show(engine_status(args.all), utc, fmt_time)
    else:
        stopped = engine_stop(args.all)
        for s in stopped:
            sys.stdout.write(f"stopped engine pid {s.pid} ({s.directory})\n")
        if not stopped:
            sys.stdout.write("no engine was running\n")
    return 0


def _show(statuses, utc: bool, fmt_time) -> None:
    for s in statuses:
        if not s.running:
            sys.stdout.write(f"no engine running for {s.directory}\n")
            continue
        lines = [
            f"engine pid {s.pid}: {'busy' if s.busy else 'idle'}, {s.served} command(s) answered "
            f"({s.after_answer} cache write(s) after the answer), "
            f"Spark {'running' if s.spark_running else 'not started yet'}",
            f"  started   {fmt_time(s.started_ms, utc)}; stops after {_duration(s.idle_timeout_s)} without a command "
            f"(idle for {_duration(s.idle_for_s)})",
            f"  socket    {s.socket}",
            f"  directory {s.directory} (token, pid, engine.log)",
            f"  runs      {s.tool}; {s.spark}; Java {s.java}",
            f"  settings  {s.settings}",
            f"  JIT       {_jit(s.jit)}",
        ]
        sys.stdout.write("\n".join(lines) + "\n")


def _jit(jit: dict | None) -> str:
    """The warm-up's state in words (forensics/engine/warmup.py)."""
    if not jit:
        return "?"
    rounds = jit.get("rounds") or []
    reads = f"{len(rounds)} warm-up read(s)" + (f", the last {rounds[-1]:.1f} s" if rounds else "")
    if snaps := jit.get("snapshotRounds") or []:
        reads += f"; {len(snaps)} large snapshot(s), the last {snaps[-1]:.1f} s"
    return {"pending": "warm-up not started yet", "off": "no warm-up (DELTA_FORENSICS_ENGINE_WARMUP=off)",
            "running": f"warming up: {reads}", "done": f"warmed: {reads}",
            "interrupted": f"warm-up ended by a command after {reads}",
            "failed": f"warm-up failed ({jit.get('why') or '?'}) after {reads}"}.get(str(jit.get("state")), "?")


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
