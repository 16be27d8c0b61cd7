"""The evaluator: letters, tECS, Algorithm 1, enumeration, engine."""
