#!/usr/bin/env python3
# A pure-Python model of the index logic of tinytorch/backend/cuda/flash_mma_bf16_forward.cu and
# _backward.cu, for checking their fragment plumbing without a GPU: ldmatrix (plain and .trans) and
# mma.sync m16n8k16 emulated from their documented fragment layouts (mma_bf16.cuh), the swizzled
# shared tiles, and the kernels' index expressions transcribed one for one, in float64 without the
# bf16 roundings; each block's results against a direct computation. Run: python3 tools/flash_mma_bf16_model.py
# (about 25 s; prints one line per case and "model OK"). Keep it in step with the kernels.
import math, random
NEG = float('-inf')

def swz(D, row, col):
    key = (row >> 1) & 3 if D == 32 else row & 7
    return row * D + (((col >> 3) ^ key) << 3) + (col & 7)

CONFLICTS = [0]  # ldmatrix phases whose 8 rows do not fall in 8 different 16-byte bank groups


def ldmatrix_x4(smem, addr, trans=False):
    # addr[l]: element offset of lane l's 8-element row. returns regs[l] = [(lo,hi)]*4
    out = [[None]*4 for _ in range(32)]
    for i in range(4):
        if len({(2 * addr[8*i + r] // 16) % 8 for r in range(8)}) != 8:
            CONFLICTS[0] += 1
        M = [[smem[addr[8*i + r] + c] for c in range(8)] for r in range(8)]
        for l in range(32):
            if not trans:
                out[l][i] = (M[l//4][2*(l%4)], M[l//4][2*(l%4)+1])
            else:
                out[l][i] = (M[2*(l%4)][l//4], M[2*(l%4)+1][l//4])
    return out

def mma(d, a, b0, b1):
    # d[l] = [c0..c3], a[l] = 4 pairs, b0[l], b1[l] pairs
    A = [[0.0]*16 for _ in range(16)]; B = [[0.0]*8 for _ in range(16)]
    for l in range(32):
        g, t = l//4, l%4
        A[g][2*t], A[g][2*t+1] = a[l][0]; A[g+8][2*t], A[g+8][2*t+1] = a[l][1]
        A[g][2*t+8], A[g][2*t+9] = a[l][2]; A[g+8][2*t+8], A[g+8][2*t+9] = a[l][3]
        B[2*t][g], B[2*t+1][g] = b0[l]; B[2*t+8][g], B[2*t+9][g] = b1[l]
    for l in range(32):
        g, t = l//4, l%4
        for e in range(4):
            r = g + 8*(e >> 1); c = 2*t + (e & 1)
            d[l][e] += sum(A[r][k]*B[k][c] for k in range(16))

def fwd_block(q, k, v, bias, Tq, Tk, D, causal, scale, tile_index):
    BM, BN = 128, 64
    L2E = 1/math.log(2)
    sl2 = scale*L2E
    i0 = tile_index*BM
    Qs = [0.0]*(BM*D)
    for r in range(BM):
        for c in range(D):
            Qs[swz(D, r, c)] = q[i0+r][c] if i0+r < Tq else 0.0
    kend = min(Tk, i0+BM) if causal else Tk
    n_tiles = (kend + BN - 1)//BN
    out = {}; lse = {}
    state = []
    for warp in range(8):
        state.append(dict(o=[[[0.0]*4 for _ in range(D//8)] for l in range(32)], m=[[NEG, NEG] for l in range(32)],
                          l=[[0.0, 0.0] for l in range(32)]))
    for it in range(n_tiles):
        j0 = it*BN
        Kt = [0.0]*(BN*D); Vt = [0.0]*(BN*D)
        for r in range(BN):
            for c in range(D):
                Kt[swz(D, r, c)] = k[j0+r][c] if j0+r < Tk else 0.0
                Vt[swz(D, r, c)] = v[j0+r][c] if j0+r < Tk else 0.0
        for warp in range(8):
            S = state[warp]; wrow = warp*16
            s = [[[0.0]*4 for _ in range(BN//8)] for l in range(32)]
            for kk in range(D//16):
                qa = ldmatrix_x4(Qs, [swz(D, wrow + (l & 15), kk*16 + (l >> 4)*8) for l in range(32)])
                for n2 in range(BN//16):
                    kb = ldmatrix_x4(
                            Kt, [swz(D, n2*16 + ((l>>3) >> 1)*8 + (l&7), kk*16 + ((l>>3) & 1)*8) for l in range(32)])
                    d0 = [s[l][2*n2] for l in range(32)]; d1 = [s[l][2*n2+1] for l in range(32)]
                    mma(d0, qa, [kb[l][0] for l in range(32)], [kb[l][1] for l in range(32)])
                    mma(d1, qa, [kb[l][2] for l in range(32)], [kb[l][3] for l in range(32)])
            masked = bias is not None or j0 + BN > Tk or (causal and j0 + BN - 1 > i0 + wrow)
            for l in range(32):
                g, t = l//4, l%4; row0 = i0 + wrow + g
                for n in range(BN//8):
                    for e in range(4):
                        x = s[l][n][e]*sl2
                        if masked:
                            row = row0 + (e >> 1)*8; col = j0 + n*8 + 2*t + (e & 1)
                            if row >= Tq or col >= Tk or (causal and col > row): x = NEG
                            elif bias is not None: x += bias[row][col]*L2E
                        s[l][n][e] = x
            # softmax (quad reduce emulated)
            for r in range(2):
                mx = {}
                for l in range(32):
                    m_ = S['m'][l][r]
                    for n in range(BN//8):
                        for e in (2*r, 2*r+1):
                            if s[l][n][e] > m_: m_ = s[l][n][e]
                    mx[l] = m_
                for l in range(32):
                    base = l & ~3
                    mx2 = max(mx[base+i] for i in range(4))
                    if mx2 == NEG:
                        for n in range(BN//8): s[l][n][2*r] = s[l][n][2*r+1] = 0.0
                        continue
                    mold = S['m'][l][r]
                    alpha = 0.0 if mold == NEG else 2**(mold - mx2)
                    sm = 0.0
                    for n in range(BN//8):
                        for e in (2*r, 2*r+1):
                            s[l][n][e] = 0.0 if s[l][n][e] == NEG else 2**(s[l][n][e] - mx2); sm += s[l][n][e]
                    S['l'][l][r] = S['l'][l][r]*alpha + sm; S['m'][l][r] = mx2
                    for n in range(D//8):
                        S['o'][l][n][2*r] *= alpha; S['o'][l][n][2*r+1] *= alpha
            for kk in range(BN//16):
                pa = [[(s[l][2*kk][0], s[l][2*kk][1]), (s[l][2*kk][2], s[l][2*kk][3]), 
                        (s[l][2*kk+1][0], s[l][2*kk+1][1]),
                       (s[l][2*kk+1][2], s[l][2*kk+1][3])] for l in range(32)]
                for d2 in range(D//16):
                    vb = ldmatrix_x4(Vt, [swz(D, kk*16 + ((l>>3) & 1)*8 + (l&7), d2*16 + ((l>>3) >> 1)*8)
                                          for l in range(32)], True)
                    d0 = [S['o'][l][2*d2] for l in range(32)]; d1 = [S['o'][l][2*d2+1] for l in range(32)]
                    mma(d0, pa, [vb[l][0] for l in range(32)], [vb[l][1] for l in range(32)])
                    mma(d1, pa, [vb[l][2] for l in range(32)], [vb[l][3] for l in range(32)])
    for warp in range(8):
        S = state[warp]; wrow = warp*16
        for r in range(2):
            for l in range(32):
                g, t = l//4, l%4; base = l & ~3
                lsum = sum(S['l'][base+i][r] for i in range(4))
                inv = 1/lsum if lsum > 0 else 0.0
                ls = (S['m'][l][r] + math.log2(lsum))*math.log(2) if lsum > 0 else NEG
                row = i0 + wrow + g + 8*r
                if row < Tq:
                    for n in range(D//8):
                        out[(row, n*8 + 2*t)] = S['o'][l][n][2*r]*inv
                        out[(row, n*8 + 2*t + 1)] = S['o'][l][n][2*r+1]*inv
                    if t == 0: lse[row] = ls
    return out, lse

def reference(q, k, v, bias, Tq, Tk, D, causal, scale):
    O = []; L = []
    for i in range(Tq):
        sc = []
        for j in range(Tk):
            if causal and j > i: sc.append(NEG); continue
            x = scale*sum(q[i][d]*k[j][d] for d in range(D))
            if bias is not None: x += bias[i][j]
            sc.append(x)
        m = max(sc)
        if m == NEG: O.append([0.0]*D); L.append(NEG); continue
        p = [0.0 if x == NEG else math.exp(x - m) for x in sc]; l = sum(p)
        O.append([sum(p[j]*v[j][d] for j in range(Tk))/l for d in range(D)]); L.append(m + math.log(l))
    return O, L

def bwd_block(q, k, v, do, O, lse, bias, Tq, Tk, D, causal, scale, jt, dq_acc, dkv):
    BN = 64; BM = 32 if D >= 128 else 64; LDS = BM + 8
    RG = BM//16; DSPLIT = 4//RG; DW = D//DSPLIT
    L2E = 1/math.log(2); sl2 = scale*L2E
    j0 = jt*BN
    Ks = [0.0]*(BN*D); Vs = [0.0]*(BN*D)
    for r in range(BN):
        for c in range(D):
            Ks[swz(D, r, c)] = k[j0+r][c] if j0+r < Tk else 0.0
            Vs[swz(D, r, c)] = v[j0+r][c] if j0+r < Tk else 0.0
    dvec = [sum(O[i][d]*do[i][d] for d in range(D)) for i in range(Tq)]
    first_i = (j0//BM)*BM if causal else 0
    per_head = (Tq - first_i + BM - 1)//BM if first_i < Tq else 0
    dk = [[[[0.0]*4 for _ in range(D//8)] for l in range(32)] for w in range(4)]
    dv = [[[[0.0]*4 for _ in range(D//8)] for l in range(32)] for w in range(4)]
    for step in range(per_head):
        i0 = first_i + step*BM
        Qt = [0.0]*(BM*D); dOt = [0.0]*(BM*D)
        for r in range(BM):
            for c in range(D):
                Qt[swz(D, r, c)] = q[i0+r][c] if i0+r < Tq else 0.0
                dOt[swz(D, r, c)] = do[i0+r][c] if i0+r < Tq else 0.0
        dSs = [0.0]*(BN*LDS)
        for warp in range(4):
            wrow = warp*16
            sp = [[[0.0]*4 for _ in range(BM//8)] for l in range(32)]
            dp = [[[0.0]*4 for _ in range(BM//8)] for l in range(32)]
            for kk in range(D//16):
                addrA = [swz(D, wrow + (l & 15), kk*16 + (l >> 4)*8) for l in range(32)]
                ka = ldmatrix_x4(Ks, addrA); va = ldmatrix_x4(Vs, addrA)
                for n2 in range(BM//16):
                    off = [swz(D, n2*16 + ((l>>3) >> 1)*8 + (l&7), kk*16 + ((l>>3) & 1)*8) for l in range(32)]
                    qb = ldmatrix_x4(Qt, off); ob = ldmatrix_x4(dOt, off)
                    for (acc, A, Bm) in ((sp, ka, qb), (dp, va, ob)):
                        d0 = [acc[l][2*n2] for l in range(32)]; d1 = [acc[l][2*n2+1] for l in range(32)]
                        mma(d0, A, [Bm[l][0] for l in range(32)], [Bm[l][1] for l in range(32)])
                        mma(d1, A, [Bm[l][2] for l in range(32)], [Bm[l][3] for l in range(32)])
            masked = bias is not None or j0 + BN > Tk or (causal and j0 + wrow + 15 > i0)
            for l in range(32):
                g, t = l//4, l%4; key0 = j0 + wrow + g
                for n in range(BM//8):
                    for c in range(2):
                        qi = i0 + n*8 + 2*t + c; inn = qi < Tq
                        ls = lse[qi] if inn else NEG; Di = dvec[qi] if inn else 0.0; L2 = ls*L2E
                        for r in range(2):
                            e = 2*r + c; key = key0 + 8*r
                            x = sp[l][n][e]*sl2
                            if masked:
                                if (not inn) or key >= Tk or (causal and key > qi): x = NEG
                                elif bias is not None: x += bias[qi][key]*L2E
                            p = 0.0 if ls == NEG or x == NEG else 2**(x - L2)
                            sp[l][n][e] = p; dp[l][n][e] = p*(dp[l][n][e] - Di)*scale
            for kk in range(BM//16):
                pa = [[(sp[l][2*kk][0], sp[l][2*kk][1]), (sp[l][2*kk][2], sp[l][2*kk][3]), 
                        (sp[l][2*kk+1][0], sp[l][2*kk+1][1]),
                       (sp[l][2*kk+1][2], sp[l][2*kk+1][3])] for l in range(32)]
                da = [[(dp[l][2*kk][0], dp[l][2*kk][1]), (dp[l][2*kk][2], dp[l][2*kk][3]), 
                        (dp[l][2*kk+1][0], dp[l][2*kk+1][1]),
                       (dp[l][2*kk+1][2], dp[l][2*kk+1][3])] for l in range(32)]
                for d2 in range(D//16):
                    off = [swz(D, kk*16 + ((l>>3) & 1)*8 + (l&7), d2*16 + ((l>>3) >> 1)*8) for l in range(32)]
                    ob = ldmatrix_x4(dOt, off, True); qb = ldmatrix_x4(Qt, off, True)
                    for (acc, A, Bm) in ((dv[warp], pa, ob), (dk[warp], da, qb)):
                        d0 = [acc[l][2*d2] for l in range(32)]; d1 = [acc[l][2*d2+1] for l in range(32)]
                        mma(d0, A, [Bm[l][0] for l in range(32)], [Bm[l][1] for l in range(32)])
                        mma(d1, A, [Bm[l][2] for l in range(32)], [Bm[l][3] for l in range(32)])
            for l in range(32):
                g, t = l//4, l%4
                for n in range(BM//8):
                    for r in range(2):
                        base = (wrow + g + 8*r)*LDS + n*8 + 2*t
                        dSs[base], dSs[base+1] = dp[l][n][2*r], dp[l][n][2*r+1]
        for warp in range(4):
            rg = warp % RG; dsplit = warp // RG
            dq = [[[0.0]*4 for _ in range(DW//8)] for l in range(32)]
            for kk in range(BN//16):
                sa = ldmatrix_x4(
                        dSs, [(kk*16 + ((l>>3) >> 1)*8 + (l&7))*LDS + rg*16 + ((l>>3) & 1)*8 for l in range(32)], True)
                for d2 in range(DW//16):
                    kb = ldmatrix_x4(Ks, [swz(D, kk*16 + ((l>>3) & 1)*8 + (l&7), dsplit*DW + d2*16 + ((l>>3) >> 1)*8)
                                          for l in range(32)], True)
                    d0 = [dq[l][2*d2] for l in range(32)]; d1 = [dq[l][2*d2+1] for l in range(32)]
                    mma(d0, sa, [kb[l][0] for l in range(32)], [kb[l][1] for l in range(32)])
                    mma(d1, sa, [kb[l][2] for l in range(32)], [kb[l][3] for l in range(32)])
            for l in range(32):
                g, t = l//4, l%4
                for r in range(2):
                    qi = i0 + rg*16 + g + 8*r
                    if qi >= Tq: continue
                    for n in range(DW//8):
                        dq_acc[qi][dsplit*DW + n*8 + 2*t] += dq[l][n][2*r]
                        dq_acc[qi][dsplit*DW + n*8 + 2*t + 1] += dq[l][n][2*r+1]
    for warp in range(4):
        for l in range(32):
            g, t = l//4, l%4
            for r in range(2):
                key = j0 + warp*16 + g + 8*r
                if key >= Tk: continue
                for n in range(D//8):
                    for e in range(2):
                        dkv[0][key][n*8 + 2*t + e] = dk[warp][l][n][2*r + e]
                        dkv[1][key][n*8 + 2*t + e] = dv[warp][l][n][2*r + e]

def ref_bwd(q, k, v, do, bias, Tq, Tk, D, causal, scale):
    O, L = reference(q, k, v, bias, Tq, Tk, D, causal, scale)
    P = [[0.0]*Tk for _ in range(Tq)]
    for i in range(Tq):
        for j in range(Tk):
            if causal and j > i or L[i] == NEG: continue
            x = scale*sum(q[i][d]*k[j][d] for d in range(D)) + (bias[i][j] if bias else 0.0)
            P[i][j] = 0.0 if x == NEG else math.exp(x - L[i])
    dvec = [sum(O[i][d]*do[i][d] for d in range(D)) for i in range(Tq)]
    dP = [[sum(do[i][d]*v[j][d] for d in range(D)) for j in range(Tk)] for i in range(Tq)]
    dS = [[P[i][j]*(dP[i][j] - dvec[i])*scale for j in range(Tk)] for i in range(Tq)]
    dq = [[sum(dS[i][j]*k[j][d] for j in range(Tk)) for d in range(D)] for i in range(Tq)]
    dk = [[sum(dS[i][j]*q[i][d] for i in range(Tq)) for d in range(D)] for j in range(Tk)]
    dv = [[sum(P[i][j]*do[i][d] for i in range(Tq)) for d in range(D)] for j in range(Tk)]
    return O, L, dq, dk, dv

def run(Tq, Tk, D, causal, use_bias, seed):
    rnd = random.Random(seed)
    R = lambda n: [[rnd.gauss(0, 1) for _ in range(D)] for _ in range(n)]
    q, k, v, do = R(Tq), R(Tk), R(Tk), R(Tq)
    bias = None
    if use_bias:
        bias = [[(NEG if rnd.random() < 0.2 else rnd.gauss(0, 1)) for _ in range(Tk)] for _ in range(Tq)]
        for j in range(Tk): bias[1][j] = NEG  # a row with nothing visible
    scale = 1/math.sqrt(D)
    O, L, dq, dk, dv = ref_bwd(q, k, v, do, bias, Tq, Tk, D, causal, scale)
    err = 0.0
    for tile in range((Tq + 127)//128):
        out, lse = fwd_block(q, k, v, bias, Tq, Tk, D, causal, scale, tile)
        for (i, d), x in out.items(): err = max(err, abs(x - O[i][d]))
        for i, x in lse.items():
            if L[i] == NEG: assert x == NEG, (i, x)
            else: err = max(err, abs(x - L[i]))
    n_out = sum(1 for _ in range(Tq))
    dq_acc = [[0.0]*D for _ in range(Tq)]
    dkv = [[[float('nan')]*D for _ in range(Tk)] for _ in range(2)]
    for jt in range((Tk + 63)//64):
        bwd_block(q, k, v, do, O, L, bias, Tq, Tk, D, causal, scale, jt, dq_acc, dkv)
    gerr = 0.0
    for i in range(Tq):
        for d in range(D): gerr = max(gerr, abs(dq_acc[i][d] - dq[i][d]))
    for j in range(Tk):
        for d in range(D):
            gerr = max(gerr, abs(dkv[0][j][d] - dk[j][d]), abs(dkv[1][j][d] - dv[j][d]))
            assert dkv[0][j][d] == dkv[0][j][d], "dk not written"
    print(f"Tq {Tq} Tk {Tk} D {D} causal {causal} bias {use_bias}: fwd err {err:.2e} bwd err {gerr:.2e}")
    assert err < 1e-9 and gerr < 1e-9

import sys
cases = [(20, 70, 64, False, False), (130, 100, 64, True, False), (150, 90, 32, True, True), 
         (40, 150, 128, False, True), (70, 70, 128, True, True)]
for i, c in enumerate(cases): run(*c, seed=i)
print(f"ldmatrix phases with bank conflicts: {CONFLICTS[0]}")
assert CONFLICTS[0] == 0
print("model OK")
