// textcnn_example: trains the TextCnn of textcnn.h — a model that is not BERT — with unif's Trainer
// through the C++ API (docs/cpp-api.md): the config, tokenizer and encoded data come from the
// framework, the model and its save/load from this file. After training it prints one JSON line
// with the dev accuracy of the final model and the majority-class baseline (classification) or its
// dev micro/macro F1 (task: multilabel).
//
//   build/bin/textcnn_example apps/textcnn_example/textcnn.yaml [--set a.b=v ...]
//   build/bin/textcnn_example apps/textcnn_example/textcnn.yaml --set adversarial.method=fgm --set
//   adversarial.epsilon=0.05
//
// The run config is unif's (SPEC §3); model.pretrained and model.bert are ignored (there is no
// BERT), model.vocab names the WordPiece vocabulary. Exit codes as `unif train`: 0, 2 on bad input.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "apps/textcnn_example/textcnn.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/common/error.h"
#include "framework/config/run_config.h"
#include "framework/data/records.h"
#include "framework/text/bert_tokenizer.h"
#include "framework/train/build.h"
#include "framework/train/trainer.h"

namespace fs = std::filesystem;
using namespace unif;
using namespace unif::framework;

namespace {

// A model directory: model.safetensors (parameter names as named_parameters()), labels.json,
// whatever `extra` adds (the trainer's optimizer and RNG state in checkpoints), then COMPLETE;
// written under a temporary name and renamed into place, like unif's own model directories.
void save_dir(const fs::path& dir, torch::nn::Module& model, const LabelSet& labels,
              const std::function<void(const fs::path&)>& extra) {
  fs::path tmp = dir;
  tmp += ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp);
  TensorMap tensors;
  for (const auto& p : model.named_parameters()) tensors[p.key()] = p.value().detach();
  write_safetensors(tmp / "model.safetensors", tensors, {{"format", "pt"}, {"model", "TextCnn"}});
  std::ofstream(tmp / "labels.json") << nlohmann::json(labels.names).dump() << "\n";
  if (extra) extra(tmp);
  std::ofstream(tmp / "COMPLETE") << "ok\n";
  fs::path old = dir;
  old += ".old-" + std::to_string(::getpid());
  if (fs::exists(dir)) fs::rename(dir, old);
  fs::rename(tmp, dir);
  fs::remove_all(old, ec);
}

void load_dir(const fs::path& dir, torch::nn::Module& model) {
  const auto file = dir / "model.safetensors";
  const auto tensors = read_safetensors(file).tensors;
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) {
    const auto it = tensors.find(p.key());
    if (it == tensors.end() || !it->second.sizes().equals(p.value().sizes()))
      throw UserError(file.string() + ": no tensor '" + p.key() + "' of the model's shape");
    p.value().copy_(it->second);
  }
}

// Accuracy of always predicting the most frequent dev label.
double majority_baseline(const TaskData& dev) {
  std::map<int64_t, int64_t> counts;
  for (const auto& ex : dev.examples) ++counts[ex.labels.at(0)];
  int64_t best = 0;
  for (const auto& [label, n] : counts) best = std::max(best, n);
  return dev.examples.empty() ? 0.0 : static_cast<double>(best) / static_cast<double>(dev.examples.size());
}

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << "usage: textcnn_example CONFIG.yaml [--set a.b=v ...]\n";
    return args.empty() ? 2 : 0;
  }
  std::vector<std::string> overrides;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--set" && i + 1 < args.size())
      overrides.push_back(args[++i]);
    else
      throw UserError("unexpected argument '" + args[i] + "' (expected --set a.b=v)");
  }
  const RunConfig cfg = load_config(args[0], overrides, Purpose::Train);
  if (cfg.task != Task::Classification && cfg.task != Task::Multilabel)
    throw UserError(cfg.source.string() + ": task: the TextCNN example does classification or multilabel, got " +
                    to_string(cfg.task));
  if (cfg.model.vocab.empty())
    throw UserError(cfg.source.string() + ": model.vocab: the TextCNN example needs a vocabulary file");
  if (cfg.data.dev.empty())
    throw UserError(cfg.source.string() + ": data.dev: the TextCNN example evaluates on a dev set");

  // Data: unif's reader, labels and BERT WordPiece encoding ([CLS] text [SEP]).
  auto vocab = std::make_shared<const Vocab>(Vocab::load(cfg.model.vocab));
  const BertTokenizer tokenizer(vocab, cfg.model.do_lower_case);
  TrainerParts parts;
  parts.labels = collect_labels(cfg.task, cfg.data, cfg.data.train, read_records(cfg.data.train));
  parts.train = load_task_data(cfg.task, cfg.data, parts.labels, cfg.data.train, tokenizer, cfg.model.max_seq_length,
                               cfg.model.truncate_method, true);
  parts.dev = load_task_data(cfg.task, cfg.data, parts.labels, cfg.data.dev, tokenizer, cfg.model.max_seq_length,
                             cfg.model.truncate_method, true);

  // The model: initialised from the run's seed.
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  examples::TextCnnOptions options;
  options.vocab_size = vocab->size();
  options.num_labels = parts.labels.size();
  options.multilabel = cfg.task == Task::Multilabel;
  auto model = std::make_shared<examples::TextCnn>(options);
  parts.model = model;
  const LabelSet labels = parts.labels;
  const TaskData dev = parts.dev;
  parts.save_model = [model, labels](const fs::path& dir, const std::function<void(const fs::path&)>& extra) {
    save_dir(dir, *model, labels, extra);
  };
  parts.load_model = [model](const fs::path& dir) { load_dir(dir, *model); };
  parts.notes.push_back("model: TextCnn (embedding " + std::to_string(options.embedding_dim) + ", " +
                        std::to_string(options.filters) + " filters of widths 2/3/4, vocab " +
                        std::to_string(options.vocab_size) + ")");

  Trainer trainer(cfg, std::move(parts));
  const int code = trainer.fit();
  if (code != 0) return code;

  const auto ev = evaluate(*model, cfg.task, dev, labels, cfg.training.batch_size);
  nlohmann::json out{{"dev_loss", ev.metrics.at("loss")}, {"dev_examples", dev.examples.size()}};
  if (cfg.task == Task::Classification) {
    out["dev_accuracy"] = ev.metrics.at("accuracy");
    out["majority_baseline"] = majority_baseline(dev);
  } else {
    out["dev_micro_f1"] = ev.metrics.at("micro_f1");
    out["dev_macro_f1"] = ev.metrics.at("macro_f1");
  }
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 1;
  }
}
