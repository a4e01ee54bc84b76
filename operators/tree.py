"""The one walk over parameter trees: nested dicts, lists and tuples with leaves at the bottom.

An operator's parameters are a tree: a flat dict for an attention (``wq``,
``bq``, ..., ``tau``), a dict holding a list of per-block dicts for a host,
tuples of floats for FIR taps.  Every tier walks that tree -- to cast it to a
dtype, to override a drawn value, to name each scalar for a solver, to
generate bad inputs, to read a counterexample back -- and every such walk
goes through this module, so they all agree on what a container is and how
a place in the tree is named.

* Containers are ``dict``, ``list`` and ``tuple``; everything else is a leaf:
  tensors, floats, ints, strings and numpy arrays -- the symbolic tier's
  object arrays of sympy / z3 terms included, so the same walk serves it.
* A place is a *path*: the tuple of keys (dict) and indices (list, tuple)
  from the root, ``("blocks", 0, "tau")``; :func:`path_name` writes it as
  ``blocks[0].tau``.
* Nothing is mutated: :func:`map` and :func:`replace` build new containers
  of the same types.

>>> t = {"blocks": [{"tau": 0.5, "taps": (0.25, 0.75)}], "heads": 2}
>>> [path_name(p) for p, _ in leaves(t)]
['blocks[0].tau', 'blocks[0].taps[0]', 'blocks[0].taps[1]', 'heads']
>>> find(t, "tau"), get(t, ("blocks", 0, "taps", 1))
(0.5, 0.75)
>>> replace(t, ("blocks", 0, "tau"), 1.0)["blocks"][0]["tau"]
1.0
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Iterator

from .errors import InvalidArgument

Path = tuple[Hashable, ...]
CONTAINERS = (dict, list, tuple)


def is_container(value) -> bool:
    """A dict, list or tuple: a node the walks descend into (everything else is a leaf)."""
    return isinstance(value, CONTAINERS)


def _children(node) -> Iterator[tuple[Hashable, Any]]:
    return iter(node.items()) if isinstance(node, dict) else enumerate(node)


def _rebuild(node, items: list):
    """A container of ``node``'s type holding ``items`` ([(key, value)] in order)."""
    if isinstance(node, dict):
        return {k: v for k, v in items}
    return type(node)(v for _, v in items)


def leaves(tree, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """(path, leaf) for every leaf, depth first in the tree's own order (an empty container has none)."""
    if is_container(tree):
        for k, v in _children(tree):
            yield from leaves(v, path + (k,))
    else:
        yield path, tree


def map(fn: Callable[[Any], Any], tree, *, sequence: type | None = None):  # noqa: A001 - the tree's map
    """``tree`` with every leaf replaced by ``fn(leaf)``; containers keep their type.

    ``sequence=list`` turns every list and tuple into a list (a JSON-able copy).

    >>> map(lambda v: v * 2, {"a": [1, (2, 3)]})
    {'a': [2, (4, 6)]}
    """
    return map_with_path(lambda _, v: fn(v), tree, sequence=sequence)


def map_with_path(fn: Callable[[Path, Any], Any], tree, *, sequence: type | None = None, path: Path = ()):
    """``tree`` with every leaf replaced by ``fn(path, leaf)`` (the leaf's path from the root)."""
    if not is_container(tree):
        return fn(path, tree)
    items = [(k, map_with_path(fn, v, sequence=sequence, path=path + (k,))) for k, v in _children(tree)]
    if sequence is not None and not isinstance(tree, dict):
        return sequence(v for _, v in items)
    return _rebuild(tree, items)



# Tags of the containers :func:`tagged` writes (a JSON document keeps no tuple and no key order of its own).
TAGS = {dict: "dict", list: "list", tuple: "tuple"}


def tagged(tree, leaf: Callable[[Any], Any]):
    """``tree`` as JSON that keeps every container's kind: a dict as {"dict": [[key, value], ...]}, a list or
    tuple as {"list": [...]} / {"tuple": [...]}, every leaf as ``leaf(value)`` (the inverse: :func:`untagged`)."""
    if not is_container(tree):
        return leaf(tree)
    tag = TAGS[dict if isinstance(tree, dict) else list if isinstance(tree, list) else tuple]
    items = [[k, tagged(v, leaf)] if tag == "dict" else tagged(v, leaf) for k, v in _children(tree)]
    return {tag: items}


def untagged(value, leaf: Callable[[Any], Any]):
    """The inverse of :func:`tagged`: a {"dict" | "list" | "tuple": ...} node becomes that container, and
    anything else is a leaf, given to ``leaf``."""
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in TAGS.values():
        tag, items = next(iter(value.items()))
        if tag == "dict":
            return {k: untagged(v, leaf) for k, v in items}
        return (list if tag == "list" else tuple)(untagged(v, leaf) for v in items)
    return leaf(value)


def map_nodes(fn: Callable[[Any], Any], tree, match: Callable[[Any], bool]):
    """``tree`` with every subtree for which ``match(node)`` holds replaced by ``fn(node)``.

    Top-down: a matched subtree is handed to ``fn`` whole and not searched
    further; a leaf is never offered to ``match``.

    >>> map_nodes(lambda d: {**d, "a": 0}, [{"a": 1}, {"b": 2}], lambda d: isinstance(d, dict) and "a" in d)
    [{'a': 0}, {'b': 2}]
    """
    if not is_container(tree):
        return tree
    if match(tree):
        return fn(tree)
    return _rebuild(tree, [(k, map_nodes(fn, v, match)) for k, v in _children(tree)])


def keys(tree) -> set:
    """Every dict key at every nesting level.

    >>> sorted(keys({"blocks": [{"tau": 1.0}], "heads": 2}))
    ['blocks', 'heads', 'tau']
    """
    out: set = set()
    if is_container(tree):
        if isinstance(tree, dict):
            out |= set(tree)
        for _, v in _children(tree):
            out |= keys(v)
    return out


def find(tree, key: Hashable, default=None):
    """The value of dict key ``key`` nearest the root, or ``default`` if no dict has it.

    A dict's own keys are looked at before its children (a host's top-level
    ``heads`` wins over its blocks'); children are searched in order, and a
    child whose search gives None is passed over.

    >>> find({"blocks": [{"eps": 1.0}, {"tau": 2.0}]}, "tau"), find([{}], "tau", 0.0)
    (2.0, 0.0)
    """
    if isinstance(tree, dict) and key in tree:
        return tree[key]
    if is_container(tree):
        for _, v in _children(tree):
            found = find(v, key)
            if found is not None:
                return found
    return default


def get(tree, path: Path):
    """The subtree or leaf at ``path``; an :class:`InvalidArgument` naming the path if there is none."""
    node = tree
    for depth, k in enumerate(path):
        if not _has(node, k):
            raise InvalidArgument(f"{path_name(path[:depth + 1])}: no such entry in the parameter tree "
                                  f"(at {path_name(path[:depth]) or 'the root'}: {_describe(node)})")
        node = node[k]
    return node


def replace(tree, path: Path, new):
    """A copy of ``tree`` with the entry at ``path`` replaced by ``new`` (the path must exist)."""
    get(tree, path)        # names the missing part of the path, before anything is built
    return _replace(tree, tuple(path), new)


def _replace(node, path: Path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    return _rebuild(node, [(k, _replace(v, rest, new) if k == head else v) for k, v in _children(node)])


def _has(node, k) -> bool:
    if isinstance(node, dict):
        return k in node
    if isinstance(node, (list, tuple)):
        return isinstance(k, int) and not isinstance(k, bool) and 0 <= k < len(node)
    return False


def _describe(node) -> str:
    if isinstance(node, dict):
        return f"keys {sorted(str(k) for k in node)}"
    if isinstance(node, (list, tuple)):
        return f"a {type(node).__name__} of length {len(node)}"
    return f"a leaf of type {type(node).__name__}"


def path_name(path: Path, root: str = "") -> str:
    """``path`` written as an argument name: ``blocks[0].tau`` (``root`` prefixes it, e.g. ``params``).

    >>> path_name(("blocks", 0, "tau")), path_name((1,), "taps")
    ('blocks[0].tau', 'taps[1]')
    """
    out = root
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out


def dotted(path: Path, prefix: str = "") -> str:
    """``path`` as a symbol name: ``prefix`` + the keys joined by dots (``blocks.0.tau``)."""
    return prefix + ".".join(str(k) for k in path)
