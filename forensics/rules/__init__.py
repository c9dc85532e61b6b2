"""Delta's conflict checker as replayable rule profiles (conflict-rules §5, §9, §10, §11).

Public API:
  profiles:  Profile, PROFILES, get_profile, profile_for_engine_info
  checks:    check_winner, check_window, start_state (CheckState)
  isolation: effective_isolation_level, is_blind_append, delta_rs_isolation_level
  messages:  render_message, MessageInput, partition_hint, conflicting_commit_json
  results:   CheckOutcome, WindowResult
  writer_conf: WriterConf, writer_settings (the writer's session settings, conflict-rules §14)
"""

from forensics.rules.checks import check_window, check_winner
from forensics.rules.isolation import delta_rs_isolation_level, effective_isolation_level, is_blind_append
from forensics.rules.messages import MessageInput, conflicting_commit_json, partition_hint, render_message
from forensics.rules.profiles import PROFILES, Profile, get_profile, profile_for_engine_info
from forensics.rules.results import CheckOutcome, WindowResult
from forensics.rules.state import CheckState, start_state
from forensics.rules.writer_conf import WriterConf, writer_settings

__all__ = [
    "CheckOutcome", "CheckState", "MessageInput", "PROFILES", "Profile", "WindowResult", "check_window",
    "check_winner", "conflicting_commit_json", "delta_rs_isolation_level", "effective_isolation_level",
    "get_profile", "is_blind_append", "partition_hint", "profile_for_engine_info", "render_message", "start_state",
    "WriterConf", "writer_settings",
]
