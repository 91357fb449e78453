// ELECTRA pretraining's parts of a run: see electra_pretraining.h.
#include "framework/train/electra_pretraining.h"

#include <sstream>

#include "framework/checkpoint/atomic_file.h"
#include "framework/checkpoint/pretrained.h"
#include "framework/common/error.h"
#include "framework/model/model_dir.h"
#include "framework/train/build.h"
#include "models/electra/pretraining.h"

namespace unif::framework {

namespace fs = std::filesystem;

namespace {

std::string number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

std::pair<fs::path, fs::path> pretraining_dirs(const fs::path& pretrained) {
  std::error_code ec;
  if (!pretrained.empty() && !fs::exists(pretrained / "config.json", ec) &&
      fs::is_directory(pretrained / "discriminator", ec) && fs::is_directory(pretrained / "generator", ec))
    return {pretrained / "discriminator", pretrained / "generator"};
  return {pretrained, fs::path()};
}

void add_electra_pretraining(const RunConfig& cfg, std::shared_ptr<models::EncoderTaskModel> discriminator,
                             const HfConfig& discriminator_hf, const fs::path& generator_dir,
                             const TokenizerFiles& tokenizer, const ModelMeta& meta, TrainerParts& parts) {
  auto disc = std::dynamic_pointer_cast<models::ElectraForPreTrainingImpl>(discriminator);
  if (!disc) throw std::logic_error("add_electra_pretraining: the model is no ElectraForPreTraining");
  const models::EncoderConfig& d = disc->options();
  std::shared_ptr<models::EncoderForMaskedLMImpl> generator;
  HfConfig generator_hf;
  if (!generator_dir.empty()) {
    if (!cfg.model.generator.config.empty())
      throw UserError("model.generator.config: the generator is read from " + generator_dir.string() +
                      " (model.pretrained holds both models); drop model.generator.config");
    PretrainedOptions po;
    po.task = Task::MaskedLm;
    po.sparse_embeddings = cfg.model.sparse_embeddings;
    po.unpad_inputs = cfg.model.unpadded;
    po.gradient_checkpointing = cfg.training.gradient_checkpointing;
    auto loaded = load_pretrained(generator_dir, po);
    generator = std::dynamic_pointer_cast<models::EncoderForMaskedLMImpl>(loaded.model);
    generator_hf = loaded.config;
    parts.notes.push_back("replaced_token_detection: generator from " + generator_dir.string());
  } else {
    HfConfig base = discriminator_hf;
    base.bert = models::default_generator_options(d);
    base.architectures.clear();
    base.id2label.clear();
    base.problem_type.clear();
    generator_hf = with_config_fields(base, cfg.model.generator.config, "model.generator.config");
    generator_hf.bert.sparse_embeddings(cfg.model.sparse_embeddings)
        .unpad_inputs(cfg.model.unpadded)
        .gradient_checkpointing(cfg.training.gradient_checkpointing);
    try {
      generator = std::make_shared<models::EncoderForMaskedLMImpl>(generator_hf.bert);
    } catch (const std::invalid_argument& e) { throw UserError(std::string("model.generator.config: ") + e.what()); }
  }
  std::shared_ptr<models::ElectraPretrainingModel> pair;
  try {
    pair = std::make_shared<models::ElectraPretrainingModel>(disc, generator, cfg.electra.rtd_weight);
  } catch (const std::invalid_argument& e) { throw UserError(std::string("model.generator.config: ") + e.what()); }
  const models::EncoderConfig& g = generator->options();
  parts.notes.push_back("replaced_token_detection: generator hidden_size " + std::to_string(g.hidden_size()) + ", " +
                        std::to_string(g.num_hidden_layers()) + " layers, " + std::to_string(g.num_attention_heads()) +
                        " heads; discriminator hidden_size " + std::to_string(d.hidden_size()) +
                        "; embeddings shared; loss = MLM + " + number(cfg.electra.rtd_weight) + " * RTD");
  parts.model = pair;
  ModelMeta generator_meta = meta;
  generator_meta.task = Task::MaskedLm;
  const HfConfig disc_hf = discriminator_hf;
  parts.save_model = [pair, disc_hf, generator_hf, tokenizer, meta, generator_meta](
                         const fs::path& dir, const std::function<void(const fs::path&)>& extra) {
    save_dir_atomically(dir, [&](const fs::path& tmp) {
      // Each a complete model directory of its own (COMPLETE after its files; all synced before the
      // save's own COMPLETE).
      const auto& disc = *pair->discriminator();
      write_model_files(tmp / "discriminator", disc, describe_model(disc, {}, disc_hf), tokenizer, meta);
      detail::write_text_file_atomic(tmp / "discriminator" / "COMPLETE", "ok\n");
      const auto gen = pair->standalone_generator();
      write_model_files(tmp / "generator", *gen, describe_model(*gen, {}, generator_hf), tokenizer, generator_meta);
      detail::write_text_file_atomic(tmp / "generator" / "COMPLETE", "ok\n");
      if (extra) extra(tmp);
    });
  };
  parts.load_model = [pair](const fs::path& dir) {
    load_checkpoint_weights(*pair->discriminator(), dir / "discriminator");
    const auto gen = pair->standalone_generator();
    load_checkpoint_weights(*gen, dir / "generator");
    pair->set_generator(*gen);
  };
}

}  // namespace unif::framework
