"""Every concurrency window run through the rule profile of the engine that wrote it, and hypothetical
transactions (what-if). Uses sets/ and rules/; evidence/ and analysis/ build on it.
"""
