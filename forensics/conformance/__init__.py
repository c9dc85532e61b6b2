"""Scenarios from the engines' own test suites, run through the reader and the rules.
Ships its scenario data so it runs on a fresh clone.
"""
