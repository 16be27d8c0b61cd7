"""Complex event automata: construction from CEL and lazy I/O-determinisation."""
