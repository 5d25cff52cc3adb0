"""Prefix trie over token sequences, and the plan that forwards each unique prefix once.

Every scored request becomes a path in one trie; a *query* at a node asks for the next-token
log-probabilities of some target tokens there.  The planner cuts the trie into

* **rows**: whole subtrees of at most ``max_row_tokens`` tokens, several packed into one sequence
  with a tree-shaped attention mask (a token sees only its ancestors), and
* **chains**: unbranched runs of a subtree too large for one row; they are forwarded once and
  their key/value cache becomes the shared prefix of everything below them.

So each trie node is forwarded exactly once, whatever the batch size.  Leaves that carry no query
are pruned (the last token of a continuation is never an input, as in lm-eval).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator


class TokenTrie:
    """A token trie stored in flat lists (parents are always created before their children)."""

    def __init__(self) -> None:
        self.token: list[int] = []
        self.parent: list[int] = []
        self.depth: list[int] = []
        self.children: list[dict[int, int]] = []
        self.roots: dict[tuple[int, int], int] = {}
        self.targets: list[set[int] | None] = []

    def __len__(self) -> int:
        return len(self.token)

    def insert(self, tokens: list[int], namespace: int = 0) -> list[int]:
        """Insert a path; returns its node ids. Paths in different namespaces never merge."""
        path: list[int] = []
        parent = -1
        for d, t in enumerate(tokens):
            table = self.roots if parent < 0 else self.children[parent]
            key = (namespace, t) if parent < 0 else t
            node = table.get(key)
            if node is None:
                node = len(self.token)
                self.token.append(t)
                self.parent.append(parent)
                self.depth.append(d)
                self.children.append({})
                self.targets.append(None)
                table[key] = node
            path.append(node)
            parent = node
        return path

    def ask(self, node: int, target: int) -> None:
        """Request log P(target | path to node)."""
        s = self.targets[node]
        if s is None:
            s = self.targets[node] = set()
        s.add(target)

    def needed(self) -> list[bool]:
        """Nodes that must be forwarded: those with a query or a needed descendant."""
        need = [t is not None for t in self.targets]
        for n in range(len(self.token) - 1, -1, -1):
            if need[n] and self.parent[n] >= 0:
                need[self.parent[n]] = True
        return need


@dataclass
class Row:
    """One packed sequence: trie nodes in parent-before-child order."""

    nodes: list[int]
    parents: list[int]        # index within the row, or -1 when the parent is the prefix end
    positions: list[int]
    tokens: list[int]


@dataclass
class RowsStep:
    prefix: int | None        # prefix id whose KV every row continues, or None
    prefix_len: int
    rows: list[Row]


@dataclass
class ChainStep:
    prefix: int | None
    prefix_len: int
    row: Row
    new_prefix: int


@dataclass
class FreeStep:
    prefix: int


@dataclass
class Plan:
    steps: list = field(default_factory=list)
    forwarded_tokens: int = 0
    unique_tokens: int = 0


def plan_forward(trie: TokenTrie, max_row_tokens: int = 2048, pack: bool = True) -> Plan:
    """Cut the needed part of ``trie`` into rows and chains (see module docstring).

    ``pack=False`` gives every small subtree a row of its own (no tree-mask packing).
    """
    need = trie.needed()
    kids: list[list[int]] = [[c for c in ch.values() if need[c]] for ch in trie.children]
    size = [1 if need[n] else 0 for n in range(len(trie))]
    for n in range(len(trie) - 1, -1, -1):
        p = trie.parent[n]
        if p >= 0 and need[n]:
            size[p] += size[n]
    roots = [n for n in trie.roots.values() if need[n]]
    plan = Plan(unique_tokens=sum(need))
    counter = [0]

    def subtree_nodes(u: int) -> Iterator[int]:
        stack = [u]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(reversed(kids[n]))

    def make_row(subtrees: list[int]) -> Row:
        nodes: list[int] = []
        where: dict[int, int] = {}
        parents: list[int] = []
        for u in subtrees:
            for n in subtree_nodes(u):
                where[n] = len(nodes)
                nodes.append(n)
                parents.append(where.get(trie.parent[n], -1) if n != u else -1)
        return Row(nodes, parents, [trie.depth[n] for n in nodes], [trie.token[n] for n in nodes])

    def walk(frontier: list[int], prefix: int | None, prefix_len: int) -> None:
        small = sorted((u for u in frontier if size[u] <= max_row_tokens), key=lambda u: -size[u])
        big = [u for u in frontier if size[u] > max_row_tokens]
        bins: list[tuple[int, list[int]]] = []           # first-fit decreasing
        for u in small:
            for i, (used, members) in enumerate(bins if pack else ()):
                if used + size[u] <= max_row_tokens:
                    bins[i] = (used + size[u], members + [u])
                    break
            else:
                bins.append((size[u], [u]))
        if bins:
            rows = [make_row(members) for _, members in bins]
            plan.forwarded_tokens += sum(len(r.nodes) for r in rows)
            plan.steps.append(RowsStep(prefix, prefix_len, rows))
        for u in big:
            chain = [u]
            while (len(kids[chain[-1]]) == 1 and size[kids[chain[-1]][0]] > max_row_tokens
                   and len(chain) < max_row_tokens):
                chain.append(kids[chain[-1]][0])
            row = Row(chain, [-1] + list(range(len(chain) - 1)),
                      [trie.depth[n] for n in chain], [trie.token[n] for n in chain])
            counter[0] += 1
            new_id = counter[0]
            plan.forwarded_tokens += len(chain)
            plan.steps.append(ChainStep(prefix, prefix_len, row, new_id))
            walk(kids[chain[-1]], new_id, prefix_len + len(chain))
            plan.steps.append(FreeStep(new_id))

    walk(roots, None, 0)
    return plan
