// A linear-chain conditional random field over per-position tag scores (emissions): the layer of
// BERT+CRF taggers. Parameters and layout are pytorch-crf's (`torchcrf.CRF`), so a saved
// `crf.*` loads there: transitions (C, C) scores a move from tag i (row) to tag j (column),
// start_transitions (C) the first tag, end_transitions (C) the last.
//
//   Crf crf(num_tags);
//   auto llh = crf->log_likelihood(emissions, tags, mask);  // (B): log p(tags | emissions)
//   auto path = crf->viterbi(emissions_of_one_sequence);    // (T) int64, the best tag sequence
//
// Emissions are (B, T, C) with a mask (B, T) that is a prefix per row (as the tags of a sentence's
// words); a row whose mask is all false has log-likelihood 0. A constrained CRF (BIO / BIOES,
// crf_constraints()) keeps the forbidden moves at kForbidden, fixed: their gradient is zero, and
// the saved tensors hold the value, so pytorch-crf and any reader of the directory honour them.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace unif::models {

/// Which moves a tag scheme allows (true = allowed).
struct CrfConstraints {
  torch::Tensor transitions;  // (C, C) bool
  torch::Tensor start;        // (C) bool
  torch::Tensor end;          // (C) bool
  std::string scheme;         // "BIO" or "BIOES"
};

/// The constraints of the tag names' scheme: BIO (B-X, I-X, O) forbids I-X after anything but B-X
/// and I-X, and I-X first; BIOES (also E-X and S-X; BILOU's L- and U- read as E- and S-) also
/// forbids B-X or I-X last or before anything but I-X / E-X. nullopt when the names follow
/// neither scheme (a tag without such a prefix other than O).
std::optional<CrfConstraints> crf_constraints(const std::vector<std::string>& tags);

class CrfImpl : public torch::nn::Module {
 public:
  /// The score of a forbidden move.
  static constexpr double kForbidden = -10000.0;

  /// Parameters drawn uniformly from [-0.1, 0.1] as pytorch-crf's reset_parameters (torch's
  /// default generator). Throws std::invalid_argument when num_tags < 1.
  explicit CrfImpl(int64_t num_tags);

  int64_t num_tags() const { return transitions.size(0); }

  /// Forbids the moves `c` does not allow: sets them to kForbidden and keeps them there.
  void constrain(const CrfConstraints& c);
  bool constrained() const { return allowed_transitions_.defined(); }
  /// The constraints given to constrain(); nullopt when unconstrained.
  std::optional<CrfConstraints> constraints() const;

  /// log p(tags | emissions) per row (B): the gold path's score minus the log partition function
  /// (the forward algorithm in log space). emissions (B, T, C) floating; tags (B, T) int64 (any
  /// value where the mask is false); mask (B, T) bool, a prefix per row.
  torch::Tensor log_likelihood(const torch::Tensor& emissions, const torch::Tensor& tags,
                               const torch::Tensor& mask) const;

  /// The highest-scoring tag sequence of one sequence's emissions (T, C) (Viterbi); (T) int64.
  /// With `marginals`, also each position's tag probabilities (T, C) (forward-backward).
  torch::Tensor viterbi(const torch::Tensor& emissions, torch::Tensor* marginals = nullptr) const;

  torch::Tensor transitions, start_transitions, end_transitions;

 private:
  // The parameters with the forbidden moves at kForbidden (differentiable where allowed).
  torch::Tensor effective(const torch::Tensor& p, const torch::Tensor& allowed) const;
  torch::Tensor allowed_transitions_, allowed_start_, allowed_end_;  // undefined = unconstrained
  std::string scheme_;
};
TORCH_MODULE(Crf);

}  // namespace unif::models
