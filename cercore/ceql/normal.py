"""Normalised CEL: what analysis hands to the automaton compiler.

Variables are gone: every filter has been pushed down onto the atoms whose positions it
constrains (CORE's filters are "for all" over a variable's set of positions, so the push-down is
exact), leaving each atom with a *guard* over the query's atomic predicates.
"""

from __future__ import annotations

from dataclasses import dataclass

from cercore.ceql.guards import Guard


@dataclass(frozen=True)
class NAtom:
    """One event whose type is in ``types`` (type ids) and whose attributes satisfy ``guard``.
    ``id`` indexes the query's atom table (it is the automaton's transition label)."""

    id: int
    types: frozenset[int]
    guard: Guard
    # the variables an event read by this atom is bound to: its event type's name and every
    # enclosing ``AS`` (projection and ``ce.bindings`` use them)
    variables: frozenset[str] = frozenset()
    # ``S>E``: the stream ids a tagged event must come from (None: any stream)
    streams: frozenset[int] | None = None


@dataclass(frozen=True)
class NNot:
    """One event that satisfies none of ``branches`` (CORE's ``NOT(...)``): it is consumed
    but not part of the complex event. ``id`` is its own transition label."""

    id: int
    branches: tuple[NAtom, ...]


@dataclass(frozen=True)
class NSeq:
    """``φ1 ; φ2``; with ``gap`` (``φ1 ; ABSENT(ψ) ; φ2``), the events between them must all
    satisfy ``gap`` (no ψ event: the NNot over ψ's atoms), which consumes none of them."""

    left: NFormula
    right: NFormula
    gap: NNot | None = None


@dataclass(frozen=True)
class NContig:
    """``φ1 : φ2``: φ2 starts at the event right after φ1's last one."""

    left: NFormula
    right: NFormula


@dataclass(frozen=True)
class NOr:
    left: NFormula
    right: NFormula


@dataclass(frozen=True)
class NIter:
    """``φ+`` (gaps allowed between iterations) or ``φ:+`` (``contiguous``)."""

    body: NFormula
    contiguous: bool = False


NFormula = NAtom | NNot | NSeq | NContig | NOr | NIter


def atoms_of(f: NFormula) -> list[NAtom]:
    """Atoms in left-to-right order."""
    if isinstance(f, NAtom):
        return [f]
    if isinstance(f, NNot):
        return list(f.branches)
    if isinstance(f, NIter):
        return atoms_of(f.body)
    return atoms_of(f.left) + atoms_of(f.right)


def has_contiguity(f: NFormula) -> bool:
    """Whether ``f`` uses ``:`` or ``:+`` anywhere."""
    if isinstance(f, NContig) or (isinstance(f, NIter) and f.contiguous):
        return True
    if isinstance(f, (NAtom, NNot)):
        return False
    if isinstance(f, NIter):
        return has_contiguity(f.body)
    return has_contiguity(f.left) or has_contiguity(f.right)


def format_normal(f: NFormula, atom_text) -> str:
    """Readable text; ``atom_text(atom)`` renders one atom."""
    if isinstance(f, NAtom):
        return atom_text(f)
    if isinstance(f, NNot):
        return "NOT(" + " OR ".join(atom_text(b) for b in f.branches) + ")"
    if isinstance(f, NIter):
        return f"({format_normal(f.body, atom_text)}){':+' if f.contiguous else '+'}"
    if isinstance(f, NSeq) and f.gap is not None:
        absent = " OR ".join(atom_text(b) for b in f.gap.branches)
        return (f"({format_normal(f.left, atom_text)} ; ABSENT({absent}) ; "
                f"{format_normal(f.right, atom_text)})")
    op = {NSeq: " ; ", NContig: " : ", NOr: " OR "}[type(f)]
    return f"({format_normal(f.left, atom_text)}{op}{format_normal(f.right, atom_text)})"
