#!/usr/bin/env python3
"""PyTorch on the CPU, timed on tt_bench's CPU workloads: the `pytorch` impl of tools/bench.

Each workload of tools/bench/workloads.cpp is written here the way a PyTorch 2 user writes it
(nn.Linear, nn.LayerNorm, nn.MultiheadAttention(batch_first=True) with is_causal, AdamW with its
default implementation, F.scaled_dot_product_attention(is_causal=True), a GPT of tt_bench's
gpt_step configuration built from nn modules), on the same shapes and dtypes and on the very same
input values: `uniform()` below is harness.cpp's fill_uniform (splitmix64 of seed and index), so
the checksum of the first op (`check=`) can be compared with tinytorch's. Grads are set to None
after every forward + backward op, as tt_bench does.

Timing follows tt_bench's harness: warm-up ops, then a doubling batch until it lasts 20 ms (or the
workload's sample length) estimates one op, `iters` ops per sample make a sample last the
workload's sample length, and the min and median per-op time over the rounds are printed:

    workload=NAME impl=pytorch ms_min=X ms_med=Y rounds=R iters=I cores_busy=C check=S torch=V
    workload=NAME impl=pytorch skipped=REASON        (REASON: free text to the end of the line)

A workload this torch cannot run is printed as skipped, never left out: torch 1.13 has no
F.scaled_dot_product_attention, so the sdpa_N rows are skipped there (and mha_fb and gpt_step pass
the causal mask alone, `mask=attn_mask_only`: MultiheadAttention takes is_causal from 2.0 on).
Without torch at all, every row is skipped. The first line, `# bench_pytorch_cpu: torch=V ...`,
says what ran.

Used two ways:
  * `tt_bench --impls ...,pytorch` (and by default when python3 has torch >= 2) runs this script
    once, after its in-process rounds, passing on tt_bench's --threads, --warmup and --rounds, the
    selected workloads as --filter '^(a|b)$' and --min-torch 2; it prints the rows in its own
    format, compares `check=` with tinytorch's checksum and adds `pytorch` rows to its ratio table
    (tools/bench/impl_pytorch.cpp, tools/bench/README.md).
  * The `cpu` phase of the GPU machine's gpu-check (which prefers this file to its stand-in) runs
    it alone after `tt_bench --impls tinytorch,openblas` at each thread count T of CPU_THREADS,
    as `python3 tools/bench_pytorch_cpu.py --threads T --filter "$CPU_FILTER"`, and keeps the
    `workload=` lines.

Usage: bench_pytorch_cpu.py [--threads N] [--filter REGEX] [--rounds N] [--warmup N]
                            [--min-torch MAJOR] [--list]
"""
import argparse
import collections
import inspect
import math
import os
import re
import statistics
import sys
import time

# Imported by main(), after the thread settings that must come before torch loads its libraries.
torch = nn = F = None


class Skip(Exception):
    """A workload this torch cannot run; the message says why."""


# A workload prepared for timing: `run` does one op and drops its result; `check` does one more op
# and returns the checksum tt_bench's impls return for it; `note` adds key=value text to the row.
Prepared = collections.namedtuple("Prepared", "run check note", defaults=("",))


# --- inputs and checksums --------------------------------------------------------------------------

def _int64(u):
    """A 64-bit unsigned constant as the int64 with the same bits."""
    u &= (1 << 64) - 1
    return u - (1 << 64) if u >= 1 << 63 else u


def _shr(z, k):
    """Logical right shift of int64 tensor z (torch's >> is arithmetic on int64)."""
    return (z >> k) & ((1 << (64 - k)) - 1)


def uniform(shape, seed, lo=0.0, hi=1.0):
    """float32 values of harness.cpp's fill_uniform(data, n, seed, lo, hi), bit for bit: splitmix64
    of (seed, index), its top 24 bits scaled to [0, 1), then lo + (hi - lo) * u in float32. int64
    products wrap around as the uint64 ones do."""
    n = math.prod(shape)
    z = torch.arange(n, dtype=torch.int64) * _int64(0xBF58476D1CE4E5B9) + _int64(seed * 0x9E3779B97F4A7C15 + 1)
    z = (z ^ _shr(z, 30)) * _int64(0xBF58476D1CE4E5B9)
    z = (z ^ _shr(z, 27)) * _int64(0x94D049BB133111EB)
    z = z ^ _shr(z, 31)
    u = _shr(z, 40).to(torch.float32) * (1.0 / 16777216.0)
    if (lo, hi) != (0.0, 1.0):
        lo32, hi32 = torch.tensor(lo, dtype=torch.float32), torch.tensor(hi, dtype=torch.float32)
        u = lo32 + (hi32 - lo32) * u
    return u.reshape(shape)


def f32(x):
    """x rounded to float32, as the C++ side's float constants (1.0f / 28.0f, ...)."""
    return float(torch.tensor(x, dtype=torch.float32))


def total(t):
    """Sum of the elements in double: harness.cpp's checksum()."""
    return float(t.detach().double().sum())


def abs_sum(t):
    """Sum of |x| in double: harness.cpp's abs_checksum(), for gradients whose plain sum cancels."""
    return float(t.detach().double().abs().sum())


def load(param, values):
    with torch.no_grad():
        param.copy_(values)


def fill_mha(mha, seed_in_w, seed_in_b, seed_out_w, seed_out_b, w, b):
    """MultiheadAttention's packed q, k, v rows and out_proj from four streams, as tt_bench's impls
    fill theirs (LibTorch's in_proj_weight is the same packed layout)."""
    e = mha.embed_dim
    load(mha.in_proj_weight, uniform((3 * e, e), seed_in_w, -w, w))
    load(mha.in_proj_bias, uniform((3 * e,), seed_in_b, -b, b))
    load(mha.out_proj.weight, uniform((e, e), seed_out_w, -w, w))
    load(mha.out_proj.bias, uniform((e,), seed_out_b, -b, b))


def has_is_causal():
    """MultiheadAttention.forward takes is_causal from torch 2.0 on."""
    return "is_causal" in inspect.signature(nn.MultiheadAttention.forward).parameters


def self_attention(mha, x, mask):
    """Causal self-attention as a PyTorch 2 user calls it: the causal float mask with the
    is_causal hint (PyTorch 2 then hands is_causal to its fused attention), no weights returned."""
    extra = {"is_causal": True} if has_is_causal() else {}
    return mha(x, x, x, attn_mask=mask, need_weights=False, **extra)[0]


def mask_note():
    return "" if has_is_causal() else "mask=attn_mask_only"


# --- workloads: each builds its inputs and returns a Prepared ---------------------------------------

def binary(op, shape_a, shape_b):
    a, b = uniform(shape_a, 1), uniform(shape_b, 2)
    return Prepared(run=lambda: op(a, b), check=lambda: total(op(a, b)))


def forward_backward(forward, dy, leaves, checksum=None):
    """One op: y = forward(), y.backward(dy), every leaf's grad set to None. The checksum is
    sum(y) + sum |grad| of each leaf unless `checksum(y)` says otherwise (read before the grads
    are cleared)."""
    def clear():
        for leaf in leaves:
            leaf.grad = None

    def run():
        forward().backward(dy)
        clear()

    def check():
        y = forward()
        y.backward(dy)
        c = checksum(y) if checksum else total(y) + sum(abs_sum(leaf.grad) for leaf in leaves)
        clear()
        return c
    return Prepared(run, check)


def softmax_fb():
    x = uniform((64, 8, 128, 128), 1).requires_grad_()
    return forward_backward(lambda: x.softmax(-1), uniform((64, 8, 128, 128), 2), [x])


def tiny_graph():
    a, b = uniform((1,), 1).requires_grad_(), uniform((1,), 2).requires_grad_()

    def step():
        loss = (a * b).sum()
        loss.backward()
        return loss

    def run():
        step()
        a.grad = b.grad = None

    def check():
        c = total(step()) + total(a.grad) + total(b.grad)
        a.grad = b.grad = None
        return c
    return Prepared(run, check)


def mlp_chain_fb():
    bound = f32(math.sqrt(6.0 / 512.0))
    x = uniform((1024, 512), 1, -1.0, 1.0)
    ws = [uniform((512, 512), 10 + i, -bound, bound).requires_grad_() for i in range(4)]

    def forward():
        h = x
        for w in ws:
            h = F.gelu(h @ w)  # exact (erf), the default
        return h.sum()
    # a 0-d loss: backward(None) is loss.backward()
    return forward_backward(forward, None, ws,
                            checksum=lambda loss: total(loss) + sum(abs_sum(w.grad) for w in ws))


def linear_fb(bf16=False):
    """linear_fb; with bf16 the forward under torch.autocast("cpu", torch.bfloat16) and dy in bf16
    (linear_fb_bf16)."""
    fc = nn.Linear(512, 2048)
    load(fc.weight, uniform((2048, 512), 2))
    load(fc.bias, uniform((2048,), 3))
    x = uniform((8192, 512), 1).requires_grad_()

    def forward():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            return fc(x)
    dy = uniform((8192, 2048), 4).to(torch.bfloat16 if bf16 else torch.float32)
    return forward_backward(forward, dy, [x, fc.weight, fc.bias])


def layernorm_fb():
    ln = nn.LayerNorm(768)
    load(ln.weight, uniform((768,), 2))
    load(ln.bias, uniform((768,), 3))
    x = uniform((8192, 768), 1).requires_grad_()
    return forward_backward(lambda: ln(x), uniform((8192, 768), 4), [x, ln.weight, ln.bias])


def labels(n, seed, classes):
    """Integer labels from one uniform stream, as tt_bench's impls make them: int(u * classes)."""
    return (uniform((n,), seed) * float(classes)).long() % classes


def mlp_step():
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    b1, b2 = f32(1.0 / 28.0), f32(1.0 / 16.0)
    load(model[0].weight, uniform((256, 784), 11, -b1, b1))
    load(model[0].bias, uniform((256,), 12, -b1, b1))
    load(model[2].weight, uniform((10, 256), 13, -b2, b2))
    load(model[2].bias, uniform((10,), 14, -b2, b2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = uniform((128, 784), 1), labels(128, 2, 10)

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)  # PyTorch 2's default, spelled out for torch 1.x
        loss.backward()
        opt.step()
        return loss

    def check():
        return step().item() + sum(abs_sum(p) for p in model.parameters())
    return Prepared(step, check)


def adamw_step():
    params = []
    for i in range(10):
        w = uniform((1000, 1000), 100 + i, -0.05, 0.05).requires_grad_()
        w.grad = uniform((1000, 1000), 200 + i, -1.0, 1.0)
        params.append(w)
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)

    def check():
        opt.step()
        return sum(abs_sum(w) for w in params)
    return Prepared(opt.step, check)


def mha_fb():
    mha = nn.MultiheadAttention(512, 8, batch_first=True)
    fill_mha(mha, 21, 23, 22, 24, 0.05, 0.05)
    x = uniform((8, 256, 512), 25, -1.0, 1.0).requires_grad_()
    mask = nn.Transformer.generate_square_subsequent_mask(256)  # -inf above the diagonal

    def checksum(y):
        return (abs_sum(y) + abs_sum(x.grad) + abs_sum(mha.in_proj_weight.grad[:512]) +
                abs_sum(mha.out_proj.weight.grad))
    p = forward_backward(lambda: self_attention(mha, x, mask), uniform((8, 256, 512), 26, -1.0, 1.0),
                         list(mha.parameters()) + [x], checksum)
    return p._replace(note=mask_note())


def gpt_step(bf16=False):
    """tt_bench's gpt_step: tinytorch's nn::GPT (vocab 65, context 128, 4 pre-norm blocks, E 128,
    4 heads, exact-GELU MLP 4x, learned positions, final LayerNorm, head tied to the token
    embedding) on ids [32, 128], one AdamW(1e-3, weight_decay 0.01) step. Same weights as the
    other impls (Note [gpt_step values] in tools/bench/attention_tinytorch.cpp)."""
    vocab, ctx, layers, e, heads, batch = 65, 128, 4, 128, 4, 32
    w, b = f32(0.0346), f32(0.01)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(e)
            self.attn = nn.MultiheadAttention(e, heads, batch_first=True)
            self.ln2 = nn.LayerNorm(e)
            self.fc1, self.gelu, self.fc2 = nn.Linear(e, 4 * e), nn.GELU(), nn.Linear(4 * e, e)

        def forward(self, x, mask):
            x = x + self_attention(self.attn, self.ln1(x), mask)
            return x + self.fc2(self.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb, self.pos_emb = nn.Embedding(vocab, e), nn.Embedding(ctx, e)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(e)
            self.register_buffer("causal_mask", nn.Transformer.generate_square_subsequent_mask(ctx))

        def forward(self, ids):  # ids: [B, T] -> logits [B, T, V]
            t = ids.shape[1]
            x = self.tok_emb(ids) + self.pos_emb(torch.arange(t))
            for block in self.blocks:
                x = block(x, self.causal_mask[:t, :t])
            return F.linear(self.ln_f(x), self.tok_emb.weight)

    model = GPT()
    load(model.tok_emb.weight, uniform((vocab, e), 400, -w, w))
    load(model.pos_emb.weight, uniform((ctx, e), 401, -w, w))
    for i, block in enumerate(model.blocks):
        seed = 410 + 10 * i
        fill_mha(block.attn, seed, seed + 1, seed + 2, seed + 3, w, b)
        load(block.fc1.weight, uniform((4 * e, e), seed + 4, -w, w))
        load(block.fc1.bias, uniform((4 * e,), seed + 5, -b, b))
        load(block.fc2.weight, uniform((e, 4 * e), seed + 6, -w, w))
        load(block.fc2.bias, uniform((e,), seed + 7, -b, b))
    tokens = labels(batch * (ctx + 1), 450, vocab).view(batch, ctx + 1)
    ids, targets = tokens[:, :ctx], tokens[:, 1:].reshape(-1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

    def loss_of():  # gpt_step_bf16: the forward and the loss under bf16 autocast
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            return F.cross_entropy(model(ids).reshape(-1, vocab), targets)

    def step():
        loss = loss_of()
        opt.zero_grad(set_to_none=True)  # PyTorch 2's default, spelled out for torch 1.x
        loss.backward()
        opt.step()
        return loss

    def check():  # Note [gpt_step checksum] in tools/bench/attention_tinytorch.cpp
        c = step().item()
        with torch.no_grad():
            c += loss_of().item()
        return (c + abs_sum(model.tok_emb.weight.grad) + abs_sum(model.blocks[0].attn.in_proj_weight.grad[:e]) +
                abs_sum(model.blocks[-1].fc1.weight.grad) + abs_sum(model.ln_f.weight.grad))
    return Prepared(step, check, mask_note())


def sdpa(n):
    if not hasattr(F, "scaled_dot_product_attention"):
        raise Skip(f"torch {torch.__version__} has no F.scaled_dot_product_attention (PyTorch >= 2.0)")
    q, k, v = (uniform((1, 8, n, 64), seed, -1.0, 1.0).requires_grad_() for seed in (31, 32, 33))

    def checksum(y):
        return abs_sum(y) + abs_sum(q.grad) + abs_sum(k.grad) + abs_sum(v.grad)
    return forward_backward(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                            uniform((1, 8, n, 64), 34, -1.0, 1.0), [q, k, v], checksum)


# The workloads, in tools/bench/workloads.cpp's order, with its rounds and sample lengths (s).
Workload = collections.namedtuple("Workload", "name rounds sample_s build what")
N16M = 1 << 24
WORKLOADS = [
    Workload("matmul_1024", 15, 0.1, lambda: binary(torch.matmul, (1024, 1024), (1024, 1024)), "a @ b"),
    Workload("matmul_4096", 7, 0.0, lambda: binary(torch.matmul, (4096, 4096), (4096, 4096)), "a @ b"),
    Workload("add_16M", 15, 0.1, lambda: binary(torch.add, (N16M,), (N16M,)), "a + b"),
    Workload("sum_16M", 15, 0.1, lambda: binary(lambda a, b: a.sum(), (N16M,), (1,)), "a.sum()"),
    Workload("dispatch_add_1", 15, 0.05, lambda: binary(torch.add, (1,), (1,)), "a + b on 1 element"),
    Workload("softmax_fb", 11, 0.2, softmax_fb, "x.softmax(-1), y.backward(dy)"),
    Workload("tiny_graph", 15, 0.05, tiny_graph, "(a * b).sum().backward()"),
    Workload("mlp_chain_fb", 11, 0.2, mlp_chain_fb, "4 x F.gelu(h @ W), h.sum().backward()"),
    Workload("linear_fb", 9, 0.0, linear_fb, "nn.Linear(512, 2048), y.backward(dy)"),
    Workload("mlp_step", 15, 0.1, mlp_step, "nn.Sequential MLP, F.cross_entropy, SGD(momentum 0.9) step"),
    Workload("adamw_step", 15, 0.1, adamw_step, "torch.optim.AdamW(10 x [1000, 1000]).step()"),
    Workload("layernorm_fb", 11, 0.2, layernorm_fb, "nn.LayerNorm(768), y.backward(dy)"),
    Workload("mha_fb", 9, 0.3, mha_fb, "nn.MultiheadAttention(512, 8, batch_first=True), is_causal"),
    Workload("gpt_step", 9, 0.0, gpt_step, "GPT of nn modules (MultiheadAttention), AdamW step"),
    Workload("linear_fb_bf16", 9, 0.0, lambda: linear_fb(bf16=True), "linear_fb under torch.autocast(bfloat16)"),
    Workload("gpt_step_bf16", 9, 0.0, lambda: gpt_step(bf16=True), "gpt_step under torch.autocast(bfloat16)"),
] + [Workload(f"sdpa_{n}", 3 if n >= 4096 else 5, 0.3, lambda n=n: sdpa(n),
              f"F.scaled_dot_product_attention(is_causal=True), [1, 8, {n}, 64]; torch >= 2")
     for n in (1024, 2048, 4096, 8192)]


# --- timing ---------------------------------------------------------------------------------------

def time_sample(run, iters):
    """Wall and process CPU seconds (all threads) of `iters` ops."""
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(iters):
        run()
    return time.perf_counter() - t0, time.process_time() - c0


def time_workload(run, rounds, sample_s, warmup):
    """tt_bench's harness for one impl: warm-up, calibration, `rounds` samples of `iters` ops.
    Returns (per-op seconds of each round, cores busy of each round, iters)."""
    for _ in range(warmup):
        run()
    enough, batch = min(0.02, sample_s), 1
    wall, _ = time_sample(run, batch)
    while wall < enough and batch < 1 << 30:
        batch *= 2
        wall, _ = time_sample(run, batch)
    iters = max(1, math.ceil(sample_s / (wall / batch)))
    per_op, cores = [], []
    for _ in range(rounds):
        wall, cpu = time_sample(run, iters)
        per_op.append(wall / iters)
        cores.append(cpu / wall if wall > 0 else 0.0)
    return per_op, cores, iters


def fmt_ms(ms):
    """harness.cpp's fmt_ms: digits enough for the range, never an exponent."""
    return f"{ms:.1f}" if ms >= 100 else f"{ms:.3f}" if ms >= 1 else f"{ms:.6f}"


# --- main -----------------------------------------------------------------------------------------

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=0,
                    help="torch.set_num_threads(N) and set_num_interop_threads(1) before any work "
                         "(0: torch's defaults)")
    ap.add_argument("--filter", default="", metavar="REGEX", help="workloads whose name matches (re.search)")
    ap.add_argument("--rounds", type=int, default=0, help="rounds per workload (0: each workload's own)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed ops before calibration (default 2)")
    ap.add_argument("--min-torch", type=int, default=0, metavar="MAJOR",
                    help="with an older torch, print every workload as skipped and time nothing")
    ap.add_argument("--list", action="store_true", help="print the workloads (without importing torch)")
    return ap.parse_args()


def skip_all(selected, reason):
    for w in selected:
        print(f"workload={w.name} impl=pytorch skipped={reason}", flush=True)


def main():
    global torch, nn, F
    args = parse_args()
    selected = [w for w in WORKLOADS if re.search(args.filter, w.name)]
    if args.list:
        for w in WORKLOADS:
            print(f"{w.name:<16} {w.what}")
        return 0
    if args.threads > 0:
        # torch.set_num_threads reaches OpenMP and MKL but not OpenBLAS, which some builds (Debian's)
        # use for float32 matmul; OpenBLAS reads its count from the environment when it loads.
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except ImportError as err:
        print(f"# bench_pytorch_cpu: torch=none python={sys.executable} ({err})", flush=True)
        skip_all(selected, f"no torch for {sys.executable} ({err})")
        return 0
    if args.threads > 0:
        torch.set_num_threads(args.threads)
        torch.set_num_interop_threads(1)
    torch.manual_seed(0)  # the modules' own init, overwritten by uniform() wherever it matters
    version = str(torch.__version__)
    blas = re.search(r"BLAS_INFO=([^,]*)", torch.__config__.show())
    print(f"# bench_pytorch_cpu: torch={version} python={sys.executable} threads={torch.get_num_threads()} "
          f"interop_threads={torch.get_num_interop_threads()} blas={blas.group(1) if blas else '?'} "
          f"mkldnn={int(torch.backends.mkldnn.is_available())}", flush=True)
    major = int(re.match(r"\d+", version).group())
    if major < args.min_torch:
        skip_all(selected, f"torch {version} < {args.min_torch} (the anchor is PyTorch {args.min_torch})")
        return 0

    for w in selected:
        try:
            prepared = w.build()
            check = prepared.check()
            per_op, cores, iters = time_workload(prepared.run, args.rounds or w.rounds, w.sample_s, args.warmup)
        except Skip as why:
            print(f"workload={w.name} impl=pytorch skipped={why}", flush=True)
            continue
        except Exception as err:  # e.g. out of memory: marked, and the other workloads still run
            reason = " ".join(f"{type(err).__name__}: {err}".split())
            print(f"workload={w.name} impl=pytorch skipped=failed ({reason})", flush=True)
            continue
        ms = [t * 1e3 for t in per_op]
        note = f" {prepared.note}" if prepared.note else ""
        print(f"workload={w.name} impl=pytorch ms_min={fmt_ms(min(ms))} ms_med={fmt_ms(statistics.median(ms))} "
              f"rounds={len(ms)} iters={iters} cores_busy={statistics.median(cores):.2f} check={check:.10g} "
              f"torch={version}{note}", flush=True)
        del prepared  # free this workload's tensors before the next one's
    return 0


if __name__ == "__main__":
    sys.exit(main())
