"""CEQL front end: grammar, parser, AST and semantic analysis."""
