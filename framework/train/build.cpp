#include "framework/train/build.h"

#include <algorithm>

#include "adversarial/fgm.h"
#include "adversarial/freeat.h"
#include "adversarial/freelb.h"
#include "adversarial/pgd.h"
#include "adversarial/rdrop.h"
#include "adversarial/smart.h"

#include "framework/checkpoint/hf_config.h"
#include "framework/checkpoint/pretrained.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/checkpoint/state_dict.h"
#include "framework/common/error.h"
#include "framework/common/hf_dir.h"
#include "framework/data/records.h"
#include "framework/model/model_dir.h"
#include "framework/model/retrieval_eval.h"
#include "framework/model/tokenizer_files.h"
#include "framework/train/electra_pretraining.h"
#include "framework/text/tokenizer_kinds.h"
#include "models/architectures.h"
#include "models/heads/distillation.h"
#include "models/heads/factory.h"

namespace unif::framework {

namespace fs = std::filesystem;

namespace {

// A checkpoint's parameters of the trained wrapper that are not the model's.
constexpr const char* kTrainerParametersFile = "trainer_parameters.safetensors";

void apply_overrides(models::EncoderConfig& o, const BertOverrides& b) {
  if (b.vocab_size) o.vocab_size(*b.vocab_size);
  if (b.hidden_size) o.hidden_size(*b.hidden_size);
  if (b.num_hidden_layers) o.num_hidden_layers(*b.num_hidden_layers);
  if (b.num_attention_heads) o.num_attention_heads(*b.num_attention_heads);
  if (b.intermediate_size) o.intermediate_size(*b.intermediate_size);
  if (b.hidden_act) o.hidden_act(*b.hidden_act);
  if (b.hidden_dropout_prob) o.hidden_dropout_prob(*b.hidden_dropout_prob);
  if (b.attention_probs_dropout_prob) o.attention_probs_dropout_prob(*b.attention_probs_dropout_prob);
  if (b.max_position_embeddings) o.max_position_embeddings(*b.max_position_embeddings);
  if (b.type_vocab_size) o.type_vocab_size(*b.type_vocab_size);
  if (b.initializer_range) o.initializer_range(*b.initializer_range);
  if (b.layer_norm_eps) o.layer_norm_eps(*b.layer_norm_eps);
  if (b.pad_token_id) o.pad_token_id(*b.pad_token_id);
  if (b.classifier_dropout) o.classifier_dropout(*b.classifier_dropout);
}

// HF's from_pretrained log lines: the weights the checkpoint lacked (the new head, initialized as
// HF does: normal(0, initializer_range) weights, zero biases) and the ones the model did not use.
std::vector<std::string> load_notes(const LoadReport& report, const fs::path& dir, const std::string& arch) {
  auto list = [](const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return "[" + out + "]";
  };
  std::vector<std::string> notes;
  if (!report.unexpected.empty())
    notes.push_back("Some weights of the model checkpoint at " + dir.string() + " were not used when initializing " +
                    arch + ": " + list(report.unexpected));
  if (!report.missing.empty())
    notes.push_back("Some weights of " + arch + " were not initialized from the model checkpoint at " + dir.string() +
                    " and are newly initialized: " + list(report.missing));
  else
    notes.push_back("All the weights of " + arch + " were initialized from the model checkpoint at " + dir.string());
  return notes;
}

}  // namespace

std::unique_ptr<adversarial::Strategy> make_strategy(const AdversarialConfig& cfg) {
  switch (cfg.method) {
    case AdversarialMethod::None: return std::make_unique<adversarial::NoAdversary>();
    case AdversarialMethod::Fgm: return std::make_unique<adversarial::Fgm>(cfg.epsilon);
    case AdversarialMethod::Pgd: return std::make_unique<adversarial::Pgd>(cfg.epsilon, cfg.alpha, cfg.steps);
    case AdversarialMethod::FreeLb:
      return std::make_unique<adversarial::FreeLb>(cfg.epsilon, cfg.alpha, cfg.steps, cfg.init_mag);
    case AdversarialMethod::FreeAt: return std::make_unique<adversarial::FreeAt>(cfg.epsilon, cfg.steps);
    case AdversarialMethod::Smart:
      return std::make_unique<adversarial::Smart>(cfg.epsilon, cfg.alpha, cfg.steps, cfg.smart_lambda,
                                                  cfg.smart_bregman, cfg.smart_momentum);
    case AdversarialMethod::RDrop: return std::make_unique<adversarial::RDrop>(cfg.rdrop_alpha);
  }
  throw UserError("adversarial.method: expected " + join_names<AdversarialMethod>(", ", " or ") + ", got " +
                  std::to_string(static_cast<int>(cfg.method)));
}

namespace {

std::string some_names(const std::vector<std::string>& names) {
  const size_t limit = 3;
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > limit) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

}  // namespace

void load_checkpoint_weights(torch::nn::Module& model, const fs::path& dir) {
  const auto report = load_state_dict(model, read_weights(dir));
  if (report.missing.empty() && report.unexpected.empty()) return;
  std::string what;
  if (!report.missing.empty())
    what = std::to_string(report.missing.size()) + " model weight(s) missing: " + some_names(report.missing);
  if (!report.unexpected.empty())
    what += (what.empty() ? "" : "; ") + std::to_string(report.unexpected.size()) +
            " weight(s) the model does not have: " + some_names(report.unexpected);
  throw UserError(dir.string() + ": the checkpoint does not fit the model (" + what +
                  "): it was edited, or written for another model configuration");
}

TrainerParts build_trainer_parts(const RunConfig& cfg) {
  if (cfg.data.train.empty()) throw UserError("data.train: a training file is required");
  if (!cfg.model.pretrained.empty() && !fs::is_directory(cfg.model.pretrained))
    throw UserError("model.pretrained: '" + cfg.model.pretrained + "' is not a directory");
  // A sentence-transformers save: its BERT lives in the Transformer module's folder.
  // ELECTRA pretraining may go on from a previous run's pair (its discriminator/ and generator/).
  const auto [pretrained_dir, generator_dir] = cfg.task == Task::ReplacedTokenDetection
                                                   ? pretraining_dirs(cfg.model.pretrained)
                                                   : std::pair<fs::path, fs::path>{cfg.model.pretrained, fs::path()};
  const fs::path pretrained = pretrained_dir.empty() ? fs::path() : resolve_hf_dir(pretrained_dir);
  // The model's family (config.json's model_type; BERT without a pretrained model) picks the tokenizer.
  HfConfig hf = read_hf_config(pretrained.empty() ? fs::path() : pretrained / "config.json", cfg.model.config);
  const models::Architecture& arch = models::architecture(hf.bert.model_type());
  if (cfg.task == Task::ReplacedTokenDetection && !arch.replaced_token_detection)
    throw UserError(std::string("task replaced_token_detection: ELECTRA models only (model_type electra), and ") +
                    (pretrained.empty() ? std::string("the model") : pretrained.string()) + " is a " + arch.model_type +
                    " model: start from an ELECTRA discriminator (model.pretrained) or set "
                    "model.config.model_type: electra");
  if (pretrained.empty() && !tokenizer_kind(arch.tokenizer).vocab_file)
    throw UserError(std::string("model.config.model_type: a ") + arch.model_type +
                    " model reads its tokenizer files from its directory; start from one (model.pretrained)");
  if (cfg.model.vocab.empty() && pretrained.empty())
    throw UserError("model.vocab: required when model.pretrained is null");
  if (!cfg.model.vocab.empty() && !tokenizer_kind(arch.tokenizer).vocab_file)
    throw UserError("model.vocab: a WordPiece vocabulary, but " + (pretrained / "config.json").string() + " is a " +
                    arch.model_type + " model whose tokenizer is read from its directory: remove model.vocab");
  const TokenizerFiles tokenizer_files = load_tokenizer(pretrained, arch, cfg.model.do_lower_case, cfg.model.vocab);
  const auto& tokenizer = tokenizer_files.tokenizer;
  const std::string vocab_name = tokenizer_files.files.front().string();

  // Data first: the label set sizes the head.
  TrainerParts parts;
  SpanConfig span = cfg.span;  // span.unanswerable: set below from the training questions
  if (task_spec(cfg.task).input == TaskInput::MlmText) {
    const auto masking = mlm_masking(cfg, *tokenizer);
    parts.train = load_task_data(cfg.task, cfg.data, parts.labels, cfg.data.train, *tokenizer, cfg.model.max_seq_length,
                                 cfg.model.truncate_method, false, cfg.span, masking);
    if (!cfg.data.dev.empty())
      parts.dev = load_task_data(cfg.task, cfg.data, parts.labels, cfg.data.dev, *tokenizer, cfg.model.max_seq_length,
                                 cfg.model.truncate_method, false, cfg.span, masking);
    // The dev loss is computed over the tokens its one fixed mask draw selects: none, no dev metric.
    if (!parts.dev.encoded.empty() && masked_tokens(parts.dev.encoded, masking) == 0) {
      const std::string what = "data.dev: the fixed evaluation masks select no token in its " +
                               std::to_string(parts.dev.encoded.size()) + " text(s) (model.mlm_probability " +
                               std::to_string(cfg.model.mlm_probability) +
                               "), so no dev loss or perplexity can be "
                               "computed; add dev texts or raise model.mlm_probability";
      if (cfg.training.early_stopping.patience > 0) throw UserError(what + " (training.early_stopping watches them)");
      parts.notes.push_back("warning: " + what + "; the run has no dev metrics and no best/");
    }
    if (!cfg.data.test.empty())
      parts.test = load_task_data(cfg.task, cfg.data, parts.labels, cfg.data.test, *tokenizer, cfg.model.max_seq_length,
                                  cfg.model.truncate_method, false, cfg.span, masking);
  } else {
    auto train_records = read_records(cfg.data.train, record_fields(cfg.task, cfg.data, true));
    parts.labels = collect_labels(cfg.task, cfg.data, cfg.data.train, train_records);
    parts.train.file = cfg.data.train;
    parts.train.examples = make_examples(cfg.task, cfg.data, parts.labels, cfg.data.train, train_records, true);
    const auto method = parse_truncate_method(cfg.model.truncate_method);
    if (cfg.task == Task::SpanExtraction) {
      // SQuAD 2.0 style data (questions without answers) makes a model that may answer nothing.
      const auto none = std::count_if(parts.train.examples.begin(), parts.train.examples.end(),
                                      [](const Example& e) { return e.has_label && e.answers.empty(); });
      span.unanswerable = none > 0;
      if (none > 0)
        parts.notes.push_back("span: " + std::to_string(none) + " of " + std::to_string(parts.train.examples.size()) +
                              " training questions have no answer: the model answers nothing where [CLS]'s score "
                              "exceeds the best span's by more than span.null_score_diff_threshold (" +
                              std::to_string(span.null_score_diff_threshold) + ")");
    }
    parts.train.span = span;
    // data.long_text windows: every window a training example with its text's label.
    parts.train.windows = TextWindows::of(cfg.data.long_text, cfg.data.long_text_stride, cfg.data.long_text_pooling);
    parts.train.encoded =
        encode_examples(cfg.task, parts.train.examples, *tokenizer, static_cast<int>(cfg.model.max_seq_length), method,
                        span, parts.train.windows);
    if (parts.train.windows.on && parts.train.encoded.size() > parts.train.examples.size())
      parts.notes.push_back("data.long_text: windows: " + std::to_string(parts.train.examples.size()) +
                            " training texts make " + std::to_string(parts.train.encoded.size()) +
                            " windows of at most " + std::to_string(cfg.model.max_seq_length) + " tokens");
    for (auto& line :
         label_report(cfg.task, cfg.data, parts.labels, cfg.data.train, train_records, parts.train.examples))
      parts.notes.push_back(std::move(line));
    if (!cfg.data.dev.empty())
      parts.dev = load_task_data(cfg.task, cfg.data, parts.labels, cfg.data.dev, *tokenizer, cfg.model.max_seq_length,
                                 cfg.model.truncate_method, true, span);
    if (!cfg.data.test.empty())
      parts.test = load_task_data(cfg.task, cfg.data, parts.labels, cfg.data.test, *tokenizer, cfg.model.max_seq_length,
                                  cfg.model.truncate_method, true, span);
  }

  // Model: pretrained config (+ overrides) or BertConfig defaults (+ overrides).
  if (pretrained.empty() && !cfg.model.config.contains("vocab_size")) hf.bert.vocab_size(tokenizer->vocab_size());
  apply_overrides(hf.bert, cfg.model.bert);
  hf.bert.sparse_embeddings(cfg.model.sparse_embeddings);
  hf.bert.unpad_inputs(cfg.model.unpadded);
  hf.bert.gradient_checkpointing(cfg.training.gradient_checkpointing);
  try {
    hf.bert.validate();
  } catch (const std::invalid_argument& e) { throw UserError(std::string("model.bert: ") + e.what()); }
  // The padding id indexes the word embeddings (as config.json's is checked when read).
  if ((cfg.model.bert.pad_token_id || cfg.model.bert.vocab_size) && hf.bert.pad_token_id() >= hf.bert.vocab_size())
    throw UserError("model.bert.pad_token_id: must be in [0, vocab_size " + std::to_string(hf.bert.vocab_size()) +
                    "), got " + std::to_string(hf.bert.pad_token_id()));
  if (tokenizer->vocab_size() > hf.bert.vocab_size())
    throw UserError((cfg.model.vocab.empty() ? std::string("model.pretrained") : std::string("model.vocab")) + ": '" +
                    vocab_name + "' has " + std::to_string(tokenizer->vocab_size()) +
                    " tokens but the model's vocab_size is " + std::to_string(hf.bert.vocab_size()));
  if (cfg.model.max_seq_length > models::max_input_length(hf.bert))
    throw UserError(
        "model.max_seq_length: " + std::to_string(cfg.model.max_seq_length) +
        " exceeds the model's max_position_embeddings " + std::to_string(hf.bert.max_position_embeddings()) +
        (models::max_input_length(hf.bert) != hf.bert.max_position_embeddings()
             ? " less the " + std::to_string(hf.bert.max_position_embeddings() - models::max_input_length(hf.bert)) +
                   " positions its family reserves"
             : std::string()));
  check_segments(cfg.task, cfg.data.text_fields, "data.text_fields", models::usable_token_types(hf.bert),
                 cfg.model.bert.type_vocab_size ? std::string("the model (model.bert.type_vocab_size)")
                 : pretrained.empty()           ? std::string("the model")
                                                : "the model (" + (pretrained / "config.json").string() + ")");
  const int64_t num_labels = head_num_labels(cfg.task, static_cast<size_t>(parts.labels.size()));
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));  // fresh weights (a new head) depend on the seed only
  std::shared_ptr<models::EncoderTaskModel> model;
  bool head_loaded = false;  // every weight but exit branches from the pretrained directory
  if (!pretrained.empty()) {
    PretrainedOptions po;
    po.task = cfg.task;
    po.num_labels = num_labels;
    po.sparse_embeddings = cfg.model.sparse_embeddings;
    po.unpad_inputs = cfg.model.unpadded;
    po.gradient_checkpointing = cfg.training.gradient_checkpointing;
    po.fresh_mismatched_head = true;
    if (cfg.model.config.is_object() && !cfg.model.config.empty())
      po.config_source = (pretrained / "config.json").string() + " with model.config's fields";
    auto loaded = load_pretrained(pretrained, hf, po);
    head_loaded = std::all_of(loaded.report.missing.begin(), loaded.report.missing.end(),
                              [](const std::string& name) { return name.rfind("branches.", 0) == 0; });
    for (auto& note : load_notes(loaded.report, pretrained, models::hf_architecture(*loaded.model)))
      parts.notes.push_back(std::move(note));
    model = loaded.model;
  } else {
    // No checkpoint bounds the sizes: refuse a model whose training state would not fit in memory
    // before allocating it (weights, gradients and the optimizer's moments, in float32).
    const OptimizerConfig& opt = cfg.training.optimizer;
    const double state = opt.name == OptimizerKind::Sgd ? (opt.momentum != 0 ? 1 : 0) : 2;
    check_model_memory(hf.bert, cfg.model.config.empty() ? std::string("model.bert") : std::string("model.config"),
                       2 + state);
    try {
      model = models::make_encoder_task_model(cfg.task, hf.bert, num_labels);
    } catch (const std::invalid_argument& e) { throw UserError(std::string("model.bert: ") + e.what()); }
  }
  parts.class_weights = class_weights_for(cfg, parts.labels, parts.train, &parts.notes);
  apply_training_loss(cfg, *model, parts.class_weights);
  apply_crf(cfg, *model, parts.labels, &parts.notes);
  apply_verifier(cfg, *model, &parts.notes);
  apply_early_exit(cfg, *model, head_loaded, &parts.notes);
  // A sentence-transformers save keeps its pooling and normalization (modules.json at its root).
  apply_embedding(cfg, *model, cfg.model.pretrained.empty() ? fs::path() : fs::path(cfg.model.pretrained));
  parts.model = model;
  if (!cfg.distill.teacher.empty()) {
    parts.model = distillation_model(cfg, model, *tokenizer, parts.labels);
    parts.notes.push_back("distill: teacher " + cfg.distill.teacher + " (frozen, eval mode), temperature " +
                          std::to_string(cfg.distill.temperature) + ", alpha " + std::to_string(cfg.distill.alpha));
    if (const auto* d = dynamic_cast<const models::DistillationModel*>(parts.model.get()); d && d->intermediate()) {
      std::string pairs;
      for (const auto& [s, t] : d->intermediate()->layers)
        pairs += (pairs.empty() ? "" : ", ") + std::to_string(s) + "<-" + std::to_string(t);
      parts.notes.push_back("distill.intermediate: student layer <- teacher layer " + pairs +
                            (d->has_projection() ? "; hidden states through distill_projection (not saved with the "
                                                   "student)"
                                                 : ""));
    }
  }
  auto meta = model_meta(cfg, parts.labels.names);
  meta.span.unanswerable = span.unanswerable;
  if (cfg.task == Task::ReplacedTokenDetection) {
    add_electra_pretraining(cfg, model, hf, generator_dir, tokenizer_files, meta, parts);
    return parts;
  }
  const auto hf_base = hf;
  const auto labels = parts.labels.names;
  // A checkpoint (save with `extra`) also keeps the wrapper's own parameters (distill.intermediate's
  // projection) in trainer_parameters.safetensors, so that a resume goes on with them; the model
  // directories (best/, final/) hold the model alone.
  const std::shared_ptr<models::TaskModel> trained = parts.model;
  parts.save_model = [model, trained, hf_base, labels, tokenizer_files, meta](
                         const fs::path& dir, const std::function<void(const fs::path&)>& extra) {
    TensorMap own;
    if (extra) {
      const auto student = model->named_parameters();
      for (const auto& p : trained->named_parameters())
        if (student.find(p.key()) == nullptr) own[p.key()] = p.value().detach();
    }
    const std::function<void(const fs::path&)> with_own = own.empty() ? extra : [&](const fs::path& tmp) {
      extra(tmp);
      write_safetensors(tmp / kTrainerParametersFile, own);
    };
    save_model_dir(dir, *model, describe_model(*model, labels, hf_base), tokenizer_files, meta, with_own);
  };
  parts.load_model = [model, trained](const fs::path& dir) {
    load_checkpoint_weights(*model, dir);
    if (fs::exists(dir / kTrainerParametersFile))
      load_state_dict(*trained, read_safetensors(dir / kTrainerParametersFile).tensors);
  };
  if (cfg.data.retrieval.given()) {
    const auto data = std::make_shared<const RetrievalData>(
        read_retrieval_data(cfg.data.retrieval.queries, cfg.data.retrieval.corpus));
    parts.notes.push_back("data.retrieval: " + std::to_string(data->queries.size()) + " queries, " +
                          std::to_string(data->corpus.size()) + " documents, ranked at every dev evaluation");
    parts.score_retrieval =
        [model, data, tokenizer = tokenizer_files.tokenizer, length = static_cast<int>(cfg.model.max_seq_length),
         method = parse_truncate_method(cfg.model.truncate_method), batch = cfg.training.evaluation_batch_size()] {
          return evaluate_retrieval(*model, *data, *tokenizer, length, method, batch);
        };
  }
  return parts;
}

}  // namespace unif::framework
