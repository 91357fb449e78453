// GradientCache: see gradient_cache.h.
#include "framework/engines/gradient_cache.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>

#include <torch/autograd.h>

#include "framework/engines/data_parallel.h"

namespace unif::framework {
namespace {

std::vector<torch::Tensor> generator_states(std::vector<at::Generator>& generators) {
  std::vector<torch::Tensor> states;
  states.reserve(generators.size());
  for (auto& g : generators) {
    std::lock_guard<std::mutex> lock(g.mutex());
    states.push_back(g.get_state());
  }
  return states;
}

void set_generator_states(std::vector<at::Generator>& generators, const std::vector<torch::Tensor>& states) {
  for (size_t i = 0; i < generators.size(); ++i) {
    std::lock_guard<std::mutex> lock(generators[i].mutex());
    generators[i].set_state(states[i]);
  }
}

}  // namespace

void GradientCache::clear() {
  batch_ = {};
  generators_.clear();
  pieces_.clear();
  after_.clear();
}

models::ModelOutput GradientCache::forward(const models::Batch& batch, int64_t rows,
                                           std::vector<at::Generator> generators, const Forward& forward) {
  if (rows < 1) throw std::invalid_argument("GradientCache::forward: rows must be >= 1, got " + std::to_string(rows));
  clear();
  batch_ = batch;
  generators_ = std::move(generators);
  models::ModelOutput r;
  std::vector<torch::Tensor> logits;
  torch::NoGradGuard no_grad;
  for (int64_t begin = 0; begin < batch.size(); begin += rows) {
    Piece p;
    p.begin = begin;
    p.size = std::min(rows, batch.size() - begin);
    p.states = generator_states(generators_);
    const auto out = forward(slice_batch(batch_, {p.begin, p.size}));
    p.logits = out.logits.detach();
    r.loss_count += out.loss_count;
    logits.push_back(p.logits);
    pieces_.push_back(std::move(p));
  }
  after_ = generator_states(generators_);
  if (!logits.empty()) r.logits = torch::cat(logits, 0);
  return r;
}

void GradientCache::backward(const torch::Tensor& logits_grad, const Forward& forward) {
  try {
    for (const auto& p : pieces_) {
      set_generator_states(generators_, p.states);
      torch::AutoGradMode grad_mode(true);
      const auto out = forward(slice_batch(batch_, {p.begin, p.size}));
      // The same masks and inputs give the same outputs bit for bit on a CPU; a GPU's kernels may
      // differ in their last bits between two runs.
      if (!torch::allclose(out.logits.detach(), p.logits, 1e-4, 1e-5))
        throw std::logic_error("GradientCache: a piece's outputs differ between its two forwards");
      const auto grad = logits_grad.narrow(0, p.begin, p.size).to(out.logits.device(), out.logits.scalar_type());
      torch::autograd::backward({out.logits}, {grad});
    }
  } catch (...) {
    set_generator_states(generators_, after_);
    clear();
    throw;
  }
  set_generator_states(generators_, after_);
  clear();
}

}  // namespace unif::framework
