// CrfImpl and crf_constraints: see crf.h.
#include "models/heads/crf.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <torch/nn/init.h>

namespace unif::models {

namespace {

// A tag's scheme prefix ('B', 'I', 'E', 'S' or 'O') and entity type; prefix 0 when it has none.
struct Tag {
  char prefix = 0;
  std::string type;
};

Tag parse_tag(const std::string& name) {
  if (name == "O") return {'O', ""};
  if (name.size() < 3 || (name[1] != '-' && name[1] != '_')) return {};
  char p = name[0];
  if (p == 'L') p = 'E';  // BILOU's Last and Unit
  if (p == 'U') p = 'S';
  if (p != 'B' && p != 'I' && p != 'E' && p != 'S') return {};
  return {p, name.substr(2)};
}

}  // namespace

std::optional<CrfConstraints> crf_constraints(const std::vector<std::string>& tags) {
  std::vector<Tag> parsed;
  bool bioes = false;
  for (const auto& name : tags) {
    parsed.push_back(parse_tag(name));
    if (parsed.back().prefix == 0) return std::nullopt;
    bioes = bioes || parsed.back().prefix == 'E' || parsed.back().prefix == 'S';
  }
  const auto n = static_cast<int64_t>(tags.size());
  CrfConstraints c;
  c.scheme = bioes ? "BIOES" : "BIO";
  c.transitions = torch::zeros({n, n}, torch::kBool);
  c.start = torch::zeros({n}, torch::kBool);
  c.end = torch::zeros({n}, torch::kBool);
  auto t = c.transitions.accessor<bool, 2>();
  auto s = c.start.accessor<bool, 1>();
  auto e = c.end.accessor<bool, 1>();
  // Whether `to` may follow `from` (nullptr: the sequence's start).
  auto follows = [&](const Tag* from, const Tag& to) {
    const bool inside = from != nullptr && (from->prefix == 'B' || from->prefix == 'I');
    if (to.prefix == 'I' || to.prefix == 'E') {
      // Inside an entity: it continues one of the same type.
      if (!inside || from->type != to.type) return false;
      return true;
    }
    // O, B-X, S-X: under BIOES an open entity must end first (E-X or S-X); BIO closes it implicitly.
    return !(bioes && inside);
  };
  for (int64_t j = 0; j < n; ++j) {
    const Tag& to = parsed[static_cast<size_t>(j)];
    s[j] = follows(nullptr, to);
    e[j] = !(bioes && (to.prefix == 'B' || to.prefix == 'I'));
    for (int64_t i = 0; i < n; ++i) t[i][j] = follows(&parsed[static_cast<size_t>(i)], to);
  }
  // BIO: I-X may also follow I-X of its type and B-X (done above); nothing else differs.
  return c;
}

CrfImpl::CrfImpl(int64_t num_tags) {
  if (num_tags < 1) throw std::invalid_argument("a CRF needs at least one tag, got " + std::to_string(num_tags));
  transitions = register_parameter("transitions", torch::empty({num_tags, num_tags}));
  start_transitions = register_parameter("start_transitions", torch::empty({num_tags}));
  end_transitions = register_parameter("end_transitions", torch::empty({num_tags}));
  torch::NoGradGuard no_grad;
  torch::nn::init::uniform_(start_transitions, -0.1, 0.1);
  torch::nn::init::uniform_(end_transitions, -0.1, 0.1);
  torch::nn::init::uniform_(transitions, -0.1, 0.1);
}

void CrfImpl::constrain(const CrfConstraints& c) {
  const auto n = num_tags();
  if (!c.transitions.sizes().equals({n, n}) || !c.start.sizes().equals({n}) || !c.end.sizes().equals({n}))
    throw std::invalid_argument("CRF constraints of another tag count than the CRF's " + std::to_string(n));
  allowed_transitions_ = c.transitions.to(transitions.device());
  allowed_start_ = c.start.to(transitions.device());
  allowed_end_ = c.end.to(transitions.device());
  scheme_ = c.scheme;
  torch::NoGradGuard no_grad;
  transitions.masked_fill_(allowed_transitions_.logical_not(), kForbidden);
  start_transitions.masked_fill_(allowed_start_.logical_not(), kForbidden);
  end_transitions.masked_fill_(allowed_end_.logical_not(), kForbidden);
}

std::optional<CrfConstraints> CrfImpl::constraints() const {
  if (!constrained()) return std::nullopt;
  return CrfConstraints{allowed_transitions_, allowed_start_, allowed_end_, scheme_};
}

torch::Tensor CrfImpl::effective(const torch::Tensor& p, const torch::Tensor& allowed) const {
  if (!allowed.defined()) return p;
  return torch::where(allowed.to(p.device()), p, torch::full({}, kForbidden, p.options()));
}

torch::Tensor CrfImpl::log_likelihood(const torch::Tensor& emissions, const torch::Tensor& tags,
                                      const torch::Tensor& mask) const {
  if (emissions.dim() != 3 || emissions.size(2) != num_tags())
    throw std::invalid_argument("CRF emissions must be (B, T, " + std::to_string(num_tags()) + ")");
  const int64_t b = emissions.size(0), t = emissions.size(1);
  if (t == 0) return torch::zeros({b}, emissions.options());
  const auto trans = effective(transitions, allowed_transitions_).to(emissions.scalar_type());
  const auto start = effective(start_transitions, allowed_start_).to(emissions.scalar_type());
  const auto end = effective(end_transitions, allowed_end_).to(emissions.scalar_type());
  const auto m = mask.to(torch::kBool);
  const auto mf = m.to(emissions.scalar_type());
  const auto y = torch::where(m, tags, torch::zeros_like(tags));  // a valid index everywhere
  const auto lengths = m.sum(1);                                  // (B)

  // The gold path: start + emissions + transitions along the mask + end at the last real tag.
  auto gold = start.index_select(0, y.select(1, 0)) + (emissions.gather(2, y.unsqueeze(2)).squeeze(2) * mf).sum(1);
  if (t > 1) {
    const auto moves = trans.index({y.narrow(1, 0, t - 1), y.narrow(1, 1, t - 1)});  // (B, T-1)
    gold = gold + (moves * mf.narrow(1, 1, t - 1)).sum(1);
  }
  const auto last = y.gather(1, (lengths - 1).clamp_min(0).unsqueeze(1)).squeeze(1);
  gold = gold + end.index_select(0, last);

  // The partition function: alpha_t(j) = logsumexp_i(alpha_{t-1}(i) + trans(i, j)) + e_t(j).
  auto alpha = start.unsqueeze(0) + emissions.select(1, 0);  // (B, C)
  for (int64_t k = 1; k < t; ++k) {
    auto next = torch::logsumexp(alpha.unsqueeze(2) + trans.unsqueeze(0), 1) + emissions.select(1, k);
    alpha = torch::where(m.select(1, k).unsqueeze(1), next, alpha);
  }
  const auto log_z = torch::logsumexp(alpha + end.unsqueeze(0), 1);
  return torch::where(lengths > 0, gold - log_z, torch::zeros_like(log_z));
}

torch::Tensor CrfImpl::viterbi(const torch::Tensor& emissions, torch::Tensor* marginals) const {
  torch::NoGradGuard no_grad;
  if (emissions.dim() != 2 || emissions.size(1) != num_tags())
    throw std::invalid_argument("CRF emissions of one sequence must be (T, " + std::to_string(num_tags()) + ")");
  const int64_t t = emissions.size(0), c = num_tags();
  auto path = torch::zeros({t}, torch::kLong);
  if (marginals) *marginals = torch::zeros({t, c}, torch::kDouble);
  if (t == 0) return path;
  const auto em_t = emissions.to(torch::kCPU, torch::kDouble).contiguous();
  const auto tr_t = effective(transitions, allowed_transitions_).detach().to(torch::kCPU, torch::kDouble).contiguous();
  const auto st_t = effective(start_transitions, allowed_start_).detach().to(torch::kCPU, torch::kDouble).contiguous();
  const auto en_t = effective(end_transitions, allowed_end_).detach().to(torch::kCPU, torch::kDouble).contiguous();
  const auto em = em_t.accessor<double, 2>();
  const auto tr = tr_t.accessor<double, 2>();
  const auto st = st_t.accessor<double, 1>();
  const auto en = en_t.accessor<double, 1>();

  // Max-product with back-pointers; ties keep the lowest tag index (as torch.max in pytorch-crf).
  std::vector<double> score(static_cast<size_t>(c)), next(static_cast<size_t>(c));
  std::vector<int64_t> back(static_cast<size_t>(t * c), 0);
  for (int64_t j = 0; j < c; ++j) score[static_cast<size_t>(j)] = st[j] + em[0][j];
  for (int64_t k = 1; k < t; ++k) {
    for (int64_t j = 0; j < c; ++j) {
      double best = -std::numeric_limits<double>::infinity();
      int64_t arg = 0;
      for (int64_t i = 0; i < c; ++i) {
        const double s = score[static_cast<size_t>(i)] + tr[i][j];
        if (s > best) {
          best = s;
          arg = i;
        }
      }
      next[static_cast<size_t>(j)] = best + em[k][j];
      back[static_cast<size_t>(k * c + j)] = arg;
    }
    score.swap(next);
  }
  int64_t tag = 0;
  double best = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < c; ++j)
    if (score[static_cast<size_t>(j)] + en[j] > best) {
      best = score[static_cast<size_t>(j)] + en[j];
      tag = j;
    }
  auto p = path.accessor<int64_t, 1>();
  for (int64_t k = t - 1; k >= 0; --k) {
    p[k] = tag;
    if (k > 0) tag = back[static_cast<size_t>(k * c + tag)];
  }
  if (marginals) {
    // Forward-backward in log space: p(y_k = j) = exp(alpha_k(j) + beta_k(j) - log Z).
    auto alpha = torch::empty({t, c}, torch::kDouble), beta = torch::empty({t, c}, torch::kDouble);
    auto a = alpha.accessor<double, 2>();
    auto b = beta.accessor<double, 2>();
    auto lse = [](const std::vector<double>& v) {
      double m = -std::numeric_limits<double>::infinity();
      for (double x : v) m = std::max(m, x);
      if (!std::isfinite(m)) return m;
      double s = 0;
      for (double x : v) s += std::exp(x - m);
      return m + std::log(s);
    };
    std::vector<double> terms(static_cast<size_t>(c));
    for (int64_t j = 0; j < c; ++j) a[0][j] = st[j] + em[0][j];
    for (int64_t k = 1; k < t; ++k)
      for (int64_t j = 0; j < c; ++j) {
        for (int64_t i = 0; i < c; ++i) terms[static_cast<size_t>(i)] = a[k - 1][i] + tr[i][j];
        a[k][j] = lse(terms) + em[k][j];
      }
    for (int64_t j = 0; j < c; ++j) b[t - 1][j] = en[j];
    for (int64_t k = t - 2; k >= 0; --k)
      for (int64_t i = 0; i < c; ++i) {
        for (int64_t j = 0; j < c; ++j) terms[static_cast<size_t>(j)] = tr[i][j] + em[k + 1][j] + b[k + 1][j];
        b[k][i] = lse(terms);
      }
    for (int64_t j = 0; j < c; ++j) terms[static_cast<size_t>(j)] = a[t - 1][j] + en[j];
    const double log_z = lse(terms);
    *marginals = (alpha + beta - log_z).exp();
  }
  return path;
}

}  // namespace unif::models
