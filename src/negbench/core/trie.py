"""Prefix trie over token sequences, and the plan that forwards each unique prefix once.

Every scored request becomes a path in one trie; a *query* at a node asks for the next-token
log-probabilities of some target tokens there.  The planner cuts the trie into

* **rows**: whole subtrees of at most ``max_row_tokens`` tokens, several packed into one sequence
  with a tree-shaped attention mask (a token sees only its ancestors), and
* **chains**: unbranched runs of a subtree too large for one row; they are forwarded once and
  their key/value cache becomes the shared prefix of everything below them.

So each trie node is forwarded exactly once, whatever the batch size.  Leaves that carry no query
are pruned (the last token of a continuation is never an input, as in lm-eval).

The engine's trie is array code (:func:`sorted_trie`): token sequences sorted lexicographically
and inserted in that order create their nodes in depth-first pre-order, so node *k*'s subtree is
the index range ``[k, end[k]]``; depths, subtree ends and the node at any (sequence, depth) follow
from the common-prefix lengths of neighbouring sequences, without a Python step per node.  In a
row laid out in pre-order, token *q* may attend key *k* exactly when ``k <= q <= end(k)``: the two
integer vectors (positions and subtree ends) are all a backend needs to build the mask on its
device.  :class:`TokenTrie` (insert one path at a time) remains for small tries and tests; the
planner converts it to the same arrays.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, field

import numpy as np


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
            if parent < 0:
                node = self.roots.get((namespace, t))
            else:
                node = self.children[parent].get(t)
            if node is None:
                node = len(self.token)
                self.token.append(t)
                self.parent.append(parent)
                self.depth.append(d)
                self.children.append({})
                self.targets.append(None)
                if parent < 0:
                    self.roots[(namespace, t)] = node
                else:
                    self.children[parent][t] = node
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

    def arrays(self) -> "TrieArrays":
        """The needed nodes in depth-first pre-order (children in insertion order)."""
        need = self.needed()
        order: list[int] = []
        stack = [n for n in reversed(list(self.roots.values())) if need[n]]
        while stack:
            n = stack.pop()
            order.append(n)
            stack.extend(c for c in reversed(list(self.children[n].values())) if need[c])
        ids = np.asarray(order, dtype=np.int64)
        where = np.full(len(self), -1, dtype=np.int64)
        where[ids] = np.arange(len(ids))
        end = np.arange(len(ids), dtype=np.int64)
        for k in range(len(ids) - 1, -1, -1):  # a node's subtree ends where its last
            p = self.parent[order[k]]  # child's does (children come later)
            if p >= 0:
                end[where[p]] = max(end[where[p]], end[k])
        return TrieArrays(
            np.asarray(self.token, dtype=np.int64)[ids],
            np.asarray(self.depth, dtype=np.int64)[ids],
            end,
            ids,
        )


@dataclass
class TrieArrays:
    """A trie's needed nodes in depth-first pre-order: node ``k``'s subtree is ``[k, end[k]]``,
    its position in the sequence is ``depth[k]``.  ``ids``: the nodes' ids in the trie they came
    from (a :class:`TokenTrie`), or None when the index is the id."""

    token: np.ndarray
    depth: np.ndarray
    end: np.ndarray
    ids: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.token)

    def node_ids(self, idx) -> list[int]:
        idx = np.asarray(idx)
        return (self.ids[idx] if self.ids is not None else idx).tolist()


# -- the trie of sorted sequences, as array code ---------------------------------------------------
def neighbour_lcp(flat: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Common-prefix length of each sequence with the one before it (0 for the first); sequence
    ``i`` is ``flat[offsets[i]:offsets[i + 1]]``.  One vectorised pass over the shorter of each
    pair of neighbours."""
    n = len(offsets) - 1
    out = np.zeros(max(n, 0), dtype=np.int64)
    if n < 2:
        return out
    lens = np.diff(offsets)
    m = np.minimum(lens[:-1], lens[1:])
    live = m > 0
    if not live.any():
        return out
    pair = np.flatnonzero(live) + 1  # sequence i, compared with i - 1
    m = m[live]
    starts = np.zeros(len(m), dtype=np.int64)
    np.cumsum(m[:-1], out=starts[1:])
    total = int(m.sum())
    shift = np.repeat(offsets[pair] - offsets[pair - 1], m)  # from i - 1's token to i's
    at = np.repeat(offsets[pair - 1] - starts, m) + np.arange(total, dtype=np.int64)
    differ = np.append(np.flatnonzero(flat[at] != flat[at + shift]), total)  # + a sentinel
    hit = differ[np.searchsorted(differ, starts)]  # each pair's first difference (or later)
    out[pair] = np.minimum(hit - starts, m)
    return out


def _min_table(a: np.ndarray) -> list[np.ndarray]:
    """Sparse table: ``t[k][j] = min(a[j:j + 2**k])``."""
    t = [a]
    h = 1
    while 2 * h <= len(a):
        prev = t[-1]
        t.append(np.minimum(prev[:-h], prev[h:]))
        h *= 2
    return t


def _first_le(t: list[np.ndarray], start: np.ndarray, d: np.ndarray) -> np.ndarray:
    """For each (start, d): the first index p >= start with a[p] <= d (a ends with a sentinel
    that is <= every d)."""
    p = start.astype(np.int64, copy=True)
    for k in range(len(t) - 1, -1, -1):
        tk = t[k]
        idx = np.minimum(p, len(tk) - 1)
        skip = (p < len(tk)) & (tk[idx] > d)  # all of a[p:p + 2**k] > d
        p += skip.astype(np.int64) << k
    return p


def _last_le(t: list[np.ndarray], start: np.ndarray, d: np.ndarray) -> np.ndarray:
    """For each (start, d): the last index p <= start with a[p] <= d (a[0] <= every d)."""
    p = start.astype(np.int64, copy=True)
    for k in range(len(t) - 1, -1, -1):
        h = 1 << k
        j = p - h + 1
        skip = (j >= 0) & (t[k][np.maximum(j, 0)] > d)  # all of a[p - 2**k + 1:p + 1] > d
        p -= skip.astype(np.int64) << k
    return p


@dataclass
class SortedTrie:
    """The trie of sequences inserted in sorted order (see :func:`sorted_trie`): its arrays, and
    how to find the node at any (sequence, depth)."""

    arrays: TrieArrays
    lcp: np.ndarray  # common prefix with the previous sequence
    base: np.ndarray  # index of each sequence's first new node (n + 1 entries)
    table: list[np.ndarray] = field(repr=False, default_factory=list)

    def node(self, seq: np.ndarray, depth: np.ndarray) -> np.ndarray:
        """Pre-order index of the node at ``depth`` on sequence ``seq``'s path (vectorised): it
        was created by the latest sequence j <= seq that diverged at or above that depth."""
        j = _last_le(self.table, seq, depth)
        return self.base[j] + depth - self.lcp[j]


def sorted_trie(
    flat: np.ndarray, offsets: np.ndarray, share: bool = True, lcp: np.ndarray | None = None
) -> SortedTrie:
    """The trie of sequences ``flat[offsets[i]:offsets[i + 1]]``, which must be sorted
    lexicographically for prefixes to be shared fully (unsorted input still gives a correct
    tree, sharing only what neighbours share).  ``share=False``: no two sequences share a node;
    ``lcp``: the neighbours' common prefixes when the caller has them (:func:`neighbour_lcp`).

    Sequence i adds nodes for its depths ``lcp[i] .. len[i] - 1`` in that order, so nodes come in
    pre-order; the subtree of node (i, d) runs to just before the first later sequence whose
    common prefix with its predecessor is at most d."""
    n = len(offsets) - 1
    lens = np.diff(offsets).astype(np.int64)
    if not share:
        lcp = np.zeros(n, dtype=np.int64)
    elif lcp is None:
        lcp = neighbour_lcp(flat, offsets)
    new = lens - lcp
    base = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(new, out=base[1:])
    total = int(base[-1])
    seq = np.repeat(np.arange(n, dtype=np.int64), new)
    depth = lcp[seq] + np.arange(total, dtype=np.int64) - base[seq]
    token = flat[offsets[seq] + depth].astype(np.int64, copy=False)
    table = _min_table(np.append(lcp, -1))  # sentinel: every subtree ends by then
    end = base[_first_le(table, seq + 1, depth)] - 1
    return SortedTrie(TrieArrays(token, depth, end), lcp, base, table)


def prune(arrays: TrieArrays, queried: np.ndarray) -> tuple[TrieArrays, np.ndarray | None]:
    """Keep the nodes with a query in their subtree; returns the pruned arrays and the old → new
    index map (None when every node is kept, as in every trie the engine builds: each path ends
    with a queried token)."""
    cq = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum(queried, out=cq[1:])
    keep = cq[arrays.end + 1] - cq[:-1] > 0
    if keep.all():
        return arrays, None
    ck = np.cumsum(keep) - 1
    ids = arrays.ids[keep] if arrays.ids is not None else np.flatnonzero(keep)
    return TrieArrays(arrays.token[keep], arrays.depth[keep], ck[arrays.end[keep]], ids), ck


# -- plan ------------------------------------------------------------------------------------------
@dataclass
class Row:
    """One packed sequence: trie nodes in parent-before-child order."""

    nodes: list[int]
    parents: list[int]  # index within the row, or -1 when the parent is the prefix end
    positions: list[int]
    tokens: list[int]


def row_index(arrays: TrieArrays, roots: np.ndarray) -> np.ndarray:
    """Pre-order indices of the nodes of the subtrees rooted at ``roots``, one after another."""
    return ranges(roots, arrays.end[roots] - roots + 1)


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])``, vectorised."""
    first = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    return np.repeat(starts - first, counts) + np.arange(int(counts.sum()), dtype=np.int64)


def _row(arrays: TrieArrays, idx: np.ndarray) -> Row:
    """A :class:`Row` (node ids, in-row parents) of pre-order indices ``idx`` (for callers that
    walk rows node by node; the engine reads the arrays)."""
    parents: list[int] = []
    stack: list[tuple[int, int]] = []  # (end, row index) of open ancestors
    for j, k in enumerate(idx.tolist()):
        while stack and stack[-1][0] < k:
            stack.pop()
        parents.append(stack[-1][1] if stack else -1)
        stack.append((int(arrays.end[k]), j))
    return Row(
        arrays.node_ids(idx), parents, arrays.depth[idx].tolist(), arrays.token[idx].tolist()
    )


@dataclass
class RowsStep:
    """Rows that continue one prefix (or none).  Row ``r`` holds the subtrees rooted at
    ``roots[ptr[r]:ptr[r + 1]]`` (in pre-order), ``lengths[r]`` tokens."""

    prefix: int | None  # prefix id whose KV every row continues, or None
    prefix_len: int
    roots: np.ndarray
    ptr: np.ndarray
    lengths: np.ndarray
    arrays: TrieArrays = field(repr=False)
    branched: np.ndarray = field(repr=False)  # per row: needs a tree mask

    def row_nodes(self, r: int) -> np.ndarray:
        return row_index(self.arrays, self.roots[self.ptr[r] : self.ptr[r + 1]])

    @property
    def rows(self) -> list[Row]:
        return [_row(self.arrays, self.row_nodes(r)) for r in range(len(self.lengths))]


@dataclass
class ChainStep:
    """An unbranched run of nodes ``first .. last`` forwarded once; its KV becomes prefix
    ``new_prefix``."""

    prefix: int | None
    prefix_len: int
    first: int
    last: int
    new_prefix: int
    arrays: TrieArrays = field(repr=False)

    @property
    def row(self) -> Row:
        return _row(self.arrays, np.arange(self.first, self.last + 1))


@dataclass
class FreeStep:
    prefix: int


@dataclass
class Plan:
    steps: list[RowsStep | ChainStep | FreeStep] = field(default_factory=list)
    forwarded_tokens: int = 0
    unique_tokens: int = 0
    max_row_tokens: int = 0
    cost: float = 0.0  # the engine's cost model's estimate (Engine._plan_cost)


def plan_forward(
    trie: TokenTrie | TrieArrays, max_row_tokens: int = 2048, pack: bool = True
) -> Plan:
    """Cut the needed part of ``trie`` into rows and chains (see module docstring).

    Subtrees that fit a row are packed best-fit decreasing (``pack=False``: one row each); a
    larger subtree is forwarded as a chain down its unbranched top (at most a row long, and only
    while what lies below still needs more than a row), whose KV the planner then continues below
    it.  Everything is index arithmetic on the pre-order arrays; the only Python loops run over
    rows, chains and the subtrees being packed, never over tokens."""
    arrays = trie.arrays() if isinstance(trie, TokenTrie) else trie
    R = int(max_row_tokens)
    N = len(arrays)
    plan = Plan(unique_tokens=N, max_row_tokens=R)
    if not N:
        return plan
    k = np.arange(N, dtype=np.int64)
    end, depth = arrays.end, arrays.depth
    size = end - k + 1
    single = (end > k) & (np.append(end[1:], -1) == end)  # exactly one child: k + 1
    stop = np.where(single, N, k)
    chain_stop = np.minimum.accumulate(stop[::-1])[::-1]  # first node at or after k that
    counter = 0  # is not single-child
    work: list[tuple] = [("walk", np.flatnonzero(depth == 0), None, 0)]
    while work:  # depth-first, as a recursion would: a chain, then everything
        item = work.pop()  # below it, then its prefix freed, then the next chain
        if item[0] == "free":
            plan.steps.append(FreeStep(item[1]))
        elif item[0] == "walk":
            _, frontier, prefix, plen = item
            sz = size[frontier]
            small = frontier[sz <= R]
            if len(small):
                roots, ptr, lengths = _pack(small, size[small], R, pack)
                plan.forwarded_tokens += int(lengths.sum())
                # a row of one subtree that is a single path attends causally: no mask
                branched = (np.diff(ptr) > 1) | (chain_stop[roots[ptr[:-1]]] < end[roots[ptr[:-1]]])
                plan.steps.append(RowsStep(prefix, plen, roots, ptr, lengths, arrays, branched))
            work.extend(("chain", u, prefix, plen) for u in reversed(frontier[sz > R].tolist()))
        else:
            _, u, prefix, plen = item
            last = u + max(0, min(int(chain_stop[u]) - u, int(size[u]) - R - 1, R - 1))
            counter += 1
            plan.steps.append(ChainStep(prefix, plen, u, last, counter, arrays))
            plan.forwarded_tokens += last - u + 1
            lo, hi = last + 1, int(end[last]) + 1
            kids = np.flatnonzero(depth[lo:hi] == depth[last] + 1) + lo
            work.append(("free", counter))
            work.append(("walk", kids, counter, int(depth[last]) + 1))
    return plan


def _pack(roots: np.ndarray, sizes: np.ndarray, R: int, pack: bool):
    """Rows of subtrees (each at most ``R`` tokens): best-fit decreasing, each row's subtrees
    in pre-order.  Returns (roots in row order, row pointers, row lengths)."""
    if not pack:
        return roots, np.arange(len(roots) + 1, dtype=np.int64), sizes.astype(np.int64)
    order = np.argsort(-sizes, kind="stable")
    scale = len(roots) + 1
    frees: list[int] = []  # free * scale + bin, sorted
    members: list[list[int]] = []
    used: list[int] = []
    for u, s in zip(roots[order].tolist(), sizes[order].tolist()):
        i = bisect_left(frees, s * scale)
        if i < len(frees):
            key = frees.pop(i)
            b = key % scale
            members[b].append(u)
            used[b] += s
            insort(frees, (key // scale - s) * scale + b)
        else:
            b = len(members)
            members.append([u])
            used.append(s)
            insort(frees, (R - s) * scale + b)
    lengths = np.asarray(used, dtype=np.int64)
    ptr = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum([len(m) for m in members], out=ptr[1:])
    flat = np.fromiter((u for m in members for u in sorted(m)), dtype=np.int64, count=int(ptr[-1]))
    return flat, ptr, lengths
