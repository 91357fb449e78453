// HF names in a unif config: users coming from HF Trainer write TrainingArguments names
// (learning_rate, num_train_epochs, fp16, ...) at the top level or under `training:`. Such a key is
// unknown to unif; its error says which unif key does the same ("did you mean
// training.optimizer.lr (HF: learning_rate)?"), or, where unif has no such key, what to do instead.
#pragma once
#include <string>
#include <vector>

namespace unif::framework {

namespace detail {
class Context;
}

/// One HF name and where it goes in unif.
struct HfName {
  std::string hf;        // e.g. "learning_rate"
  std::string unif;      // the unif key path that does the same ("" = none); may be absent from
                         // this build's schema, then `fallback` is said instead
  std::string example;   // how to write it when the value changes form, e.g. "training.precision: fp16"
  std::string note;      // what differs from HF's meaning ("" = nothing worth saying)
  std::string fallback;  // what to do instead when unif has no such key
};

/// Every HF name unif recognises (TrainingArguments and the HF example scripts' data and model
/// arguments), in a stable order.
const std::vector<HfName>& hf_names();

/// The hint for an unknown key named `key` when it is an HF name, else "": "did you mean
/// training.optimizer.lr (HF: learning_rate)?" or "HF's evaluation_strategy has no unif key: ...".
/// `accepted` is the schema (config_keys()): a target missing from it gives the fallback.
std::string hf_hint(const std::string& key, const std::vector<std::string>& accepted);

/// Rewrites the unknown-key problems in `ctx` whose key is an HF name: hf_hint's text takes the
/// place of a generic "did you mean", unless that one already names the same unif key
/// (training.warmup_ratio keeps "did you mean 'training.schedule.warmup_ratio'?"). Called by parse_config after the
/// sections are read.
void suggest_hf_names(detail::Context& ctx);

}  // namespace unif::framework
