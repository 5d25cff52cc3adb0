"""Attention masks of packed trie rows, built on the model's device from two integer vectors.

A row holds trie nodes in depth-first order; token *q* may attend key *k* of the same row
exactly when ``k <= q <= end[k]`` (``end[k]``: the last row index of *k*'s subtree), and every
token attends the whole shared prefix (a KV cache of ``prefix_len`` keys at positions
``0 .. prefix_len - 1``).  Sliding-window layers (Gemma 3) also need ``pos[q] - pos[k] < window``
on the tokens' positions.  Only positions and subtree ends travel to the device; the masks are
made there:

* :func:`sdpa_masks`: boolean ``[B, 1, L, prefix + L]`` masks for PyTorch's
  ``scaled_dot_product_attention`` (True = attend);
* :func:`flex_masks`: FlexAttention ``BlockMask``\\ s from the same rule (blocks no query
  attends are skipped), for models loaded with ``attn_implementation="flex_attention"``.

A model with several layer types gets ``{layer type: mask}`` (transformers passes each layer its
own).  Rows without branching need no mask at all (plain causal attention; the backend passes
none).
"""

from __future__ import annotations

#: Attention implementations the transformers backend can score packed rows with.
IMPLEMENTATIONS = ("sdpa", "flex_attention")


def layer_windows(
    layer_types: list[str] | None, sliding_window: int | None
) -> dict[str, int | None]:
    """Each layer type and its window (None: full attention)."""
    kinds = set(layer_types or ()) or {"full_attention"}
    return {
        k: (sliding_window if k == "sliding_attention" and sliding_window else None) for k in kinds
    }


def _one_or_dict(masks: dict):
    return masks if len(masks) > 1 or "full_attention" not in masks else masks["full_attention"]


def sdpa_masks(torch, pos, end, prefix_len: int, windows: dict[str, int | None]):
    """Boolean masks (True = attend) from positions and subtree ends ([B, L] tensors on the
    device), one per layer type.  Boolean on every device: what GPU kernels take, and on a CPU
    as fast as additive float masks (Gemma 3 270M, a 4 × 512-token batch after a 220-token
    prefix, one thread: 5.5-5.7 s either way, alternating).  Every [B, L, P + L] temporary is
    boolean: the window test compares ``pos[q] - window`` ([B, L, 1]) with the keys' positions
    instead of materialising their int64 differences (512 MiB at B = 16, L = 2,048)."""
    B, L = end.shape
    ar = torch.arange(L, device=end.device)
    tree = (ar[None, None, :] <= ar[None, :, None]) & (ar[None, :, None] <= end[:, None, :])
    if prefix_len:
        tree = torch.cat([tree.new_ones(B, L, prefix_len), tree], dim=-1)
    out = {}
    for kind, window in windows.items():
        m = tree
        if window:
            kpos = pos
            if prefix_len:
                kpos = torch.cat(
                    [torch.arange(prefix_len, device=pos.device).expand(B, -1), pos], 1
                )
            m = tree & (kpos[:, None, :] > (pos - window)[:, :, None])
        out[kind] = m[:, None]
    return _one_or_dict(out)


def key_axis(torch, pos, end, prefix_len: int):
    """The rule on the key axis: for each of the ``P + L`` keys of every row, the first and last
    query index that may attend it and its position ([B, P + L] tensors each; prefix keys: every
    query, positions ``0 .. P - 1``).  A FlexAttention mask function reads only these and the
    queries' positions, so it holds no Python integer that varies from call to call (the prefix
    length, the row length): torch.compile would specialise on each and build a new kernel."""
    B, L = end.shape
    ar = torch.arange(L, device=end.device).expand(B, -1)
    P = torch.arange(prefix_len, device=end.device).expand(B, -1)
    # new contiguous tensors every call (torch.cat even where P = 0): one memory layout and
    # one tensor kind (inference mode or not), which compiled kernels guard on
    first = torch.cat([torch.zeros_like(P), ar], 1)
    last = torch.cat([torch.full_like(P, L - 1), end], 1)
    kpos = torch.cat([P, pos], 1)
    return first, last, kpos


def tree_mask_mod(first, last, qpos, kpos, window):
    """FlexAttention's ``mask_mod`` for the rule (:func:`key_axis`'s tensors; ``qpos``: the
    queries' positions; ``window``: a 0-d tensor, a huge one for full attention).  One code
    object and tensors alone in its closure: every layer type and call shares one compiled
    kernel (torch.compile guards on the code object and specialises on Python numbers).  Never
    a default argument: torch 2.11's compile cache does not guard default arguments, so a graph
    built for a sliding layer was reused for the full-attention layers (issue 32, item 1)."""

    def tree(b, h, q, kv):
        return (first[b, kv] <= q) & (q <= last[b, kv]) & (kpos[b, kv] > qpos[b, q] - window)

    return tree


#: The window of a full-attention layer in :func:`tree_mask_mod` (no position gap reaches it).
NO_WINDOW = 1 << 40


def flex_masks(
    torch, pos, end, prefix_len: int, windows: dict[str, int | None], compiled: bool | None = None
):
    """FlexAttention block masks from the same rule, one per layer type (each built once per
    call and shared by all the layers of its type).  ``compiled`` (default: on a GPU) builds
    them with ``torch.compile(create_block_mask)``: eager, the mask function is evaluated over
    every (query, key) pair with int64 temporaries of that size (1 GiB for 16 rows of 2,048
    tokens after a 2,048-token prefix); compiled, one fused kernel per block (compiled twice per
    process: a static build, then a dynamic one; on a CPU the first build takes a minute)."""
    B, L = end.shape
    first, last, kpos = key_axis(torch, pos, end, prefix_len)
    qpos = pos.clone(memory_format=torch.contiguous_format)
    if compiled is None:
        compiled = end.device.type == "cuda"
    out = {}
    for kind, window in windows.items():
        w = torch.full((), window or NO_WINDOW, dtype=torch.int64, device=end.device)
        rule = tree_mask_mod(first, last, qpos, kpos, w)
        out[kind] = _block_mask(torch, compiled)(
            rule, B, None, L, prefix_len + L, device=end.device
        )
    return _one_or_dict(out)


_COMPILED: list = []  # torch.compile(create_block_mask), made once per process


def _block_mask(torch, compiled: bool):
    from torch.nn.attention.flex_attention import create_block_mask

    if not compiled:
        return create_block_mask
    if not _COMPILED:
        _COMPILED.append(torch.compile(create_block_mask))
    return _COMPILED[0]
