// HF TrainingArguments (and HF example-script) names -> unif keys (see hf_names.h).
#include "framework/config/hf_names.h"

#include <algorithm>

#include "framework/config/config_keys.h"
#include "framework/config/yaml_reader.h"

namespace unif::framework {

const std::vector<HfName>& hf_names() {
  // {hf, unif, example, note, fallback}
  static const std::vector<HfName> names{
      {"learning_rate", "training.optimizer.lr", "", "", ""},
      {"num_train_epochs", "training.epochs", "", "a whole number of epochs; training.max_steps for a part", ""},
      {"per_device_train_batch_size", "training.batch_size", "",
       "unif's is the global batch, split over all replicas and processes: per-device size x devices", ""},
      {"per_gpu_train_batch_size", "training.batch_size", "",
       "unif's is the global batch, split over all replicas and processes: per-device size x devices", ""},
      {"per_device_eval_batch_size", "training.eval_batch_size", "",
       "unif's is the global evaluation batch (per-device size x devices); `unif predict --batch-size N` for "
       "predictions",
       ""},
      {"gradient_accumulation_steps", "training.grad_accum_steps", "", "", ""},
      {"fp16", "training.precision", "training.precision: fp16", "", ""},
      {"bf16", "training.precision", "training.precision: bf16", "", ""},
      {"half_precision_backend", "", "", "",
       "training.precision (fp32 | bf16 | fp16 | auto) chooses the precision; remove the key"},
      {"warmup_ratio", "training.schedule.warmup_ratio", "", "", ""},
      {"warmup_steps", "training.schedule.warmup_steps", "", "", ""},
      {"weight_decay", "training.optimizer.weight_decay", "", "", ""},
      {"max_grad_norm", "training.max_grad_norm", "", "", ""},
      {"evaluation_strategy", "", "", "",
       "unif evaluates data.dev every training.eval_every steps (0 = at the end of each epoch, HF's \"epoch\"); "
       "leave data.dev out for HF's \"no\""},
      {"eval_strategy", "", "", "",
       "unif evaluates data.dev every training.eval_every steps (0 = at the end of each epoch, HF's \"epoch\"); "
       "leave data.dev out for HF's \"no\""},
      {"eval_steps", "training.eval_every", "", "", ""},
      {"save_strategy", "", "", "",
       "unif saves a checkpoint every training.save_every steps (0 = at the end of each epoch, HF's \"epoch\")"},
      {"save_steps", "training.save_every", "", "", ""},
      {"save_total_limit", "training.keep_checkpoints", "", "", ""},
      {"logging_strategy", "", "", "", "unif logs every training.log_every steps"},
      {"logging_steps", "training.log_every", "", "", ""},
      {"logging_dir", "", "", "", "unif writes train.log and metrics.jsonl into output_dir; remove the key"},
      {"metric_for_best_model", "training.best_metric", "",
       "a dev metric name without HF's eval_ prefix (accuracy, f1, loss, ...); early stopping watches it too", ""},
      {"greater_is_better", "", "", "",
       "unif knows which way each metric improves (loss lower, the rest higher); remove the key"},
      {"load_best_model_at_end", "", "", "",
       "with data.dev, unif always writes best/ (the best dev evaluation) next to final/: use output_dir/best; "
       "remove the key"},
      {"report_to", "training.report_to", "training.report_to: [tensorboard]",
       "tensorboard only (event files in output_dir/tensorboard); metrics.jsonl and train.log are always written", ""},
      {"seed", "seed", "", "a top-level key", ""},
      {"max_steps", "training.max_steps", "", "", ""},
      {"lr_scheduler_type", "training.schedule.name", "", "linear | constant | cosine", ""},
      {"optim", "training.optimizer.name", "", "adamw | sgd | lamb", ""},
      {"adam_beta1", "training.optimizer.betas", "training.optimizer.betas: [adam_beta1, adam_beta2]", "", ""},
      {"adam_beta2", "training.optimizer.betas", "training.optimizer.betas: [adam_beta1, adam_beta2]", "", ""},
      {"adam_epsilon", "training.optimizer.eps", "", "", ""},
      {"output_dir", "output_dir", "", "a top-level key", ""},
      {"overwrite_output_dir", "training.resume", "training.resume: overwrite", "", ""},
      {"resume_from_checkpoint", "training.resume", "",
       "auto (the latest checkpoint in output_dir) | never | overwrite | a checkpoint directory", ""},
      {"label_smoothing_factor", "training.loss.label_smoothing", "", "", ""},
      {"max_seq_length", "model.max_seq_length", "", "", ""},
      {"group_by_length", "training.group_by_length", "", "", ""},
      {"early_stopping_patience", "training.early_stopping.patience", "", "", ""},
      {"early_stopping_threshold", "training.early_stopping.min_delta", "", "", ""},
      {"use_cpu", "parallel.devices", "parallel.devices: [cpu]", "", ""},
      {"no_cuda", "parallel.devices", "parallel.devices: [cpu]", "", ""},
      {"do_train", "", "", "", "`unif train` trains (and evaluates data.dev when set); remove the key"},
      {"do_eval", "", "", "",
       "`unif train` evaluates data.dev when it is set; `unif eval` evaluates a model; remove the key"},
      {"do_predict", "", "", "", "`unif predict --model DIR --input FILE` predicts; remove the key"},
      {"model_name_or_path", "model.pretrained", "", "an HF model directory", ""},
      {"train_file", "data.train", "", "", ""},
      {"validation_file", "data.dev", "", "", ""},
      {"test_file", "data.test", "", "", ""},
      {"text_column_name", "data.text_fields", "", "", ""},
      {"label_column_name", "data.label_field", "", "", ""},
      {"pad_to_max_length", "", "", "", "unif pads each batch to its longest example; remove the key"},
      {"gradient_checkpointing", "", "", "",
       "unif has no activation checkpointing; lower training.batch_size "
       "and raise training.grad_accum_steps to save memory"},
      {"dataloader_num_workers", "", "", "",
       "unif reads the data in the training process; "
       "parallel.threads_per_replica sets the compute threads; remove the key"},
  };
  return names;
}

std::string hf_hint(const std::string& key, const std::vector<std::string>& accepted) {
  const auto& names = hf_names();
  const auto it = std::find_if(names.begin(), names.end(), [&](const HfName& n) { return n.hf == key; });
  if (it == names.end()) return "";
  const bool has_key = !it->unif.empty() && std::find(accepted.begin(), accepted.end(), it->unif) != accepted.end();
  if (!has_key) {
    if (it->fallback.empty()) return "";  // the target key is not in this build and nothing else to say
    return "HF's " + key + " has no unif key: " + it->fallback;
  }
  return "did you mean " + (it->example.empty() ? it->unif : it->example) + " (HF: " + key +
         (it->note.empty() ? "" : "; " + it->note) + ")?";
}

void suggest_hf_names(detail::Context& ctx) {
  std::vector<std::string> accepted;
  for (const auto& u : ctx.unknown()) {
    if (u.index >= ctx.problems().size()) continue;
    // Where HF users put them: the top level (a flat TrainingArguments dump), `training:`, and
    // `data:` / `model:` for the example scripts' arguments. Deeper (training.optimizer.*): no.
    const std::string parent = u.path.size() > u.key.size() ? u.path.substr(0, u.path.size() - u.key.size() - 1) : "";
    if (!(parent.empty() || parent == "training" || parent == "data" || parent == "model")) continue;
    if (accepted.empty()) accepted = config_keys();
    const std::string hint = hf_hint(u.key, accepted);
    if (hint.empty()) continue;
    const auto& names = hf_names();
    const auto hf = std::find_if(names.begin(), names.end(), [&](const HfName& n) { return n.hf == u.key; });
    std::string& line = ctx.problems()[u.index];
    const std::string marker = "unknown key '" + u.key + "'";
    const auto at = line.find(marker);
    if (at == std::string::npos) continue;
    std::size_t end = at + marker.size();
    const std::string generic = " (did you mean '";
    if (line.compare(end, generic.size(), generic) == 0) {
      const auto close = line.find("'?)", end + generic.size());
      if (close == std::string::npos) continue;
      // A guess that already names the key (training.warmup_ratio -> 'training.schedule.warmup_ratio')
      // stays as it is; another guess gives way to the HF hint.
      if (line.substr(end + generic.size(), close - end - generic.size()) == hf->unif) continue;
      line.erase(end, close + 3 - end);
    }
    line.insert(end, " (" + hint + ")");
  }
}

}  // namespace unif::framework
