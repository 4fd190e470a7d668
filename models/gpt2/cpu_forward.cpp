#include "cpu_forward.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gpt2::cpu {

namespace {

using Vec = std::vector<double>;

Vec to_double(const Tensor& t) {
  Vec out(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = t.at(i);
  return out;
}

void check_token(const Config& c, int32_t token, int64_t position) {
  if (token < 0 || token >= c.vocab) {
    throw std::invalid_argument("token " + std::to_string(token) + " at position " + std::to_string(position) +
                                " is outside the vocabulary [0, " + std::to_string(c.vocab) + ")");
  }
}

// Row r of a (rows, cols) matrix.
std::span<const double> row(const Vec& m, int64_t r, int64_t cols) { return {m.data() + r * cols, size_t(cols)}; }
std::span<double> row(Vec& m, int64_t r, int64_t cols) { return {m.data() + r * cols, size_t(cols)}; }

// s <- softmax(s), in place; the max is subtracted first so that exp() cannot overflow.
void softmax(std::span<double> s) {
  const double max_s = *std::max_element(s.begin(), s.end());
  double sum = 0.0;
  for (double& v : s) sum += v = std::exp(v - max_s);
  for (double& v : s) v /= sum;
}

// The MLP half of a block on `rows` rows of x (rows, C): x += fc_proj(gelu(fc(LN_2(x)))).
void mlp(const Model::Block& b, Vec& x, int64_t rows, int64_t C) {
  Vec h(x.size()), u(rows * 4 * C), y(x.size());
  for (int64_t t = 0; t < rows; ++t) layernorm(row(x, t, C), b.ln_2_w, b.ln_2_b, row(h, t, C));
  linear(h, b.fc_w, b.fc_b, u, rows, C, 4 * C);  // (rows, 4C)
  for (double& v : u) v = gelu_tanh(v);
  linear(u, b.fc_proj_w, b.fc_proj_b, y, rows, 4 * C, C);  // (rows, C)
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

// logits (rows, V) = LN_f(x) · wteᵀ: the LM head is the token embedding.
Vec lm_head(const Model& m, const Vec& x, int64_t rows) {
  const int64_t C = m.config.n_embd, V = m.config.vocab;
  Vec h(x.size()), logits(rows * V);
  for (int64_t t = 0; t < rows; ++t) layernorm(row(x, t, C), m.ln_f_w, m.ln_f_b, row(h, t, C));
  linear(h, m.wte, Vec(V, 0.0), logits, rows, C, V);
  return logits;
}

}  // namespace

void layernorm(std::span<const double> x, std::span<const double> gamma, std::span<const double> beta,
               std::span<double> y, double eps) {
  const double n = static_cast<double>(x.size());
  double mean = 0.0;
  for (double v : x) mean += v;
  mean /= n;
  double var = 0.0;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= n;
  const double rstd = 1.0 / std::sqrt(var + eps);
  for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) * rstd * gamma[i] + beta[i];
}

double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

void linear(std::span<const double> x, std::span<const double> w, std::span<const double> b, std::span<double> y,
            int64_t rows, int64_t in, int64_t out) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * in];  // (in)
    for (int64_t o = 0; o < out; ++o) {
      const double* wo = &w[o * in];  // row o of W: (in)
      double acc = b[o];
      for (int64_t i = 0; i < in; ++i) acc += xr[i] * wo[i];
      y[r * out + o] = acc;
    }
  }
}

Model::Model(const Weights& w) : config(w.config) {
  wte = to_double(w.wte);
  wpe = to_double(w.wpe);
  ln_f_w = to_double(w.ln_f_w);
  ln_f_b = to_double(w.ln_f_b);
  for (const Layer& l : w.layers) {
    blocks.push_back({to_double(l.ln_1_w), to_double(l.ln_1_b), to_double(l.attn_w), to_double(l.attn_b),
                      to_double(l.attn_proj_w), to_double(l.attn_proj_b), to_double(l.ln_2_w), to_double(l.ln_2_b),
                      to_double(l.fc_w), to_double(l.fc_b), to_double(l.fc_proj_w), to_double(l.fc_proj_b)});
  }
}

// All T positions at once: each op on a (T, ·) matrix; attention with a causal mask.
std::vector<double> Model::forward(std::span<const int32_t> tokens) const {
  const int64_t T = tokens.size(), C = config.n_embd, H = config.n_head, D = config.head_dim();
  if (T == 0) throw std::invalid_argument("forward: no tokens");
  if (T > config.n_ctx) {
    throw std::invalid_argument("forward: " + std::to_string(T) + " tokens, more than the context of " +
                                std::to_string(config.n_ctx) + " positions");
  }

  Vec x(T * C);  // (T, C) = wte[token] + wpe[position]
  for (int64_t t = 0; t < T; ++t) {
    check_token(config, tokens[t], t);
    for (int64_t i = 0; i < C; ++i) x[t * C + i] = wte[tokens[t] * C + i] + wpe[t * C + i];
  }

  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  Vec h(T * C), qkv(T * 3 * C), att(T * C), y(T * C), p(T);
  for (const Block& b : blocks) {
    for (int64_t t = 0; t < T; ++t) layernorm(row(x, t, C), b.ln_1_w, b.ln_1_b, row(h, t, C));
    linear(h, b.attn_w, b.attn_b, qkv, T, C, 3 * C);  // (T, 3C): row t is [q | k | v]

    // Causal attention per head: query i attends to keys 0..i. Head hd is columns
    // hd*D .. hd*D+D-1 of q, of k (offset C) and of v (offset 2C).
    for (int64_t hd = 0; hd < H; ++hd) {
      for (int64_t i = 0; i < T; ++i) {
        const double* q = &qkv[i * 3 * C + hd * D];
        for (int64_t j = 0; j <= i; ++j) {
          const double* k = &qkv[j * 3 * C + C + hd * D];
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += q[d] * k[d];
          p[j] = dot * scale;
        }
        softmax(std::span<double>(p.data(), size_t(i + 1)));
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0.0;
          for (int64_t j = 0; j <= i; ++j) acc += p[j] * qkv[j * 3 * C + 2 * C + hd * D + d];
          att[i * C + hd * D + d] = acc;
        }
      }
    }
    linear(att, b.attn_proj_w, b.attn_proj_b, y, T, C, C);
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    mlp(b, x, T, C);
  }
  return lm_head(*this, x, T);
}

std::vector<double> forward(const Weights& w, std::span<const int32_t> tokens) { return Model(w).forward(tokens); }

// --- Decoder ------------------------------------------------------------------------------

Decoder::Decoder(const Model& model) : m_(model), k_(model.blocks.size()), v_(model.blocks.size()) {}

std::vector<double> Decoder::prefill(std::span<const int32_t> prompt) {
  if (prompt.empty()) throw std::invalid_argument("prefill: empty prompt");
  std::vector<double> logits;
  for (int32_t token : prompt) logits = decode(token);  // one position at a time, filling the cache
  return logits;
}

// One position: every op on a single row; attention over the cached keys and values.
std::vector<double> Decoder::decode(int32_t token) {
  const Config& c = m_.config;
  const int64_t C = c.n_embd, H = c.n_head, D = c.head_dim();
  if (pos_ >= c.n_ctx)
    throw std::invalid_argument("decode: the context of " + std::to_string(c.n_ctx) + " positions is full");
  check_token(c, token, pos_);
  const int64_t n = pos_ + 1;  // positions this token attends to, itself included

  Vec x(C);  // (C) = wte[token] + wpe[pos]
  for (int64_t i = 0; i < C; ++i) x[i] = m_.wte[token * C + i] + m_.wpe[pos_ * C + i];

  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  Vec h(C), qkv(3 * C), att(C), y(C), s(n);
  for (size_t l = 0; l < m_.blocks.size(); ++l) {
    const Model::Block& b = m_.blocks[l];
    layernorm(x, b.ln_1_w, b.ln_1_b, h);
    linear(h, b.attn_w, b.attn_b, qkv, 1, C, 3 * C);  // (3C): [q | k | v]
    // Append this position's key and value: the cache k_[l], v_[l] becomes (n, C).
    k_[l].insert(k_[l].end(), qkv.begin() + C, qkv.begin() + 2 * C);
    v_[l].insert(v_[l].end(), qkv.begin() + 2 * C, qkv.end());

    for (int64_t hd = 0; hd < H; ++hd) {
      for (int64_t j = 0; j < n; ++j) {  // scores against every cached key
        double dot = 0.0;
        for (int64_t d = 0; d < D; ++d) dot += qkv[hd * D + d] * k_[l][j * C + hd * D + d];
        s[j] = dot * scale;
      }
      softmax(s);
      for (int64_t d = 0; d < D; ++d) {
        double acc = 0.0;
        for (int64_t j = 0; j < n; ++j) acc += s[j] * v_[l][j * C + hd * D + d];
        att[hd * D + d] = acc;
      }
    }
    linear(att, b.attn_proj_w, b.attn_proj_b, y, 1, C, C);
    for (int64_t i = 0; i < C; ++i) x[i] += y[i];
    mlp(b, x, 1, C);
  }
  ++pos_;
  return lm_head(m_, x, 1);
}

}  // namespace gpt2::cpu
