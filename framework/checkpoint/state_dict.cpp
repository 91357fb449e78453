// state_dict: weight files of a model directory <-> torch::nn modules. See state_dict.h.
#include "framework/checkpoint/state_dict.h"

#include <algorithm>
#include <set>
#include <system_error>

#include <torch/utils.h>

#include "framework/checkpoint/torch_bin.h"
#include "framework/common/error.h"
#include "framework/common/strings.h"

namespace unif::framework {
namespace {

std::string name_list(const std::vector<std::string>& names) {
  std::string s = "[";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s + "]";
}

}  // namespace

std::filesystem::path weights_file(const std::filesystem::path& model_dir) {
  std::error_code ec;
  const auto safetensors = model_dir / "model.safetensors";
  if (std::filesystem::exists(safetensors, ec)) return safetensors;
  const auto bin = model_dir / "pytorch_model.bin";
  if (std::filesystem::exists(bin, ec)) return bin;
  if (!std::filesystem::is_directory(model_dir, ec))
    throw UserError(model_dir.string() + ": model directory does not exist");
  throw UserError(model_dir.string() + ": no weights found (expected model.safetensors or pytorch_model.bin)");
}

TensorMap read_weights(const std::filesystem::path& model_dir) {
  const auto file = weights_file(model_dir);
  return file.extension() == ".safetensors" ? read_safetensors(file).tensors : read_torch_bin(file);
}

TensorShapes read_weight_shapes(const std::filesystem::path& file) {
  return file.extension() == ".safetensors" ? read_safetensors_shapes(file) : read_torch_bin_shapes(file);
}

TensorMap state_dict(const torch::nn::Module& m) {
  TensorMap out;
  for (const auto& item : m.named_parameters(/*recurse=*/true)) out[item.key()] = item.value().detach();
  for (const auto& item : m.named_buffers(/*recurse=*/true)) out[item.key()] = item.value().detach();
  return out;
}

LoadReport load_state_dict(torch::nn::Module& m, const TensorMap& w) {
  LoadReport report;
  const TensorMap targets = state_dict(m);  // detached views sharing the module's storage
  torch::NoGradGuard no_grad;
  for (const auto& [name, dst] : targets) {
    auto it = w.find(name);
    if (it == w.end()) {
      report.missing.push_back(name);
      continue;
    }
    const torch::Tensor& src = it->second;
    if (src.sizes() != dst.sizes())
      throw UserError("checkpoint tensor '" + name + "' has shape " + shape_string(src.sizes().vec()) +
                      " but the model expects " + shape_string(dst.sizes().vec()));
    if (src.scalar_type() != dst.scalar_type() &&
        !(c10::isFloatingType(src.scalar_type()) && c10::isFloatingType(dst.scalar_type())))
      throw UserError("checkpoint tensor '" + name + "' has dtype " + c10::toString(src.scalar_type()) +
                      " but the model expects " + c10::toString(dst.scalar_type()));
    dst.copy_(src);  // in place: dst shares storage with the parameter/buffer
  }
  for (const auto& [name, src] : w)
    if (targets.count(name) == 0) report.unexpected.push_back(name);
  // std::map iteration already yields sorted names.
  return report;
}

std::string describe(const LoadReport& report) {
  if (report.missing.empty() && report.unexpected.empty()) return "all checkpoint weights matched the model";
  std::string s;
  if (!report.missing.empty())
    s += std::to_string(report.missing.size()) +
         " model weights not in the checkpoint (newly initialized): " + name_list(report.missing);
  if (!report.unexpected.empty())
    s += (s.empty() ? "" : "; ") + std::to_string(report.unexpected.size()) +
         " checkpoint weights not used by the model: " + name_list(report.unexpected);
  return s;
}

}  // namespace unif::framework
