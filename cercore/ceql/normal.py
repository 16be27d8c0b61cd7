"""Normalised CEL: what analysis hands to the automaton compiler.

Variables are gone: every filter has been pushed down onto the atoms whose positions it
constrains (CORE's filters are "for all" over a variable's set of positions, so the push-down is
exact), leaving each atom with a *guard* over the query's atomic predicates.
"""

from __future__ import annotations

from dataclasses import dataclass

from cercore.predicates import Guard


@dataclass(frozen=True)
class NAtom:
    """One event whose type is in ``types`` (type ids) and whose attributes satisfy ``guard``.
    ``id`` indexes the query's atom table (it is the automaton's transition label)."""

    id: int
    types: frozenset[int]
    guard: Guard


@dataclass(frozen=True)
class NSeq:
    left: NFormula
    right: NFormula


@dataclass(frozen=True)
class NOr:
    left: NFormula
    right: NFormula


@dataclass(frozen=True)
class NIter:
    body: NFormula


NFormula = NAtom | NSeq | NOr | NIter


def atoms_of(f: NFormula) -> list[NAtom]:
    """Atoms in left-to-right order."""
    if isinstance(f, NAtom):
        return [f]
    if isinstance(f, NIter):
        return atoms_of(f.body)
    return atoms_of(f.left) + atoms_of(f.right)


def format_normal(f: NFormula, atom_text) -> str:
    """Readable text; ``atom_text(atom)`` renders one atom."""
    if isinstance(f, NAtom):
        return atom_text(f)
    if isinstance(f, NIter):
        return f"({format_normal(f.body, atom_text)})+"
    op = " ; " if isinstance(f, NSeq) else " OR "
    return f"({format_normal(f.left, atom_text)}{op}{format_normal(f.right, atom_text)})"
