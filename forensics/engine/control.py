"""`delta-forensics engine start|status|stop`: the engine for this environment's settings, or all
engines under the cache directory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forensics.engine import client
from forensics.engine import place as places
from forensics.engine.key import current_key
from forensics.errors import EngineUnavailable, ExitCode, ForensicsError


@dataclass(frozen=True)
class EngineStatus:
    """One engine as `engine status` shows it; `running` False: none answers at `directory`."""

    directory: str
    running: bool
    pid: int | None = None
    started_ms: int | None = None
    served: int = 0
    busy: int = 0
    idle_timeout_s: float | None = None
    idle_for_s: float | None = None
    spark_running: bool = False
    socket: str | None = None
    tool: str | None = None
    spark: str | None = None
    java: str | None = None
    settings: str | None = None
    jit: dict[str, Any] | None = None  # the JIT warm-up (forensics/engine/warmup.py): state, each round's seconds
    after_answer: int = 0  # cache writes finished after their command's answer (forensics/runtime/after_answer.py)

    @classmethod
    def from_info(cls, directory: str, info: dict[str, Any]) -> "EngineStatus":
        """The status a running engine reported (its info file or socket answer)."""
        return cls(directory, True, info.get("pid"), int(info["started"] * 1000) if info.get("started") else None,
                   int(info.get("served", 0)), int(info.get("busy", 0)), info.get("idleSeconds"), info.get("idleFor"),
                   bool(info.get("sparkRunning")), info.get("socket"), info.get("tool"), info.get("spark"),
                   info.get("java"), info.get("settings"), info.get("jit"), int(info.get("afterAnswer", 0)))


def current_place() -> tuple[places.EnginePlace, Any]:
    root = client.cache_dir()
    key = current_key({}, str(root))
    return places.place_for(root, key.digest()), key


def _places(all_engines: bool) -> list[places.EnginePlace]:
    return places.all_places(client.cache_dir()) if all_engines else [current_place()[0]]


def engine_start(idle: str | None = None, *, warm: bool = True) -> EngineStatus:
    """Start the engine for this environment (or find it running) and, with `warm`, its Spark session."""
    try:
        seconds = client.idle_seconds(idle)
    except ValueError as e:
        raise ForensicsError(ExitCode.USAGE, f"--idle: {e}") from None
    place, key = current_place()
    try:
        info = client.start(place, key, seconds)
    except client.StartFailed as e:
        raise ForensicsError(ExitCode(e.code), str(e)) from None
    except (places.PlaceUnsafe, OSError) as e:
        raise EngineUnavailable(f"cannot prepare {place.dir}: {e}") from None
    if warm:
        reply = client.ask(place, client.control_request("warm"))
        if reply.kind == "done":
            client.print_output(reply.output or client.Output())  # the session's start notes, as a command shows them
            if reply.code:
                raise ForensicsError(ExitCode(reply.code), f"the engine runs (pid {info.get('pid')}) but its Spark session "
                                     f"did not start: {reply.why}")
        info = client.status(place).info or info
    return EngineStatus.from_info(str(place.dir), info)


def engine_status(all_engines: bool = False) -> list[EngineStatus]:
    """The engine for this environment (or every engine under the cache directory), running or not."""
    out = []
    for place in _places(all_engines):
        reply = client.status(place)
        out.append(EngineStatus.from_info(str(place.dir), reply.info) if reply.kind == "done" and reply.info
                   else EngineStatus(str(place.dir), False, socket=str(place.socket)))
    return out


def engine_stop(all_engines: bool = False) -> list[EngineStatus]:
    """Stop the engine for this environment (or every engine); those that ran, as they were."""
    out = []
    for place in _places(all_engines):
        info = client.stop(place)
        if info is not None:
            out.append(EngineStatus.from_info(str(place.dir), info))
    return out


