// Train your own model with unif's Trainer: a complete program (docs/cpp-api.md shows this file).
//   train_api CONFIG.yaml [--set a.b=v ...]      e.g. train_api configs/demo.yaml
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <unif/unif.h>

namespace fs = std::filesystem;
using namespace unif;
using namespace unif::framework;

// The model: the mean of the word embeddings of the real tokens, then a linear classifier.
class MyModel : public models::TaskModel {
 public:
  MyModel(int64_t vocab_size, int64_t num_labels) : vocab_size_(vocab_size), num_labels_(num_labels) {
    embedding_ = register_module("embedding", torch::nn::Embedding(vocab_size, 64));
    classifier_ = register_module("classifier", torch::nn::Linear(64, num_labels));
  }

  models::ModelOutput forward(const models::Batch& batch, const torch::Tensor& delta = {}) override {
    auto e = embedding_(batch.input_ids);  // (B, L, H)
    if (delta.defined()) e = e + delta;    // adversarial training perturbs the embedding output
    const auto mask = batch.attention_mask.unsqueeze(-1).to(e.scalar_type());
    models::ModelOutput out;
    out.logits = classifier_((e * mask).sum(1) / mask.sum(1).clamp_min(1.0));
    if (batch.labels.defined())  // per-example losses (never a mean): the trainer divides by Z
      out.example_losses = torch::nn::functional::cross_entropy(
          out.logits, batch.labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
    out.loss_count = batch.size();
    return out;
  }
  torch::nn::Embedding word_embeddings() override { return embedding_; }
  std::shared_ptr<models::TaskModel> clone_model() const override {
    auto copy = std::make_shared<MyModel>(vocab_size_, num_labels_);
    models::copy_module_state(*this, *copy);
    return copy;
  }

 private:
  int64_t vocab_size_, num_labels_;
  torch::nn::Embedding embedding_{nullptr};
  torch::nn::Linear classifier_{nullptr};
};

// A model directory: the weights, then what `extra` adds (the trainer's state, in checkpoints), then
// the COMPLETE marker, all in a temporary directory renamed into place. The trainer refuses a save
// that leaves no complete directory.
void save_dir(const fs::path& dir, torch::nn::Module& model, const std::function<void(const fs::path&)>& extra) {
  const fs::path tmp = dir.string() + ".tmp-" + std::to_string(::getpid());
  const fs::path old = dir.string() + ".old-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  TensorMap tensors;
  for (const auto& p : model.named_parameters()) tensors[p.key()] = p.value().detach();
  write_safetensors(tmp / "model.safetensors", tensors);
  if (extra) extra(tmp);
  std::ofstream(tmp / "COMPLETE") << "ok\n";
  if (fs::exists(dir)) fs::rename(dir, old);
  fs::rename(tmp, dir);
  fs::remove_all(old);
}

void load_dir(const fs::path& dir, torch::nn::Module& model) {
  const auto tensors = read_safetensors(dir / "model.safetensors").tensors;
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) p.value().copy_(tensors.at(p.key()));
}

int run(int argc, char** argv) {
  if (argc < 2) throw UserError("usage: train_api CONFIG.yaml [--set a.b=v ...]");
  std::vector<std::string> overrides;
  for (int i = 2; i + 1 < argc; i += 2) overrides.push_back(argv[i + 1]);
  // The same YAML and --set as `unif train`; model.vocab defaults to <model.pretrained>/vocab.txt.
  const RunConfig cfg = load_config(argv[1], overrides, Purpose::Train);

  // Data: read, label and encode with the BERT tokenizer (or fill TaskData yourself).
  auto vocab = std::make_shared<const Vocab>(Vocab::load(cfg.model.vocab));
  const BertTokenizer tok(vocab, cfg.model.do_lower_case);
  TrainerParts parts;
  parts.labels = collect_labels(cfg.task, cfg.data, cfg.data.train, read_records(cfg.data.train));
  parts.train = load_task_data(cfg.task, cfg.data, parts.labels, cfg.data.train, tok, cfg.model.max_seq_length,
                               cfg.model.truncate_method, true);
  if (!cfg.data.dev.empty())
    parts.dev = load_task_data(cfg.task, cfg.data, parts.labels, cfg.data.dev, tok, cfg.model.max_seq_length,
                               cfg.model.truncate_method, true);

  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  auto model = std::make_shared<MyModel>(vocab->size(), parts.labels.size());
  parts.model = model;
  parts.save_model = [model](const fs::path& dir, const std::function<void(const fs::path&)>& extra) {
    save_dir(dir, *model, extra);
  };
  parts.load_model = [model](const fs::path& dir) { load_dir(dir, *model); };  // resume

  Trainer trainer(cfg, std::move(parts));
  return trainer.fit();  // writes output_dir: config.yaml, train.log, metrics.jsonl, checkpoints/, best/, final/
}

int main(int argc, char** argv) {
  init_runtime(argc, argv);  // threads and the BLAS kernels as `unif` sets them (may re-exec once)
  try {
    return run(argc, argv);
  } catch (const UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
