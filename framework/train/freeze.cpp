// freeze_parameters: see freeze.h.
#include "framework/train/freeze.h"

#include <algorithm>
#include <cstdio>

#include "framework/common/error.h"
#include "models/architectures.h"

namespace unif::framework {

FrozenParameters freeze_parameters(const std::vector<std::pair<std::string, torch::Tensor>>& named,
                                   const FreezeConfig& freeze, const models::Architecture* arch) {
  FrozenParameters out;
  if (arch != nullptr)
    for (const auto& [name, t] : named)
      if (const auto layer = models::encoder_layer_index(*arch, name))
        out.layers = std::max<int64_t>(out.layers, *layer + 1);
  if (freeze.layers > out.layers)
    throw UserError("training.freeze.layers: expected at most the model's " + std::to_string(out.layers) + " " +
                    (arch ? arch->layers.unit : std::string("encoder layers")) + ", got " +
                    std::to_string(freeze.layers));
  if (!freeze.embeddings && freeze.layers == 0) return out;
  for (const auto& [name, t] : named) {
    const auto depth = arch ? models::encoder_depth(*arch, name) : std::nullopt;
    if (!depth) continue;
    const bool frozen = (*depth == 0 && freeze.embeddings) || (*depth >= 1 && *depth <= freeze.layers);
    if (!frozen || !t.requires_grad()) continue;
    torch::Tensor p = t;  // the module's parameter itself (a shallow handle)
    p.set_requires_grad(false);
    ++out.tensors;
    out.values += t.numel();
  }
  std::string what = freeze.embeddings ? "embeddings" : "";
  if (freeze.layers > 0)
    what += std::string(what.empty() ? "" : " and ") +
            (freeze.layers == 1 ? "layer 0" : "layers 0-" + std::to_string(freeze.layers - 1));
  char values[32];
  std::snprintf(values, sizeof values, "%.3gM", static_cast<double>(out.values) / 1e6);
  out.summary = what + ": " + std::to_string(out.tensors) + " tensors, " + values + " parameters frozen";
  return out;
}

}  // namespace unif::framework
