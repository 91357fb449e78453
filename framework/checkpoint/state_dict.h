// state_dict: move named tensors between checkpoint files and torch::nn modules, HF-style.
// `read_weights` picks the weight file of a HF model directory; `load_state_dict` copies tensors
// into a module in place and reports missing / unexpected names (as HF's load_state_dict does);
// shapes must agree. Does not know about BERT: key renaming is the model's business.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "framework/checkpoint/safetensors.h"

namespace unif::framework {

/// What load_state_dict did not match. Both lists are sorted.
struct LoadReport {
  std::vector<std::string> missing;     // in the module, not in the file
  std::vector<std::string> unexpected;  // in the file, not in the module
};

/// The weight file of a model directory: `model_dir`/model.safetensors, else
/// `model_dir`/pytorch_model.bin, else UserError.
std::filesystem::path weights_file(const std::filesystem::path& model_dir);

/// The tensors of weights_file(model_dir).
TensorMap read_weights(const std::filesystem::path& model_dir);

/// The tensors' shapes of a weight file (weights_file's), from its header: no tensor is read.
TensorShapes read_weight_shapes(const std::filesystem::path& file);

/// named_parameters + named_buffers (recursive), detached (they share storage with the module).
TensorMap state_dict(const torch::nn::Module& m);

/// Copies every tensor of `w` whose name is a parameter/buffer of `m` into it, in place and
/// without autograd; floating dtypes are converted to the module's. Throws UserError on a shape
/// mismatch (naming the key and both shapes) or a float/non-float dtype clash.
LoadReport load_state_dict(torch::nn::Module& m, const TensorMap& w);

/// One human line: "all checkpoint weights matched the model", or e.g.
/// "2 model weights not in the checkpoint (newly initialized): [a, b]; 1 checkpoint weights not
/// used by the model: [c]".
std::string describe(const LoadReport& report);

}  // namespace unif::framework
