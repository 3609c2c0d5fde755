// Fused CPU kernel for TPAR's per-link work in one recursive step (paper Eqs. 5, 7 and the sum of 8):
//
//   z_e     = b + w . ReLU(A_node[src_e] + A_rel[rel_e] + A_query[q_e] + A_time[dt_e])      (Eq. 7, split)
//   alpha_e = sigmoid(z_e)
//   out[dst_e] += g[src_e] * alpha_e * (h[src_e] + H_rel[rel_e] + H_time[dt_e])              (Eqs. 5, 8)
//
// g: an optional per-node gate (1 when absent): a learned top-K priority weights the messages its kept
// entities send, so that the priority gets gradients (tpar.model.network).
// Links are read straight from the time-sorted CSR index: node p (of query q) owns index edges
// start[p] .. end[p]. Nodes of different queries are disjoint, so threads that own whole queries never
// write the same node row; tables shared by all queries (relations, time, w, b) get per-thread gradient
// buffers that are summed at the end. Nothing of size links x d is ever stored: the backward pass
// recomputes messages and attention.
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <cmath>
#include <vector>

namespace {

// Node p's range is already cut at t < t_q when extrapolating. With `own` (B x 4: s, r, answer, t_q) the
// query's own fact and its inverse are skipped (interpolation). With `rep_next` / `rep_prev` (per edge: the
// time of the m-th later / earlier repeat of the same fact, tpar.graph.index.repeat_bounds) only the m repeats
// of a fact nearest t_q on each side are walked (LinkLimits.repeats); `raw_time` holds the edges' times and
// `q_raw` the questions' t_q in the data's own units.
struct Csr {
  const int64_t *start, *end, *node_e, *node_ptr, *ix_dst, *ix_rel, *ix_time, *qt, *own, *pos;
  const int64_t *rep_next, *rep_prev, *raw_time, *q_raw;
  int64_t E, R;
  inline bool dropped_repeat(int64_t q, int64_t e) const {
    if (!rep_next) return false;
    const int64_t t = raw_time[e], tq = q_raw[q];
    return (t < tq && rep_next[e] < tq) || (t > tq && rep_prev[e] > tq);
  }
  inline bool own_fact(int64_t q, int64_t src_e, int64_t r, int64_t dst_e, int64_t t) const {
    if (!own) return false;
    const int64_t *o = own + q * 4;
    if (t != o[3]) return false;
    const int64_t r_inv = o[1] < R ? o[1] + R : o[1] - R;
    return (src_e == o[0] && r == o[1] && dst_e == o[2]) || (src_e == o[2] && r == r_inv && dst_e == o[0]);
  }
};

inline const int64_t* ptr_or_null(const at::Tensor& x) { return x.numel() ? x.data_ptr<int64_t>() : nullptr; }

Csr make_csr(const at::Tensor& start, const at::Tensor& end, const at::Tensor& node_e, const at::Tensor& node_ptr,
             const at::Tensor& ix_dst, const at::Tensor& ix_rel, const at::Tensor& ix_time, const at::Tensor& qt,
             const at::Tensor& own, const at::Tensor& pos, const at::Tensor& rep_next, const at::Tensor& rep_prev,
             const at::Tensor& raw_time, const at::Tensor& q_raw, int64_t E, int64_t R) {
  const bool rep = rep_next.numel() > 0;
  TORCH_CHECK(!rep || (rep_prev.numel() == rep_next.numel() && raw_time.numel() == rep_next.numel() && q_raw.numel() > 0),
              "repeat bounds, edge times and question times must come together");
  return Csr{start.data_ptr<int64_t>(), end.data_ptr<int64_t>(), node_e.data_ptr<int64_t>(),
             node_ptr.data_ptr<int64_t>(), ix_dst.data_ptr<int64_t>(), ix_rel.data_ptr<int64_t>(),
             ix_time.data_ptr<int64_t>(), ptr_or_null(qt), ptr_or_null(own), ptr_or_null(pos),
             rep ? rep_next.data_ptr<int64_t>() : nullptr, rep ? rep_prev.data_ptr<int64_t>() : nullptr,
             rep ? raw_time.data_ptr<int64_t>() : nullptr, rep ? q_raw.data_ptr<int64_t>() : nullptr, E, R};
}

template <typename scalar_t>
inline scalar_t attention(const scalar_t* an, const scalar_t* ar, const scalar_t* aq, const scalar_t* at_,
                          const scalar_t* W, scalar_t bias, int64_t da) {
  scalar_t z = bias;  // Eq. 7: sigma(b + w . ReLU(per-node + per-relation + per-query + per-dt terms))
  for (int64_t k = 0; k < da; ++k) {
    const scalar_t x = an[k] + ar[k] + aq[k] + at_[k];
    if (x > 0) z += W[k] * x;
  }
  return scalar_t(1) / (scalar_t(1) + std::exp(-z));
}

// Calls f(p, r, dst_e, t) for every admitted link of query q: p the frontier node it leaves, r its
// relation, dst_e the entity it enters, t its row in the per-dt tables (link time - q's offset).
template <typename F>
inline void for_each_link(const Csr& c, int64_t q, F&& f) {
  const int64_t tq = c.qt[q];
  for (int64_t p = c.node_ptr[q]; p < c.node_ptr[q + 1]; ++p) {
    const int64_t src_e = c.node_e[p];
    for (int64_t e = c.start[p]; e < c.end[p]; ++e) {
      const int64_t r = c.ix_rel[e], dst_e = c.ix_dst[e];
      if (c.own_fact(q, src_e, r, dst_e, c.ix_time[e]) || c.dropped_repeat(q, e)) continue;
      f(p, r, dst_e, c.ix_time[e] - tq);
    }
  }
}

template <typename scalar_t>
void csr_forward_impl(const Csr& c, int64_t B, const at::Tensor& h, const at::Tensor& a_node, const at::Tensor& h_rel,
                      const at::Tensor& a_rel, const at::Tensor& a_query, const at::Tensor& h_time,
                      const at::Tensor& a_time, const at::Tensor& w, const at::Tensor& b, const at::Tensor& gate,
                      at::Tensor& out) {
  const int64_t d = h.size(1), da = a_node.size(1);
  const scalar_t* GATE = gate.numel() ? gate.data_ptr<scalar_t>() : nullptr;  // per-node factor on alpha
  const scalar_t *H = h.data_ptr<scalar_t>(), *AN = a_node.data_ptr<scalar_t>(), *HR = h_rel.data_ptr<scalar_t>(),
                 *AR = a_rel.data_ptr<scalar_t>(), *AQ = a_query.data_ptr<scalar_t>(), *HT = h_time.data_ptr<scalar_t>(),
                 *AT = a_time.data_ptr<scalar_t>(), *W = w.data_ptr<scalar_t>();
  const scalar_t bias = b.data_ptr<scalar_t>()[0];
  scalar_t* O = out.data_ptr<scalar_t>();
  at::parallel_for(0, B, 1, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const scalar_t* aq = AQ + q * da;
      const int64_t base = q * c.E;
      for_each_link(c, q, [&](int64_t p, int64_t r, int64_t dst_e, int64_t t) {
        scalar_t al = attention(AN + p * da, AR + r * da, aq, AT + t * da, W, bias, da);
        if (GATE) al *= GATE[p];
        const scalar_t* __restrict__ hs = H + p * d;
        const scalar_t* __restrict__ hr = HR + r * d;
        const scalar_t* __restrict__ ht = HT + t * d;
        scalar_t* __restrict__ o = O + c.pos[base + dst_e] * d;
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) o[j] += al * (hs[j] + hr[j] + ht[j]);
      });
    }
  });
}

template <typename scalar_t>
void csr_backward_impl(const Csr& c, int64_t B, const at::Tensor& grad_out, const at::Tensor& h,
                       const at::Tensor& a_node, const at::Tensor& h_rel, const at::Tensor& a_rel,
                       const at::Tensor& a_query, const at::Tensor& h_time, const at::Tensor& a_time,
                       const at::Tensor& w, const at::Tensor& b, const at::Tensor& gate, at::Tensor& g_h,
                       at::Tensor& g_anode, at::Tensor& g_hrel, at::Tensor& g_arel, at::Tensor& g_aquery,
                       at::Tensor& g_htime, at::Tensor& g_atime, at::Tensor& g_w, at::Tensor& g_b,
                       at::Tensor& g_gate) {
  const int64_t d = h.size(1), da = a_node.size(1), nr = h_rel.size(0), nt = h_time.size(0);
  const scalar_t *G = grad_out.data_ptr<scalar_t>(), *H = h.data_ptr<scalar_t>(), *AN = a_node.data_ptr<scalar_t>(),
                 *HR = h_rel.data_ptr<scalar_t>(), *AR = a_rel.data_ptr<scalar_t>(), *AQ = a_query.data_ptr<scalar_t>(),
                 *HT = h_time.data_ptr<scalar_t>(), *AT = a_time.data_ptr<scalar_t>(), *W = w.data_ptr<scalar_t>();
  const scalar_t bias = b.data_ptr<scalar_t>()[0];
  scalar_t *GH = g_h.data_ptr<scalar_t>(), *GAN = g_anode.data_ptr<scalar_t>(), *GAQ = g_aquery.data_ptr<scalar_t>();
  const scalar_t* GATE = gate.numel() ? gate.data_ptr<scalar_t>() : nullptr;
  scalar_t* GG = gate.numel() ? g_gate.data_ptr<scalar_t>() : nullptr;  // nodes belong to one query: no race
  const int64_t nthreads = at::get_num_threads();
  const int64_t width = nr * d + nr * da + nt * d + nt * da + da + 1;
  std::vector<scalar_t> local(static_cast<size_t>(nthreads * width), scalar_t(0));
  at::parallel_for(0, B, 1, [&](int64_t q0, int64_t q1) {
    scalar_t* L = local.data() + at::get_thread_num() * width;
    scalar_t *LHR = L, *LAR = LHR + nr * d, *LHT = LAR + nr * da, *LAT = LHT + nt * d, *LW = LAT + nt * da,
             *LB = LW + da;
    for (int64_t q = q0; q < q1; ++q) {
      const scalar_t* aq = AQ + q * da;
      scalar_t* gaq = GAQ + q * da;
      const int64_t base = q * c.E;
      for_each_link(c, q, [&](int64_t p, int64_t r, int64_t dst_e, int64_t t) {
        const scalar_t *an = AN + p * da, *ar = AR + r * da, *at_ = AT + t * da;
        const scalar_t a0 = attention(an, ar, aq, at_, W, bias, da);  // alpha of Eq. 7
        const scalar_t gp = GATE ? GATE[p] : scalar_t(1);
        const scalar_t al = a0 * gp;                                          // the weight the message got
        const scalar_t* __restrict__ g = G + c.pos[base + dst_e] * d;
        const scalar_t* __restrict__ hs = H + p * d;
        const scalar_t* __restrict__ hr = HR + r * d;
        const scalar_t* __restrict__ ht = HT + t * d;
        scalar_t galpha = 0;
#pragma omp simd reduction(+ : galpha)
        for (int64_t j = 0; j < d; ++j) galpha += g[j] * (hs[j] + hr[j] + ht[j]);
        scalar_t* __restrict__ gh = GH + p * d;
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) gh[j] += al * g[j];
        scalar_t* __restrict__ ghr = LHR + r * d;
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) ghr[j] += al * g[j];
        scalar_t* __restrict__ ght = LHT + t * d;
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) ght[j] += al * g[j];
        if (GG) GG[p] += galpha * a0;
        const scalar_t gz = galpha * gp * a0 * (scalar_t(1) - a0);  // through the sigmoid of Eq. 7
        if (gz == scalar_t(0)) return;
        *LB += gz;
        scalar_t *gan = GAN + p * da, *gar = LAR + r * da, *gat = LAT + t * da;
        for (int64_t k = 0; k < da; ++k) {
          const scalar_t x = an[k] + ar[k] + aq[k] + at_[k];
          if (x > 0) {
            LW[k] += gz * x;
            const scalar_t gx = gz * W[k];
            gan[k] += gx;
            gar[k] += gx;
            gaq[k] += gx;
            gat[k] += gx;
          }
        }
      });
    }
  });
  scalar_t *GHR = g_hrel.data_ptr<scalar_t>(), *GAR = g_arel.data_ptr<scalar_t>(), *GHT = g_htime.data_ptr<scalar_t>(),
           *GAT = g_atime.data_ptr<scalar_t>(), *GW = g_w.data_ptr<scalar_t>(), *GB = g_b.data_ptr<scalar_t>();
  for (int64_t th = 0; th < nthreads; ++th) {
    const scalar_t* L = local.data() + th * width;
    int64_t o = 0;
    for (int64_t i = 0; i < nr * d; ++i) GHR[i] += L[o++];
    for (int64_t i = 0; i < nr * da; ++i) GAR[i] += L[o++];
    for (int64_t i = 0; i < nt * d; ++i) GHT[i] += L[o++];
    for (int64_t i = 0; i < nt * da; ++i) GAT[i] += L[o++];
    for (int64_t i = 0; i < da; ++i) GW[i] += L[o++];
    GB[0] += L[o++];
  }
}

}  // namespace


// Marks every (query, entity) that a link from the frontier (or a self-loop) reaches: mark[q*E + e] = 1.
at::Tensor csr_mark(at::Tensor start, at::Tensor end, at::Tensor node_e, at::Tensor node_ptr, at::Tensor ix_dst,
                    at::Tensor ix_rel, at::Tensor ix_time, at::Tensor own, at::Tensor rep_next, at::Tensor rep_prev,
                    at::Tensor raw_time, at::Tensor q_raw, int64_t E, int64_t R) {
  const int64_t B = node_ptr.size(0) - 1;
  auto mark = at::zeros({B * E}, start.options().dtype(at::kBool));
  auto empty = at::empty({0}, start.options());
  const Csr c = make_csr(start, end, node_e, node_ptr, ix_dst, ix_rel, ix_time, empty, own, empty, rep_next, rep_prev,
                         raw_time, q_raw, E, R);
  bool* M = mark.data_ptr<bool>();
  at::parallel_for(0, B, 1, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t base = q * E;
      for (int64_t p = c.node_ptr[q]; p < c.node_ptr[q + 1]; ++p) {
        const int64_t src_e = c.node_e[p];
        M[base + src_e] = true;  // self-loop
        for (int64_t e = c.start[p]; e < c.end[p]; ++e) {
          if (c.own_fact(q, src_e, c.ix_rel[e], c.ix_dst[e], c.ix_time[e]) || c.dropped_repeat(q, e)) continue;
          M[base + c.ix_dst[e]] = true;
        }
      }
    }
  });
  return mark;
}

at::Tensor csr_forward(at::Tensor h, at::Tensor a_node, at::Tensor h_rel, at::Tensor a_rel, at::Tensor a_query,
                       at::Tensor h_time, at::Tensor a_time, at::Tensor w, at::Tensor b, at::Tensor gate, at::Tensor start,
                       at::Tensor end, at::Tensor node_e, at::Tensor node_ptr, at::Tensor ix_dst, at::Tensor ix_rel,
                       at::Tensor ix_time, at::Tensor qt, at::Tensor own, at::Tensor pos, at::Tensor rep_next,
                       at::Tensor rep_prev, at::Tensor raw_time, at::Tensor q_raw, int64_t E, int64_t R,
                       int64_t num_out) {
  const Csr c = make_csr(start, end, node_e, node_ptr, ix_dst, ix_rel, ix_time, qt, own, pos, rep_next, rep_prev,
                         raw_time, q_raw, E, R);
  auto out = at::zeros({num_out, h.size(1)}, h.options());
  AT_DISPATCH_FLOATING_TYPES(h.scalar_type(), "csr_forward", [&] {
    csr_forward_impl<scalar_t>(c, node_ptr.size(0) - 1, h, a_node, h_rel, a_rel, a_query, h_time, a_time, w, b, gate,
                               out);
  });
  return out;
}

std::vector<at::Tensor> csr_backward(at::Tensor grad_out, at::Tensor h, at::Tensor a_node, at::Tensor h_rel,
                                     at::Tensor a_rel, at::Tensor a_query, at::Tensor h_time, at::Tensor a_time,
                                     at::Tensor w, at::Tensor b, at::Tensor gate, at::Tensor start, at::Tensor end,
                                     at::Tensor node_e,
                                     at::Tensor node_ptr, at::Tensor ix_dst, at::Tensor ix_rel, at::Tensor ix_time,
                                     at::Tensor qt, at::Tensor own, at::Tensor pos, at::Tensor rep_next,
                                     at::Tensor rep_prev, at::Tensor raw_time, at::Tensor q_raw, int64_t E, int64_t R) {
  grad_out = grad_out.contiguous();
  const Csr c = make_csr(start, end, node_e, node_ptr, ix_dst, ix_rel, ix_time, qt, own, pos, rep_next, rep_prev,
                         raw_time, q_raw, E, R);
  auto g_h = at::zeros_like(h), g_anode = at::zeros_like(a_node), g_hrel = at::zeros_like(h_rel),
       g_arel = at::zeros_like(a_rel), g_aquery = at::zeros_like(a_query), g_htime = at::zeros_like(h_time),
       g_atime = at::zeros_like(a_time), g_w = at::zeros_like(w), g_b = at::zeros({1}, h.options()),
       g_gate = at::zeros_like(gate);
  AT_DISPATCH_FLOATING_TYPES(h.scalar_type(), "csr_backward", [&] {
    csr_backward_impl<scalar_t>(c, node_ptr.size(0) - 1, grad_out, h, a_node, h_rel, a_rel, a_query, h_time, a_time,
                                w, b, gate, g_h, g_anode, g_hrel, g_arel, g_aquery, g_htime, g_atime, g_w, g_b,
                                g_gate);
  });
  return {g_h, g_anode, g_hrel, g_arel, g_aquery, g_htime, g_atime, g_w, g_b, g_gate};
}


// The GRU gate between steps (tpar.model.network; ModelConfig.gate):
//   r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z), n = tanh(gi_n + r * gh_n), out = n + z * (h_prev - n)
// with gi = x W_ih^T + b_ih for every node (P x 3d). A node reached for the first time at this step has
// h_prev = 0, so its gh is just b_hh: gh is computed (by the caller, one matmul) only for the P_old nodes
// that existed before; old_row[p] is node p's row among them, or -1 for a new node. The sigmoid and tanh
// stay in ATen's vectorised ops (tpar.model.kernels._GateStep); these passes do the rest.

// gi[:, :2d] += gh[:, :2d] in place; returns gh_n (P x d).
at::Tensor gate_pre(at::Tensor gi, at::Tensor gh_old, at::Tensor old_row, at::Tensor b_hh) {
  TORCH_CHECK(gi.is_contiguous() && gh_old.is_contiguous() && b_hh.is_contiguous(), "gate_pre: contiguous inputs");
  const int64_t P = gi.size(0), d = gi.size(1) / 3;
  auto ghn = at::empty({P, d}, gi.options());
  const int64_t* OLD = old_row.data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES(gi.scalar_type(), "gate_pre", [&] {
    scalar_t *GI = gi.data_ptr<scalar_t>(), *N = ghn.data_ptr<scalar_t>();
    const scalar_t *GH = gh_old.data_ptr<scalar_t>(), *BH = b_hh.data_ptr<scalar_t>();
    at::parallel_for(0, P, 256, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t o = OLD[p];
        const scalar_t* gh = o >= 0 ? GH + o * 3 * d : BH;
        scalar_t* g = GI + p * 3 * d;
        scalar_t* n = N + p * d;
        for (int64_t j = 0; j < 2 * d; ++j) g[j] += gh[j];
        for (int64_t j = 0; j < d; ++j) n[j] = gh[2 * d + j];
      }
    });
  });
  return ghn;
}

// out = n + z * (h_prev - n); rz holds r, z in its first 2d columns (row stride 3d).
at::Tensor gate_mix(at::Tensor n, at::Tensor rz, at::Tensor h_old, at::Tensor old_row) {
  TORCH_CHECK(n.is_contiguous() && rz.is_contiguous() && h_old.is_contiguous(), "gate_mix: contiguous inputs");
  const int64_t P = n.size(0), d = n.size(1), stride = rz.size(1);
  auto out = at::empty({P, d}, n.options());
  const int64_t* OLD = old_row.data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES(n.scalar_type(), "gate_mix", [&] {
    const scalar_t *N = n.data_ptr<scalar_t>(), *RZ = rz.data_ptr<scalar_t>(), *HO = h_old.data_ptr<scalar_t>();
    scalar_t* O = out.data_ptr<scalar_t>();
    at::parallel_for(0, P, 256, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t o = OLD[p];
        const scalar_t *np = N + p * d, *z = RZ + p * stride + d;
        scalar_t* op = O + p * d;
        if (o >= 0) {
          const scalar_t* hp = HO + o * d;
          for (int64_t j = 0; j < d; ++j) op[j] = np[j] + z[j] * (hp[j] - np[j]);
        } else {
          for (int64_t j = 0; j < d; ++j) op[j] = np[j] - z[j] * np[j];
        }
      }
    });
  });
  return out;
}

// Backward of the gate: d(gi) for every node (P x 3d), d(gh) of the old nodes (P_old x 3d), the gradient
// reaching h_prev directly (z * grad) for the old nodes (P_old x d), and d(b_hh) (3d), which also collects
// the new nodes' share. No transcendental: r, z, n are the forward's.
std::vector<at::Tensor> gate_backward(at::Tensor grad, at::Tensor rz, at::Tensor n, at::Tensor ghn,
                                      at::Tensor old_row, at::Tensor h_old) {
  grad = grad.contiguous();
  TORCH_CHECK(rz.is_contiguous() && n.is_contiguous() && ghn.is_contiguous() && h_old.is_contiguous(),
              "gate_backward: contiguous inputs");
  const int64_t P = n.size(0), d = n.size(1), stride = rz.size(1), P_old = h_old.size(0);
  auto g_gi = at::empty({P, 3 * d}, n.options());
  auto g_gh = at::empty({P_old, 3 * d}, n.options());
  auto g_hp = at::empty({P_old, d}, n.options());
  const int64_t* OLD = old_row.data_ptr<int64_t>();
  const int threads = at::get_num_threads();
  auto g_bh_t = at::zeros({threads, 3 * d}, n.options());  // the new nodes' d(b_hh), per thread
  AT_DISPATCH_FLOATING_TYPES(n.scalar_type(), "gate_backward", [&] {
    const scalar_t *G = grad.data_ptr<scalar_t>(), *RZ = rz.data_ptr<scalar_t>(), *N = n.data_ptr<scalar_t>(),
                   *GHN = ghn.data_ptr<scalar_t>(), *HO = h_old.data_ptr<scalar_t>();
    scalar_t *DGI = g_gi.data_ptr<scalar_t>(), *DGH = g_gh.data_ptr<scalar_t>(), *DHP = g_hp.data_ptr<scalar_t>(),
             *DBH = g_bh_t.data_ptr<scalar_t>();
    at::parallel_for(0, P, 256, [&](int64_t p0, int64_t p1) {
      scalar_t* dbh = DBH + at::get_thread_num() * 3 * d;
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t o = OLD[p];
        const scalar_t *r = RZ + p * stride, *z = r + d, *np = N + p * d, *ghn_p = GHN + p * d, *gp = G + p * d;
        const scalar_t* hp = o >= 0 ? HO + o * d : nullptr;
        scalar_t* dgi = DGI + p * 3 * d;
        for (int64_t j = 0; j < d; ++j) {
          const scalar_t h_prev = hp ? hp[j] : scalar_t(0);
          const scalar_t dn = gp[j] * (scalar_t(1) - z[j]) * (scalar_t(1) - np[j] * np[j]);
          dgi[j] = dn * ghn_p[j] * r[j] * (scalar_t(1) - r[j]);
          dgi[d + j] = gp[j] * (h_prev - np[j]) * z[j] * (scalar_t(1) - z[j]);
          dgi[2 * d + j] = dn;
        }
        if (o >= 0) {
          scalar_t* dgh = DGH + o * 3 * d;
          for (int64_t j = 0; j < 2 * d; ++j) dgh[j] = dgi[j];
          for (int64_t j = 0; j < d; ++j) { dgh[2 * d + j] = dgi[2 * d + j] * r[j]; DHP[o * d + j] = gp[j] * z[j]; }
        } else {
          for (int64_t j = 0; j < 2 * d; ++j) dbh[j] += dgi[j];
          for (int64_t j = 0; j < d; ++j) dbh[2 * d + j] += dgi[2 * d + j] * r[j];
        }
      }
    });
  });
  auto g_bh = g_bh_t.sum(0) + g_gh.sum(0);
  return {g_gi, g_gh, g_hp, g_bh};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("csr_mark", &csr_mark, "mark (query, entity) pairs reached by one step (CPU)");
  m.def("csr_forward", &csr_forward, "TPAR fused step reading links from the CSR index (CPU)");
  m.def("csr_backward", &csr_backward, "backward of csr_forward (CPU)");
  m.def("gate_pre", &gate_pre, "GRU gate between steps: old nodes' W_hh h_prev into the pre-activations (CPU)");
  m.def("gate_mix", &gate_mix, "GRU gate between steps: the new state from n, z and h_prev (CPU)");
  m.def("gate_backward", &gate_backward, "backward of gate_forward (CPU)");
}
