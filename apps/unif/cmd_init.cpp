// `unif init TASK [--model DIR] [--data FILE]` (SPEC §8): prints a commented YAML config for TASK
// that `unif train` accepts as is. With --data, data.train is FILE and the text and label fields
// come from the file's fields (the labels found are listed in a comment); with --model,
// model.pretrained is DIR. Without them it points at what trains out of the box from unif's source
// directory: the bundled tiny random-weight BERT and the task's sample data set under data/.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/unif/commands.h"
#include "framework/checkpoint/hf_config.h"
#include "framework/common/error.h"
#include "framework/common/hf_dir.h"
#include "framework/config/run_config.h"
#include "framework/data/records.h"
#include "models/architectures.h"

namespace fs = std::filesystem;

namespace unif::app {

namespace {

const char* const kTinyModel = "tests/fixtures/tiny-bert-zh";

/// A path that exists from here: `rel` as is when it does, else under unif's source directory when
/// that holds it (a binary run from elsewhere), else `rel` (then the comment says where to run).
std::string bundled(const std::string& rel) {
  std::error_code ec;
  if (fs::exists(rel, ec)) return rel;
#ifdef UNIF_SOURCE_DIR
  const fs::path in_source = fs::path(UNIF_SOURCE_DIR) / rel;
  if (fs::exists(in_source, ec)) return in_source.string();
#endif
  return rel;
}

/// `s` as a YAML scalar: plain when that reads back as the same string, else double-quoted.
std::string yaml_scalar(const std::string& s) {
  bool plain = !s.empty();
  for (unsigned char c : s)
    plain = plain && (std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/' || c == '$' || c >= 0x80);
  if (plain) {
    static const std::set<std::string> special{"null",  "Null",  "NULL", "true", "True", "TRUE", "false",
                                               "False", "FALSE", "yes",  "Yes",  "no",   "No",   "on",
                                               "On",    "off",   "Off",  "y",    "n",    "~"};
    const bool numeric = s.find_first_not_of("0123456789.-+eE_") == std::string::npos;
    plain = !special.count(s) && !numeric && s[0] != '-' && s[0] != '.';
  }
  if (plain) return s;
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += static_cast<char>(c);
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else
      out += static_cast<char>(c);
  }
  return out + "\"";
}

std::string yaml_list(const std::vector<std::string>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + yaml_scalar(values[i]);
  return out + "]";
}

/// "key: value" padded so that the comment starts at column 34 (or two spaces after a long value).
std::string line(const std::string& indent, const std::string& key, const std::string& value,
                 const std::string& comment = "") {
  std::string l = indent + key + ": " + value;
  if (!comment.empty()) l += std::string(l.size() < 32 ? 34 - l.size() : 2, ' ') + "# " + comment;
  return l + "\n";
}

/// The sample data set of each task under data/ (the repository's), with its dev file.
std::pair<std::string, std::string> sample_data(Task task) {
  switch (task) {
    case Task::Classification: return {"data/sib200_zh/train.jsonl", "data/sib200_zh/dev.jsonl"};
    case Task::Multilabel: return {"data/nlupp_en/train.jsonl", "data/nlupp_en/dev.jsonl"};
    case Task::Regression: return {"data/stsb_en/train.jsonl", "data/stsb_en/dev.jsonl"};
    case Task::TokenClassification: return {"data/weibo_ner_zh/train.jsonl", "data/weibo_ner_zh/dev.jsonl"};
    case Task::SpanExtraction: return {"data/cmrc2018_zh/train.jsonl", "data/cmrc2018_zh/dev.jsonl"};
    case Task::MaskedLm:
    case Task::ReplacedTokenDetection: return {"data/sib200_zh/train.jsonl", "data/sib200_zh/dev.jsonl"};
    // SNLI (anchor, positive, hard negative) triplets; STS-B dev pairs with their scores.
    case Task::Embedding: return {"data/snli_en/triplets.jsonl", "data/stsb_en/dev.jsonl"};
  }
  return {"", ""};
}

/// A dev file next to `train` named as HF datasets and most corpora name it: "train" in the file
/// name replaced by dev, validation, valid or val (train.jsonl -> dev.jsonl, x.train.csv ->
/// x.validation.csv), or "".
std::string sibling_dev(const fs::path& train) {
  const std::string name = train.filename().string();
  const auto at = name.find("train");
  if (at == std::string::npos) return "";
  std::error_code ec;
  for (const char* dev : {"dev", "validation", "valid", "val"}) {
    const fs::path p = train.parent_path() / (name.substr(0, at) + dev + name.substr(at + 5));
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

struct Fields {
  std::vector<std::string> text;   // data.text_fields
  std::string label;               // data.label_field
  std::vector<std::string> names;  // every field of the file's first record
  std::set<std::string> labels;    // the label values found (classification, multilabel, token tags)
};

bool is_string_list(const nlohmann::json& v) {
  if (!v.is_array() || v.empty()) return false;
  return std::all_of(v.begin(), v.end(), [](const nlohmann::json& x) { return x.is_string(); });
}

std::string first_present(const nlohmann::json& r, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (r.contains(n)) return n;
  return "";
}

/// The text and label fields of `file` for `task`, found by their names (the names HF datasets and
/// the common corpora use), else by their values.
Fields find_fields(Task task, const fs::path& file) {
  if (task_spec(task).input == TaskInput::MlmText && file.extension() == ".txt") return {{"text"}, "label", {}, {}};
  framework::RecordFields rf;
  rf.task = to_string(task);
  rf.conll_ok = task_spec(task).input == TaskInput::Tokens;
  const auto records = framework::read_records(file, rf);
  const nlohmann::json& first = records.front().fields;
  Fields f;
  for (const auto& [k, v] : first.items()) f.names.push_back(k);
  const std::string listed = file.string() + ": its fields are " + [&] {
    std::string s;
    for (const auto& n : f.names) s += (s.empty() ? "" : ", ") + n;
    return "[" + s + "]";
  }();
  const bool cells = framework::string_cells(file);
  auto longest_text = [&](const std::set<std::string>& skip) {
    std::string best;
    std::size_t best_len = 0;
    for (const auto& [k, v] : first.items())
      if (v.is_string() && !skip.count(k) && k != "id" && k != "idx" && v.get<std::string>().size() > best_len)
        best = k, best_len = v.get<std::string>().size();
    return best;
  };

  switch (task) {
    case Task::TokenClassification: {
      std::string tokens = first_present(first, {"tokens", "words", "token", "sentence"});
      if (tokens.empty())
        for (const auto& [k, v] : first.items())
          if (is_string_list(v)) {
            tokens = k;
            break;
          }
      std::string tags = first_present(first, {"tags", "ner_tags", "labels", "label", "ner", "bio", "tag"});
      if (tokens.empty() || tags.empty())
        throw UserError(listed +
                        "; cannot tell which holds the tokens (a list, e.g. 'tokens') and which the tags "
                        "(e.g. 'tags'): rename them, or write data.text_fields and data.label_field yourself");
      f.text = {tokens};
      f.label = tags;
      break;
    }
    case Task::SpanExtraction: {
      std::string q = first_present(first, {"question", "query"});
      std::string c = first_present(first, {"context", "passage", "paragraph"});
      std::string a = first_present(first, {"answers", "answer"});
      if (q.empty() || c.empty() || a.empty())
        throw UserError(listed +
                        "; span_extraction reads SQuAD-style records (question, context, answers with "
                        "text and answer_start)");
      f.text = {q, c};
      f.label = a;
      break;
    }
    case Task::Embedding: {
      // Every text field, the anchor first (anchor / positive / negative..., else the string fields in
      // name order: text_a, text_b, text_neg); a numeric score when there is one.
      for (const char* name : {"anchor", "positive", "negative"})
        if (first.contains(name) && first.at(name).is_string()) f.text.emplace_back(name);
      if (f.text.empty())
        for (const auto& [k, v] : first.items())
          if (v.is_string()) f.text.push_back(k);
      if (f.text.size() < 2)
        throw UserError(listed +
                        "; embedding reads two text fields or more (anchor, positive[, negatives]; or a scored "
                        "pair): write data.text_fields yourself");
      // Else `label`, the name STS-style dev files give the score, unless the training file holds
      // something else there (an NLI class name): then `score`.
      f.label = first.contains("label") ? "score" : "label";
      for (const char* name : {"score", "label", "similarity_score"})
        if (first.contains(name) && first.at(name).is_number()) {
          f.label = name;
          break;
        }
      break;
    }
    default: {
      const bool regression = task == Task::Regression;
      std::string label = regression
                              ? first_present(first, {"label", "score", "target", "labels", "y", "similarity_score"})
                              : first_present(first, {"label", "labels", "intent", "category", "class", "target",
                                                      "sentiment", "topic", "y"});
      if (label.empty() && task_spec(task).input != TaskInput::MlmText)
        throw UserError(listed +
                        "; cannot tell which holds the label: name it 'label', or write data.label_field "
                        "yourself");
      if (task_spec(task).input == TaskInput::MlmText) label = "label";
      for (const auto& pair : std::vector<std::pair<const char*, const char*>>{{"text_a", "text_b"},
                                                                               {"sentence1", "sentence2"},
                                                                               {"premise", "hypothesis"},
                                                                               {"question1", "question2"},
                                                                               {"text1", "text2"},
                                                                               {"sentence_a", "sentence_b"},
                                                                               {"question", "sentence"}})
        if (task_spec(task).input != TaskInput::MlmText && first.contains(pair.first) && first.contains(pair.second)) {
          f.text = {pair.first, pair.second};
          break;
        }
      if (f.text.empty()) {
        std::string text = first_present(
            first, {"text", "sentence", "content", "review", "document", "utterance", "query", "question", "title"});
        if (text.empty() || text == label) text = longest_text({label});
        if (text.empty())
          throw UserError(listed +
                          "; cannot tell which holds the text: name it 'text', or write data.text_fields "
                          "yourself");
        f.text = {text};
      }
      f.label = label;
    }
  }
  if (task == Task::Classification) {
    const auto it = first.find(f.label);
    if (it != first.end() && it->is_array())
      throw UserError(file.string() + ":" + std::to_string(records.front().line) + ": field '" + f.label +
                      "' holds a list of labels: that is task multilabel (unif init multilabel --data " +
                      file.string() + ")");
  }
  // The label values, for the comment (and the checks a user would otherwise meet at train time).
  if (has_label_set(task)) {
    for (const auto& r : records) {
      const auto it = r.fields.find(f.label);
      if (it == r.fields.end() || it->is_null()) continue;
      const bool list = task_spec(task).labels != TaskLabels::OneClass;
      if (list && it->is_string() && cells) {
        std::istringstream in(it->get<std::string>());
        for (std::string w; in >> w;) f.labels.insert(w);
      } else if (list && it->is_array()) {
        for (const auto& x : *it) f.labels.insert(x.is_string() ? x.get<std::string>() : x.dump());
      } else {
        f.labels.insert(it->is_string() ? it->get<std::string>() : it->dump());
      }
    }
  }
  return f;
}

std::string init_config(const std::string& task_name, const std::string& model, const std::string& data,
                        const std::string& command) {
  const Task task = framework::parse_task(task_name);  // UserError listing the tasks
  std::error_code ec;
  if (task == Task::ReplacedTokenDetection && model.empty())
    throw UserError(
        "unif init replaced_token_detection: name the ELECTRA discriminator to start from with --model DIR "
        "(e.g. google/electra-small-discriminator's directory); the bundled tiny model is a BERT");

  // ---- the model ----
  // The directory as read (`$UNIF_HOME/...` and `~/` expanded), and as written in the config: a
  // model under $UNIF_HOME (where scripts/fetch-model.sh puts them) is written `$UNIF_HOME/...`,
  // so that the config works for anyone whose UNIF_HOME holds the same models.
  const std::string model_dir = expand_model_path(model);
  std::string pretrained = model_dir;
  int64_t max_positions = 512;
  if (!model.empty()) {
    if (!fs::is_directory(model_dir, ec))
      throw UserError("--model: '" + model +
                      "' is not a directory; expected an HF model directory (config.json, "
                      "tokenizer files, model weights)");
    const fs::path home = fs::weakly_canonical(unif_home(), ec);
    const fs::path rel = fs::weakly_canonical(fs::absolute(model_dir, ec), ec).lexically_relative(home);
    if (!rel.empty() && *rel.begin() != ".." && rel != ".") pretrained = "$UNIF_HOME/" + rel.string();
  } else {
    pretrained = bundled(kTinyModel);
  }
  {
    // The longest input the model takes: max_position_embeddings, less the offset of families whose
    // positions start after the padding id (RoBERTa, XLM-R). unif train reports an unreadable
    // config.json; here it only caps max_seq_length.
    const fs::path config = fs::path(model.empty() ? pretrained : model_dir) / "config.json";
    try {
      max_positions = models::max_input_length(framework::read_hf_config(config).bert);
    } catch (const std::exception&) {
      std::ifstream in(config, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      try {
        const auto j = nlohmann::json::parse(text.str());
        if (j.contains("max_position_embeddings") && j["max_position_embeddings"].is_number_integer())
          max_positions = j["max_position_embeddings"].get<int64_t>();
      } catch (const std::exception&) {}
    }
  }
  const bool tiny = model.empty();
  int64_t max_len = task == Task::SpanExtraction ? 384 : 128;
  max_len = std::min(max_len, max_positions);

  // ---- the data ----
  std::string train = data, dev;
  if (!data.empty()) {
    if (!fs::is_regular_file(data, ec))
      throw UserError("--data: '" + data + "' " + (fs::exists(data, ec) ? "is not a file" : "does not exist"));
    dev = sibling_dev(data);
  } else {
    const auto [t, d] = sample_data(task);
    train = bundled(t);
    dev = bundled(d);
    if (!fs::exists(dev, ec)) dev.clear();
  }
  Fields fields;
  if (fs::is_regular_file(train, ec)) fields = find_fields(task, train);

  std::ostringstream y;
  y << "# unif config for " << task_name << ", written by `" << command << "`.\n"
    << "# Train:  unif train THIS.yaml   (any key can be overridden: --set training.epochs=5)\n"
    << "# Every key with its default and meaning: `unif help keys`; the reference is docs/spec.md.\n"
    << "# Relative paths resolve against the current directory, not this file's folder.\n\n";
  y << line("", "task", task_name);
  y << line("", "output_dir", yaml_scalar("runs/" + task_name),
            "checkpoints/, final/, best/, metrics.jsonl, train.log");
  y << line("", "seed", "42") << "\n";

  y << "model:\n";
  if (tiny) {
    y << "  # No --model given: unif's bundled tiny random-weight BERT, so that this config trains as is\n"
         "  # (a check of the data and the set-up; it learns little). Put your HF model directory here\n"
         "  # (config.json, tokenizer files, weights), e.g. a local bert-base-uncased, or run\n"
         "  # `unif init "
      << task_name << " --model DIR`.\n";
    y << line("  ", "pretrained", yaml_scalar(pretrained));
    y << line("  ", "bert", "{hidden_dropout_prob: 0.0, attention_probs_dropout_prob: 0.0}",
              "too small to need dropout");
  } else {
    y << line("  ", "pretrained", yaml_scalar(pretrained), "an HF model directory");
  }
  y << line(
      "  ", "max_seq_length", std::to_string(max_len),
      "tokens incl. [CLS]/[SEP]; at most the longest input the model takes (" + std::to_string(max_positions) + ")");
  if (fields.text.size() == 2) y << line("  ", "truncate_method", "longer-FO", "cut the longer text of the pair first");
  y << "\n";

  y << "data:\n";
  if (data.empty())
    y << "  # No --data given: the sample data set of this task in unif's source directory. Yours:\n"
         "  # `unif init "
      << task_name << " --data FILE`.\n";
  y << "  # .jsonl, or .tsv / .csv with a header row; .conll / .bio / .iob for token_classification\n"
       "  # (docs/spec.md, \"Data files\").\n";
  y << line("  ", "train", yaml_scalar(train));
  if (dev.empty())
    y << line("  ", "dev", "null", "a held-out file: evaluated during training; picks best/");
  else
    y << line("  ", "dev", yaml_scalar(dev), "evaluated during training; picks best/");
  if (task_spec(task).input == TaskInput::MlmText && fs::path(train).extension() == ".txt") {
    y << line("  ", "text_fields", "[text]", "unused for .txt (one text a line)");
  } else if (!fields.text.empty()) {
    std::string found;
    for (const auto& n : fields.names) found += (found.empty() ? "" : ", ") + n;
    y << line("  ", "text_fields", yaml_list(fields.text), "the file's fields: " + found);
    if (task_spec(task).input != TaskInput::MlmText) y << line("  ", "label_field", yaml_scalar(fields.label));
  }
  if (!fields.labels.empty()) {
    std::string list;
    std::size_t i = 0;
    for (const auto& l : fields.labels) {
      if (i++ == 40) {
        list += ", ... (" + std::to_string(fields.labels.size()) + " in all)";
        break;
      }
      list += (list.empty() ? "" : ", ") + yaml_scalar(l);
    }
    y << "  # The " << fields.labels.size() << " labels in data.train: [" << list << "]\n";
    y << line("  ", "labels", "null", "null = collected from data.train, sorted; or list them in id order");
  }
  y << "\n";

  y << "training:\n";
  y << line("  ", "batch_size", tiny ? "16" : "32",
            "the global batch, split over all devices (HF: per-device size x devices)");
  y << line("  ", "epochs", "3", "or max_steps (wins when > 0)");
  y << line("  ", "max_steps", "0");
  if (tiny)
    y << line("  ", "optimizer", "{name: adamw, lr: 5.0e-3}",
              "high, as for random weights; 2e-5 to 5e-5 for a pretrained model");
  else
    y << line("  ", "optimizer", "{name: adamw, lr: 5.0e-5, weight_decay: 0.01}", "HF: learning_rate, weight_decay");
  y << line("  ", "schedule", "{name: linear, warmup_ratio: 0.1}", "linear | constant | cosine");
  y << line("  ", "precision", "fp32", "fp32 | bf16 | fp16 (fp16 on GPUs)");
  y << line("  ", "eval_every", "0", "steps between dev evaluations; 0 = at the end of each epoch");
  y << line("  ", "save_every", "0", "steps between checkpoints; 0 = at the end of each epoch");
  y << "\n";
  y << "parallel:\n";
  y << line("  ", "devices", "auto", "GPUs when visible, else the fastest CPU set-up; or [cpu], [cuda:0, cuda:1]");
  if (task == Task::SpanExtraction) {
    y << "\nspan:\n";
    y << line("  ", "doc_stride", tiny ? "32" : "128", "pieces between the starts of consecutive context windows");
  }
  return y.str();
}

}  // namespace

Command add_init(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "init",
      "Print a commented config for TASK that `unif train` accepts as is: unif init TASK [--model DIR] "
      "[--data FILE] > config.yaml");
  auto task = std::make_shared<std::string>();
  auto model = std::make_shared<std::string>();
  auto data = std::make_shared<std::string>();
  cmd->add_option("task", *task,
                  "classification | multilabel | regression | token_classification | span_extraction | masked_lm | "
                  "embedding | replaced_token_detection");
  cmd->add_option("--model", *model, "HF model directory (model.pretrained); default: the bundled tiny model");
  cmd->add_option("--data", *data,
                  "training data file (.jsonl, .tsv, .csv; .conll/.bio/.iob for token_classification): data.train, "
                  "with the text and label fields read from it");
  cmd->footer("Then: unif train config.yaml. Every config key: unif help keys; reference: docs/spec.md.");
  return [task, model, data]() -> int {
    if (task->empty())
      throw UserError(
          "unif init TASK: name the task, one of classification | multilabel | regression | "
          "token_classification | span_extraction | masked_lm | embedding | replaced_token_detection");
    std::string command = "unif init " + *task;
    if (!model->empty()) command += " --model " + *model;
    if (!data->empty()) command += " --data " + *data;
    std::cout << init_config(*task, *model, *data, command);
    return 0;
  };
}

}  // namespace unif::app
