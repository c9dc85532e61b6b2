"""Answers built on the replay and the evidence: explain, counterfactuals, stats, the timeline, advice.
The top of the flow below the front object (forensics.Table).
"""
