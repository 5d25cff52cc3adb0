"""The prefix-trie planner: every needed node forwarded exactly once, rows within budget."""

from __future__ import annotations

import random

from negbench.core.trie import ChainStep, FreeStep, RowsStep, TokenTrie, plan_forward


def random_trie(seed: int, n: int = 60):
    rng = random.Random(seed)
    trie = TokenTrie()
    base = [rng.randrange(50) for _ in range(rng.randint(0, 40))]
    for _ in range(n):
        seq = base[: rng.randint(0, len(base))] + [
            rng.randrange(50) for _ in range(rng.randint(1, 30))
        ]
        path = trie.insert(seq)
        for node in path[rng.randint(0, len(path) - 1) :]:
            trie.ask(node, rng.randrange(50))
    return trie


def test_each_needed_node_forwarded_once_with_its_ancestors_before():
    for seed in range(30):
        trie = random_trie(seed)
        for budget in (5, 16, 64, 4096):
            plan = plan_forward(trie, budget)
            seen: list[int] = []
            live_prefix_nodes: dict[int, list[int]] = {}
            for step in plan.steps:
                if isinstance(step, FreeStep):
                    live_prefix_nodes.pop(step.prefix)
                    continue
                prefix_nodes = live_prefix_nodes.get(step.prefix, []) if step.prefix else []
                rows = [step.row] if isinstance(step, ChainStep) else step.rows
                for row in rows:
                    assert len(row.nodes) <= budget
                    for i, (n, p) in enumerate(zip(row.nodes, row.parents)):
                        parent = trie.parent[n]
                        if p >= 0:
                            assert row.nodes[p] == parent and p < i
                        else:  # attaches to the prefix end (or is a trie root)
                            assert parent == (prefix_nodes[-1] if prefix_nodes else -1)
                        assert (
                            row.positions[i]
                            == trie.depth[n]
                            == len(prefix_nodes)
                            + (0 if p < 0 else row.positions[p] - len(prefix_nodes) + 1)
                        )
                    seen.extend(row.nodes)
                if isinstance(step, ChainStep):
                    live_prefix_nodes[step.new_prefix] = prefix_nodes + step.row.nodes
            need = trie.needed()
            assert sorted(seen) == [n for n in range(len(trie)) if need[n]]
            assert plan.forwarded_tokens == plan.unique_tokens == sum(need)
            assert not live_prefix_nodes


def test_unqueried_leaves_are_pruned():
    trie = TokenTrie()
    path = trie.insert([1, 2, 3, 4])
    trie.ask(path[1], 3)
    assert trie.needed() == [True, True, False, False]


def test_namespaces_do_not_merge_and_pack_false_gives_one_row_each():
    trie = TokenTrie()
    for i in range(3):
        p = trie.insert([1, 2, 3], namespace=i)
        trie.ask(p[-1], 9)
    assert len(trie) == 9
    (step,) = plan_forward(trie, 100, pack=False).steps
    assert isinstance(step, RowsStep) and len(step.rows) == 3
