#!/usr/bin/env python3
"""PyTorch's side of `tt_bench --device cuda` (tools/bench/cuda_bench.h): the same workloads, in
eager mode on GPU 0, with the same shapes and the same timing (warm-up, then the median of
several samples bracketed by CUDA events on the default stream, each sample long enough to last
about 20 ms). Prints one line per workload, or with --json one object {"name": ms_per_op, ...}
that tt_bench reads (null where the workload ran out of memory). Needs torch with CUDA; exits 1
without it. TF32 stays off for matmuls, as tinytorch's default.

Training (issue 17): gpt_step (the CPU gpt_step's GPT at context 256, batch 64), gpt_step_bf16, and
gpt2_step, GPT-2 small (E 768, 12 heads, 12 layers, context 1024, batch 8, vocab 50304) with the
same structure, AdamW and float32; its step lasts a few hundred ms, so it runs at most 2 warm-up
steps and 3 timed rounds. tinytorch's *_graph rows (a CUDA graph) are compared with these eager times.

Attention (issue 8, the sdpa_* workloads): FlashAttention's benchmark shapes (B*N = 16384 tokens;
D 64 with H 16, D 128 with H 8; N 512 to 16384; causal and not; float32; forward + backward and
forward only `_fwd`) through torch.nn.functional.scaled_dot_product_attention (PyTorch 2), under
its default choice for float32 (the memory-efficient kernel) as `name`, and forced onto its math
path as `name_math`.

bfloat16 attention (issue 18, the sdpa_bf16_* workloads): D 64 with H 16 and D 128 with H 8 at
N 4096 (B 4), non-causal, bf16 q, k, v and dO, forward + backward and forward only, under PyTorch's
default choice for bf16 as `name` and forced onto its FlashAttention-2 backend as `name_fa2`.
"""
import argparse
import contextlib
import json
import re
import sys

SDPA_TOKENS = 16384


def sdpa_shapes():
    """(name, B, H, N, D, causal, fwd_only), in tt_bench's order (tools/bench/cuda_bench.cpp)."""
    for d, h in ((64, 16), (128, 8)):
        for n in (512, 1024, 2048, 4096, 8192, 16384):
            for causal in (False, True):
                for fwd_only in (False, True):
                    name = f"sdpa_d{d}_n{n}" + ("_causal" if causal else "") + ("_fwd" if fwd_only else "")
                    yield name, SDPA_TOKENS // n, h, n, d, causal, fwd_only


def sdpa_bf16_shapes():
    """(name, B, H, N, D, fwd_only) of the bf16 rows, in tt_bench's order (cuda_bench_sdpa.cpp)."""
    for d, h in ((64, 16), (128, 8)):
        for fwd_only in (False, True):
            n = 4096
            yield f"sdpa_bf16_d{d}_n{n}" + ("_fwd" if fwd_only else ""), SDPA_TOKENS // n, h, n, d, fwd_only


def flash_backend(torch):
    """A context manager factory forcing SDPA onto FlashAttention-2 (as math_backend)."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)
    except ImportError:
        return lambda: torch.backends.cuda.sdp_kernel(enable_math=False, enable_flash=True,
                                                      enable_mem_efficient=False)


def math_backend(torch):
    """A context manager factory forcing SDPA's math path: torch.nn.attention.sdpa_kernel (2.3+),
    else the older torch.backends.cuda.sdp_kernel (2.0 to 2.2)."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return lambda: sdpa_kernel(SDPBackend.MATH)
    except ImportError:
        return lambda: torch.backends.cuda.sdp_kernel(enable_math=True, enable_flash=False,
                                                      enable_mem_efficient=False)


def is_oom(torch, err):
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(err, oom)) or "out of memory" in str(err)


# (warm-up steps, timed rounds) at most, for the workloads whose one op lasts long.
CAPS = {"gpt2_step": (2, 3)}


def training_workloads(gpt_step):
    """The training steps (issue 17), in tt_bench's order: (name, make)."""
    return [("gpt_step", gpt_step),
            ("gpt_step_bf16", lambda: gpt_step(bf16=True)),
            ("gpt2_step", lambda: gpt_step(V=50304, T=1024, E=768, H=12, L=12, B=8))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object of ms per op")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--filter", default="", metavar="REGEX",
                    help="only the workloads whose name matches (re.search), as tt_bench's --filter")
    args = ap.parse_args()
    selected = re.compile(args.filter).search if args.filter else (lambda name: True)
    try:
        import torch
    except ImportError:
        print("bench_pytorch_cuda: torch is not installed", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("bench_pytorch_cuda: torch sees no CUDA device", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)

    def uniform(shape, lo, hi, grad=False):
        return (torch.rand(shape, device=dev) * (hi - lo) + lo).requires_grad_(grad)

    def time_ms(op, warmup=None, rounds=None):
        warmup = args.warmup if warmup is None else warmup
        rounds = args.rounds if rounds is None else rounds
        for _ in range(warmup):
            op()
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        def sample(iters):
            start.record()
            for _ in range(iters):
                op()
            stop.record()
            stop.synchronize()
            return start.elapsed_time(stop) / iters

        one = max(1e-3, sample(1))
        iters = int(min(1000, max(1, 20.0 / one)))
        times = sorted(sample(iters) for _ in range(rounds))
        return times[len(times) // 2]

    def forward_backward(f, dy, leaves):
        def op():
            f().backward(dy)
            for leaf in leaves:
                leaf.grad = None
        return op

    def linear_fb():
        fc = torch.nn.Linear(768, 3072).to(dev)
        x = uniform((8192, 768), -1, 1, True)
        return forward_backward(lambda: fc(x), uniform((8192, 3072), -1, 1), [x, fc.weight, fc.bias])

    def softmax_fb():
        x = uniform((8192, 4096), -4, 4, True)
        return forward_backward(lambda: x.softmax(-1), uniform((8192, 4096), -1, 1), [x])

    def copy():
        src = uniform((8192, 4096), 0, 1)
        dst = torch.empty_like(src)
        return lambda: dst.copy_(src)

    def layernorm_fb():
        ln = torch.nn.LayerNorm(768).to(dev)
        x = uniform((8192, 768), -1, 1, True)
        return forward_backward(lambda: ln(x), uniform((8192, 768), -1, 1), [x, ln.weight, ln.bias])

    def gpt_step(bf16=False, V=65, T=256, E=128, H=4, L=4, B=64):
        # tinytorch's nn::GPT: pre-norm blocks (LayerNorm, causal self-attention with biased q/k/v/out
        # projections, LayerNorm, exact-GELU MLP 4x), learned positions, final LayerNorm, tied head.
        # Defaults: gpt_step's shape; gpt2_step passes GPT-2 small's (training_workloads).

        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1, self.ln2 = torch.nn.LayerNorm(E), torch.nn.LayerNorm(E)
                self.qkv, self.out = torch.nn.Linear(E, 3 * E), torch.nn.Linear(E, E)
                self.fc1, self.fc2 = torch.nn.Linear(E, 4 * E), torch.nn.Linear(4 * E, E)

            def forward(self, x):
                b, t, _ = x.shape
                q, k, v = self.qkv(self.ln1(x)).split(E, dim=-1)
                q, k, v = (z.view(b, t, H, E // H).transpose(1, 2) for z in (q, k, v))
                a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + self.out(a.transpose(1, 2).reshape(b, t, E))
                return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))

        class GPT(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.tok, self.pos = torch.nn.Embedding(V, E), torch.nn.Embedding(T, E)
                self.blocks = torch.nn.Sequential(*[Block() for _ in range(L)])
                self.ln_f = torch.nn.LayerNorm(E)

            def forward(self, ids):
                h = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
                return self.ln_f(self.blocks(h)) @ self.tok.weight.t()

        gpt = GPT().to(dev)
        opt = torch.optim.AdamW(gpt.parameters(), lr=1e-3, weight_decay=0.01)
        tokens = torch.randint(0, V, (B, T + 1), device=dev)
        ids, targets = tokens[:, :T].contiguous(), tokens[:, 1:].reshape(-1)

        def op():  # gpt_step_bf16: the forward and the loss under torch.autocast(bfloat16)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                loss = torch.nn.functional.cross_entropy(gpt(ids).reshape(-1, V), targets)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return op

    has_sdpa = hasattr(torch.nn.functional, "scaled_dot_product_attention")
    forced_math = math_backend(torch) if has_sdpa else None

    def sdpa(b, h, n, d, causal, fwd_only, backend):
        """One op: forward only, or forward + out.backward(dO) with q, k, v's grads set to none.
        backend None = PyTorch's default choice; else a context manager factory."""
        q, k, v = (uniform((b, h, n, d), -1, 1, not fwd_only) for _ in range(3))
        ctx = backend or contextlib.nullcontext

        def f():
            with ctx():
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        if fwd_only:
            def op():
                with torch.no_grad():
                    f()
            return op
        return forward_backward(f, uniform((b, h, n, d), -1, 1), [q, k, v])

    def sdpa_bf16(b, h, n, d, fwd_only, backend):
        """As sdpa, non-causal, with bf16 q, k, v and dO (uniform in [-1, 1) rounded)."""
        def bf16(grad):
            return uniform((b, h, n, d), -1, 1).to(torch.bfloat16).requires_grad_(grad)
        q, k, v = (bf16(not fwd_only) for _ in range(3))
        ctx = backend or contextlib.nullcontext

        def f():
            with ctx():
                return torch.nn.functional.scaled_dot_product_attention(q, k, v)
        if fwd_only:
            def op():
                with torch.no_grad():
                    f()
            return op
        return forward_backward(f, bf16(False), [q, k, v])

    workloads = [("linear_fb", linear_fb), ("copy", copy), ("softmax_fb", softmax_fb),
                 ("layernorm_fb", layernorm_fb)] + training_workloads(gpt_step)
    # A tinytorch *_graph row is judged against the eager step of its name without _graph.
    workloads = [(name, make) for name, make in workloads
                 if selected(name) or selected(name + "_graph") or (name == "copy" and selected("softmax_fb"))]
    for name, b, h, n, d, causal, fwd_only in sdpa_shapes():
        if not selected(name):
            continue
        if not has_sdpa:
            print(f"bench_pytorch_cuda: torch {torch.__version__} has no scaled_dot_product_attention "
                  f"(PyTorch 2): {name} skipped", file=sys.stderr)
            continue
        for key, backend in ((name, None), (name + "_math", forced_math)):
            workloads.append((key, lambda b=b, h=h, n=n, d=d, c=causal, fo=fwd_only, be=backend:
                              sdpa(b, h, n, d, c, fo, be)))
    forced_flash = flash_backend(torch) if has_sdpa else None
    for name, b, h, n, d, fwd_only in sdpa_bf16_shapes():
        if not selected(name) or not has_sdpa:
            continue
        for key, backend in ((name, None), (name + "_fa2", forced_flash)):
            workloads.append((key, lambda b=b, h=h, n=n, d=d, fo=fwd_only, be=backend:
                              sdpa_bf16(b, h, n, d, fo, be)))

    times = {}
    for name, make in workloads:
        why = None
        try:
            warmup, rounds = CAPS.get(name, (args.warmup, args.rounds))
            times[name] = time_ms(make(), min(warmup, args.warmup), min(rounds, args.rounds))
        except RuntimeError as err:  # torch.cuda.OutOfMemoryError is a RuntimeError
            if not name.startswith("sdpa_") and not is_oom(torch, err):
                raise
            times[name] = None  # n/a in tt_bench's table
            why = "out of memory" if is_oom(torch, err) else str(err).splitlines()[0]
            print(f"bench_pytorch_cuda: {name}: n/a ({why})", file=sys.stderr)
        torch.cuda.empty_cache()
        if not args.json:
            ms = f"n/a ({why})" if why else f"ms_med={times[name]:.3f}"
            print(f"workload={name} impl=pytorch {ms}", flush=True)
    if args.json:
        print(json.dumps(times))
    return 0


if __name__ == "__main__":
    sys.exit(main())
