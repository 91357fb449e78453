#include "framework/model/model_dir.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_EXCHANGE (glibc >= 2.28, _GNU_SOURCE)
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/checkpoint/atomic_file.h"
#include "framework/checkpoint/pretrained.h"
#include "framework/common/error.h"
#include "framework/common/hf_dir.h"
#include "framework/common/json_input.h"
#include "framework/model/sentence_transformers.h"
#include "framework/text/tokenizer_kinds.h"
#include "models/architectures.h"
#include "models/heads/embedding_model.h"
#include "models/heads/factory.h"

namespace unif::framework {

namespace fs = std::filesystem;

int64_t segment_count(Task task, const std::vector<std::string>& text_fields) {
  return segment_count(task_spec(task).input, text_fields.size());
}

void check_segments(Task task, const std::vector<std::string>& text_fields, const std::string& fields_key,
                    int64_t type_vocab_size, const std::string& model_name) {
  const int64_t segments = segment_count(task, text_fields);
  if (segments <= type_vocab_size) return;
  const bool question_context = task_spec(task).input == TaskInput::QuestionContext;
  std::string list;
  for (const auto& f : text_fields) list += (list.empty() ? "" : ", ") + f;
  throw UserError(fields_key + ": [" + list + "] makes " +
                  (question_context ? "question / context pairs" : "sentence pairs") + " (token types 0 and 1), but " +
                  model_name + " has type_vocab_size " + std::to_string(type_vocab_size) +
                  " (one token type, as RoBERTa-style configs): " +
                  (question_context ? to_string(task) + " needs a model with type_vocab_size >= 2"
                                    : "use one text field or a model with type_vocab_size >= 2"));
}

bool is_complete(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "COMPLETE", ec);
}

HfConfig describe_model(const models::EncoderTaskModel& model, const std::vector<std::string>& labels,
                        const HfConfig& base) {
  HfConfig hf = base;
  hf.bert = model.options();
  hf.architectures = {models::hf_architecture(model)};
  hf.problem_type = task_spec(model.kind()).problem_type;
  hf.num_labels = model.num_labels();
  hf.id2label = labels;
  if (!has_label_set(model.kind())) hf.id2label.clear();
  return hf;
}

namespace {

// Replaces `dir` by the complete directory `tmp` (a sibling). Linux swaps the two in one step
// (renameat2 RENAME_EXCHANGE), so `dir` is always there, old or new; where the file system cannot,
// the old one is first moved to `<dir>.old-<pid>` (a kill between the two renames is undone by
// recover_interrupted_saves). The parent directory is synced before the old copy is removed.
void publish_dir(const fs::path& tmp, const fs::path& dir) {
  const auto fail = [&](const std::string& what, int err) {
    return UserError(dir.string() + ": cannot publish the saved model directory: " + what + ": " + std::strerror(err));
  };
  const fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
  std::error_code ec;
  fs::path old;  // where the previous directory is now, if any
  if (!fs::exists(dir, ec)) {
    if (::rename(tmp.c_str(), dir.c_str()) != 0) throw fail("rename", errno);
  } else if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0) {
    old = tmp;
  } else if (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) {
    old = dir;
    old += ".old-" + std::to_string(::getpid());
    fs::remove_all(old, ec);
    if (::rename(dir.c_str(), old.c_str()) != 0) throw fail("rename", errno);
    if (::rename(tmp.c_str(), dir.c_str()) != 0) throw fail("rename", errno);
  } else {
    throw fail("renameat2", errno);
  }
  detail::sync_path(parent);
  if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace

void write_model_files(const fs::path& dir, const models::EncoderTaskModel& model, const HfConfig& hf,
                       const TokenizerFiles& tokenizer, const ModelMeta& meta) {
  save_pretrained(dir, model, hf);
  // The tokenizer's files under the names HF looks for (a WordPiece vocabulary given as
  // model.vocab may have another name; it is the first file, the others keep theirs).
  const auto& arch = model.architecture();
  for (size_t i = 0; i < tokenizer.files.size(); ++i) {
    const fs::path& file = tokenizer.files[i];
    const fs::path name = i == 0 && tokenizer_kind(arch.tokenizer).vocab_file ? fs::path("vocab.txt") : file.filename();
    fs::copy_file(file, dir / name, fs::copy_options::overwrite_existing);
  }
  write_model_meta(dir / "unif.yaml", meta);
  if (const auto* embedder = dynamic_cast<const models::EncoderForEmbeddingImpl*>(&model)) {
    const auto& o = embedder->embedding_options();
    SentenceTransformersModules st;
    st.pooling = name_of(o.pooling);
    st.normalize = o.normalize;
    st.max_seq_length = meta.max_seq_length;
    st.similarity = name_of(o.loss.similarity);
    write_sentence_transformers(dir, st, model.options().hidden_size());
  }
  if (tokenizer_kind(arch.tokenizer).vocab_file || tokenizer.config.empty()) {
    const std::string lower = tokenizer_kind(arch.tokenizer).vocab_file
                                  ? std::string("\"do_lower_case\": ") + (meta.do_lower_case ? "true" : "false") + ", "
                                  : std::string();
    detail::write_text_file_atomic(dir / "tokenizer_config.json",
                                   "{" + lower + "\"model_max_length\": " + std::to_string(meta.max_seq_length) +
                                       ", \"tokenizer_class\": \"" + tokenizer.tokenizer_class + "\"}\n");
  } else {
    // The pretrained directory's own (its special tokens' flags, normalization), with the run's length.
    nlohmann::json j;
    try {
      std::ifstream in(tokenizer.config);
      std::stringstream text;
      text << in.rdbuf();
      j = parse_json(text.str());
    } catch (const JsonInputError& e) { throw UserError(tokenizer.config.string() + ": invalid JSON: " + e.what()); }
    if (!j.is_object()) throw UserError(tokenizer.config.string() + ": expected a JSON object");
    j["model_max_length"] = meta.max_seq_length;
    if (!j.contains("tokenizer_class")) j["tokenizer_class"] = tokenizer.tokenizer_class;
    detail::write_text_file_atomic(dir / "tokenizer_config.json", j.dump(2) + "\n");
  }
}

void save_dir_atomically(const fs::path& dir, const std::function<void(const fs::path&)>& write) {
  fs::path tmp = dir;
  tmp += ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp, ec) && ec) throw UserError(tmp.string() + ": cannot create: " + ec.message());
  try {
    write(tmp);
    // Durable before it is declared complete: every file, then the directory, then COMPLETE.
    detail::sync_dir_and_files(tmp);
    detail::write_text_file_atomic(tmp / "COMPLETE", "ok\n");
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    throw UserError(dir.string() + ": cannot write model directory: " + e.what());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  publish_dir(tmp, dir);
}

void save_model_dir(const fs::path& dir, const models::EncoderTaskModel& model, const HfConfig& hf,
                    const TokenizerFiles& tokenizer, const ModelMeta& meta,
                    const std::function<void(const fs::path&)>& extra) {
  save_dir_atomically(dir, [&](const fs::path& tmp) {
    write_model_files(tmp, model, hf, tokenizer, meta);
    if (extra) extra(tmp);
  });
}

std::vector<std::string> recover_interrupted_saves(const fs::path& parent) {
  std::vector<std::string> notes;
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) return notes;
  // Leftovers by the name they were saved for: `X.tmp-...` (being written, or, after an exchange,
  // the replaced copy) and `X.old-...` (the previous copy, moved aside by the fallback replace).
  struct Leftover {
    fs::path path;
    bool tmp;
  };
  std::map<std::string, std::vector<Leftover>> by_target;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const auto name = e.path().filename().string();
    const auto t = name.find(".tmp-"), o = name.find(".old-");
    if (t == std::string::npos && o == std::string::npos) continue;
    const size_t cut = std::min(t, o);
    by_target[name.substr(0, cut)].push_back({e.path(), cut == t});
  }
  for (auto& [target, leftovers] : by_target) {
    const fs::path dst = parent / target;
    if (!fs::exists(dst, ec)) {
      // Killed between the two renames of a replace (or before the first publish): restore the
      // newest complete copy, the new one (tmp) before the previous one (old).
      const Leftover* pick = nullptr;
      fs::file_time_type pick_time{};
      for (const auto& l : leftovers) {
        if (!fs::is_directory(l.path, ec) || !is_complete(l.path)) continue;
        const auto when = fs::last_write_time(l.path / "COMPLETE", ec);
        if (!pick || (l.tmp && !pick->tmp) || (l.tmp == pick->tmp && when > pick_time)) pick = &l, pick_time = when;
      }
      if (pick) {
        fs::rename(pick->path, dst, ec);
        if (ec) throw UserError(dst.string() + ": cannot restore it from " + pick->path.string() + ": " + ec.message());
        detail::sync_path(parent);
        notes.push_back("restored " + dst.string() + " from " + pick->path.filename().string() +
                        " (a save interrupted while it replaced the directory)");
      }
    }
    for (const auto& l : leftovers) fs::remove_all(l.path, ec);  // the restored one is gone already
  }
  return notes;
}

Task plain_hf_task(const HfConfig& hf, const fs::path& file) {
  if (const auto task = models::task_from_hf(hf.architectures, hf.problem_type, hf.num_labels)) return *task;
  std::string heads;
  for (const auto& t : kTaskSpecs) {
    const std::string name = models::hf_class_name(models::architecture(hf.bert.model_type()), t.task);
    if (heads.find(name) == std::string::npos) heads += (heads.empty() ? "" : ", ") + name;
  }
  throw UserError(file.string() + ": architectures: '" + hf.architectures.front() +
                  "' is not a task model unif can evaluate (" + heads + ")");
}

LoadedModel load_model_dir(const fs::path& root, bool unpad_inputs) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw UserError("--model: '" + root.string() + "' is not a directory");
  // A sentence-transformers save keeps its HF files in its Transformer module's folder (the root
  // itself for unif's saves), its pooling and normalization beside it.
  const fs::path dir = fs::exists(root / "config.json", ec) ? root : resolve_hf_dir(root);
  // A run's output_dir instead of one of its model directories: say which to use.
  if (!fs::exists(dir / "config.json", ec) &&
      (fs::is_directory(dir / "final", ec) || fs::is_directory(dir / "best", ec) ||
       fs::is_directory(dir / "checkpoints", ec)))
    throw UserError("--model: '" + dir.string() + "' is a run's output_dir, not a model directory: use " +
                    (dir / "final").string() + " (the model at the end of training) or " + (dir / "best").string() +
                    " (the best dev score)");
  if (!fs::exists(dir / "config.json", ec) && fs::is_directory(dir / "discriminator", ec) &&
      fs::is_directory(dir / "generator", ec))
    throw UserError("--model: '" + dir.string() + "' holds ELECTRA pretraining's two models: use " +
                    (dir / "generator").string() +
                    " (a masked-LM model: predict fills [MASK], eval reports perplexity), " + "or fine-tune " +
                    (dir / "discriminator").string() + " (model.pretrained)");
  LoadedModel lm;
  lm.hf = read_hf_config(dir / "config.json");
  const bool ours = fs::exists(dir / "unif.yaml", ec);
  if (ours) {
    if (!is_complete(dir))
      throw UserError(dir.string() + ": incomplete model directory (no COMPLETE marker): it was not fully written");
    lm.meta = read_model_meta(dir / "unif.yaml");
  } else {
    // A sentence-transformers save is an embedding model whatever config.json's architectures say:
    // SentenceTransformer reads its base model (all-mpnet-base-v2's config names MPNetForMaskedLM).
    lm.meta.task = fs::exists(root / "modules.json", ec) ? Task::Embedding : plain_hf_task(lm.hf, dir / "config.json");
    lm.meta.labels = lm.hf.id2label;
    lm.meta.max_seq_length = std::min<int64_t>(128, models::max_input_length(lm.hf.bert));
    auto fields = default_fields(lm.meta.task);
    lm.meta.text_fields = std::move(fields.text_fields);
    lm.meta.label_field = std::move(fields.label_field);
    // A question / context pair: the longer one (the context) gives way first.
    if (task_spec(lm.meta.task).input == TaskInput::QuestionContext) lm.meta.truncate_method = "longer-FO";
    lm.meta.do_lower_case = read_do_lower_case(dir).value_or(true);
  }
  if (lm.meta.task == Task::ReplacedTokenDetection)
    throw UserError("--model: '" + dir.string() +
                    "' is an ELECTRA discriminator (ElectraForPreTraining): it is fine-tuned (model.pretrained), "
                    "not evaluated or served alone");
  if (has_label_set(lm.meta.task)) {
    if (lm.meta.labels.empty())
      for (int64_t i = 0; i < lm.hf.num_labels; ++i) lm.meta.labels.push_back("LABEL_" + std::to_string(i));
    if (static_cast<int64_t>(lm.meta.labels.size()) != lm.hf.num_labels && !lm.hf.id2label.empty())
      throw UserError(dir.string() + ": unif.yaml lists " + std::to_string(lm.meta.labels.size()) +
                      " labels but config.json has " + std::to_string(lm.hf.num_labels));
  }
  // A pair input (unif.yaml's two text fields, a span model's question and context) on a model with
  // one token type would fail at the first batch (token type 1 out of range).
  check_segments(lm.meta.task, lm.meta.text_fields,
                 fs::exists(dir / "unif.yaml", ec) ? (dir / "unif.yaml").string() + ": text_fields" : dir.string(),
                 models::usable_token_types(lm.hf.bert), (dir / "config.json").string());
  lm.tokenizer_files = load_tokenizer(dir, models::architecture(lm.hf.bert.model_type()), lm.meta.do_lower_case);
  lm.tokenizer = lm.tokenizer_files.tokenizer;
  if (lm.tokenizer->vocab_size() > lm.hf.bert.vocab_size())
    throw UserError(lm.tokenizer_files.files.front().string() + ": " + std::to_string(lm.tokenizer->vocab_size()) +
                    " tokens but config.json vocab_size is " + std::to_string(lm.hf.bert.vocab_size()));
  const int64_t num_labels = head_num_labels(lm.meta.task, lm.meta.labels.size());
  try {
    lm.hf.bert.validate();
  } catch (const std::invalid_argument& e) { throw UserError((dir / "config.json").string() + ": " + e.what()); }
  PretrainedOptions po;
  po.task = lm.meta.task;
  po.num_labels = num_labels;
  po.unpad_inputs = unpad_inputs;
  auto loaded = load_pretrained(dir, lm.hf, po);
  // An embedder never reads its pooler: a save without the pooler's weights (sentence-transformers
  // saves of models without one) loads as HF's AutoModel loads it, the pooler left at its init.
  if (lm.meta.task == Task::Embedding) {
    auto& missing = loaded.report.missing;
    missing.erase(std::remove_if(missing.begin(), missing.end(),
                                 [](const std::string& k) { return k.find("pooler.") != std::string::npos; }),
                  missing.end());
  }
  if (!loaded.report.missing.empty())
    throw UserError(dir.string() + ": the checkpoint does not fit the model: " + describe(loaded.report));
  lm.model = loaded.model;
  if (auto* embedder = dynamic_cast<models::EncoderForEmbeddingImpl*>(lm.model.get())) {
    models::EmbeddingOptions o = embedder->embedding_options();
    if (const auto st = read_sentence_transformers(root)) {
      if (st->pooling) o.pooling = *enum_from_name<Pooling>(*st->pooling);
      o.normalize = st->normalize;
      if (const auto s = enum_from_name<Similarity>(st->similarity)) o.loss.similarity = *s;
      // A sentence-transformers save without unif.yaml: its own length (sentence_bert_config.json),
      // as SentenceTransformer(dir) reads it.
      if (!ours && st->max_seq_length)
        lm.meta.max_seq_length = std::min<int64_t>(*st->max_seq_length, models::max_input_length(lm.hf.bert));
    }
    embedder->set_embedding_options(std::move(o));
  }
  lm.model->eval();
  return lm;
}

}  // namespace unif::framework
