"""Rewards: one reward per module, each a function of one row and one response."""
