// checkpoint_layer: see checkpoint.h.
#include "models/layers/checkpoint.h"

#include <memory>
#include <mutex>
#include <utility>

#include <ATen/Context.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include "framework/common/autocast_state.h"
#include "models/attention_capture.h"
#include "models/layers/dropout.h"

namespace unif::models {

namespace {

using torch::autograd::variable_list;

// The generators a layer's dropout draws from and their states.
struct RngStates {
  std::vector<at::Generator> generators;
  std::vector<at::Tensor> states;

  static RngStates capture(std::vector<at::Generator> generators) {
    RngStates r;
    r.generators = std::move(generators);
    for (auto& g : r.generators) {
      std::lock_guard<std::mutex> lock(g.mutex());
      r.states.push_back(g.get_state());
    }
    return r;
  }
  void restore() {
    for (size_t i = 0; i < generators.size(); ++i) {
      std::lock_guard<std::mutex> lock(generators[i].mutex());
      generators[i].set_state(states[i]);
    }
  }
};

class CheckpointBackward : public torch::autograd::Node {
 public:
  std::function<torch::Tensor(const std::vector<torch::Tensor>&)> layer;
  std::vector<torch::Tensor> inputs;  // detached
  std::vector<bool> differentiable;   // per input: an edge of this node
  std::vector<torch::Tensor> params;  // the parameters with an edge, after the inputs'
  RngStates rng;
  autocast::AutocastState forward_autocast;

  std::string name() const override { return "CheckpointBackward"; }

  variable_list apply(variable_list&& grads) override {
    const size_t edges = num_outputs();
    if (grads.empty() || !grads[0].defined()) return variable_list(edges);
    // The forward again, with the forward's random draws and autocast, gradients recorded.
    RngStates now = RngStates::capture(rng.generators);
    rng.restore();
    const autocast::AutocastState outside;
    forward_autocast.apply();
    std::vector<torch::Tensor> in(inputs.size()), wrt;
    for (size_t i = 0; i < inputs.size(); ++i) {
      in[i] = differentiable[i] ? inputs[i].detach().requires_grad_(true) : inputs[i];
      if (differentiable[i]) wrt.push_back(in[i]);
    }
    torch::Tensor out;
    try {
      torch::AutoGradMode on(true);
      out = layer(in);
    } catch (...) {
      outside.apply();
      now.restore();
      throw;
    }
    outside.apply();
    now.restore();
    for (const auto& p : params) wrt.push_back(p);
    return torch::autograd::grad({out}, wrt, {grads[0]}, /*retain_graph=*/false, /*create_graph=*/false,
                                 /*allow_unused=*/true);
  }
};

}  // namespace

torch::Tensor checkpoint_layer(bool on, torch::nn::Module& module,
                               std::function<torch::Tensor(const std::vector<torch::Tensor>&)> layer,
                               std::vector<torch::Tensor> inputs) {
  // Attention scores captured for layer-wise distillation are read with their gradients: those
  // layers run as they are.
  if (!on || !module.is_training() || !torch::GradMode::is_enabled() || AttentionCapture::active())
    return layer(inputs);
  auto node = std::shared_ptr<CheckpointBackward>(new CheckpointBackward(), torch::autograd::deleteNode);
  variable_list edges;
  for (const auto& t : inputs) {
    const bool d = t.defined() && t.requires_grad();
    node->differentiable.push_back(d);
    if (d) edges.push_back(t);
  }
  for (const auto& p : module.parameters())
    if (p.requires_grad()) {
      node->params.push_back(p);
      edges.push_back(p);
    }
  if (edges.empty()) return layer(inputs);
  std::vector<at::Generator> generators{at::globalContext().defaultGenerator(inputs.front().device())};
  for (const auto& m : module.modules())
    if (const auto* dropout = dynamic_cast<const DropoutImpl*>(m.get()); dropout && dropout->generator())
      generators.push_back(*dropout->generator());
  node->rng = RngStates::capture(std::move(generators));
  torch::Tensor out;
  {
    torch::NoGradGuard no_grad;
    out = layer(inputs);
  }
  if (out.is_view()) out = out.clone();  // the output gets this node as its history
  for (auto& t : inputs)
    if (t.defined()) t = t.detach();
  node->inputs = std::move(inputs);
  node->layer = std::move(layer);
  node->set_next_edges(torch::autograd::collect_next_edges(edges));
  torch::autograd::set_history(out, node);
  return out;
}

}  // namespace unif::models
