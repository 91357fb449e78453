#include "framework/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "framework/common/error.h"
#include "framework/data/span_dataset.h"

namespace unif::framework {

namespace {

using nlohmann::json;

std::vector<std::string> split_spaces(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

std::string scalar_label(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  throw std::invalid_argument("a label must be a string or an integer");
}

// A list field: a JSON array of scalars, or (TSV) a space-separated string.
std::vector<std::string> list_field(const json& v) {
  if (v.is_string()) return split_spaces(v.get<std::string>());
  if (!v.is_array()) throw std::invalid_argument("expected a list");
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(scalar_label(x));
  return out;
}

const json& field(const std::filesystem::path& file, const Record& r, const std::string& name) {
  auto it = r.fields.find(name);
  if (it == r.fields.end() || it->is_null()) throw UserError(where(file, r) + "missing field '" + name + "'");
  return *it;
}

}  // namespace

double sample_weight(const std::filesystem::path& file, const Record& r) {
  auto w = r.fields.find("weight");
  if (w == r.fields.end() || w->is_null()) return 1.0;
  // Weights and targets become float32 tensors: a larger value would overflow (to inf, or an
  // "internal" error when the batch is built).
  if (!w->is_number() || !(w->get<double>() >= 0.0) || w->get<double>() > std::numeric_limits<float>::max())
    throw UserError(where(file, r) +
                    "field 'weight' must be a non-negative number (at most 3.4e38, float32's largest)");
  return w->get<double>();
}

RecordFields record_fields(Task task, const DataConfig& cfg, bool require_labels) {
  RecordFields f;
  f.text_fields = cfg.text_fields;
  f.label_field = cfg.label_field;
  f.label_required =
      require_labels && task_spec(task).labels != TaskLabels::None && task_spec(task).labels != TaskLabels::Score;
  f.task = to_string(task);
  f.conll_ok = task_spec(task).input == TaskInput::Tokens;
  return f;
}

LabelSet LabelSet::from_names(std::vector<std::string> names) {
  LabelSet s;
  for (size_t i = 0; i < names.size(); ++i)
    if (!s.index.emplace(names[i], static_cast<int64_t>(i)).second)
      throw UserError("data.labels: label '" + names[i] + "' is listed twice");
  s.names = std::move(names);
  return s;
}

LabelSet collect_labels(Task task, const DataConfig& cfg, const std::filesystem::path& file,
                        const std::vector<Record>& records) {
  const TaskLabels kind = task_spec(task).labels;
  if (!has_label_set(task)) return {};
  if (cfg.labels_given) {
    if (cfg.labels.empty()) throw UserError("data.labels: the label list is empty");
    return LabelSet::from_names(cfg.labels);
  }
  std::set<std::string> seen;
  for (const auto& r : records) {
    const auto& v = field(file, r, cfg.label_field);
    try {
      if (kind == TaskLabels::OneClass)
        seen.insert(scalar_label(v));
      else
        for (auto& l : list_field(v)) seen.insert(l);
    } catch (const std::invalid_argument& e) {
      throw UserError(where(file, r) + "field '" + cfg.label_field + "': " + e.what());
    }
  }
  if (seen.size() < 2 && kind == TaskLabels::OneClass)
    throw UserError(file.string() + ": field '" + cfg.label_field +
                    "' has fewer than 2 distinct labels; a classifier needs at least 2");
  return LabelSet::from_names({seen.begin(), seen.end()});
}

std::vector<std::string> label_report(Task task, const DataConfig& cfg, const LabelSet& labels,
                                      const std::filesystem::path& file, const std::vector<Record>& records,
                                      const std::vector<Example>& examples) {
  std::vector<std::string> out;
  if (!has_label_set(task)) return out;
  // The label set with how often each label occurs in the training file.
  std::vector<int64_t> counts(labels.names.size(), 0);
  for (const auto& ex : examples)
    for (auto y : ex.labels)
      if (y >= 0 && static_cast<size_t>(y) < counts.size()) ++counts[static_cast<size_t>(y)];
  std::string list;
  for (size_t i = 0; i < labels.names.size(); ++i)
    list += (i ? ", " : "") + (labels.names[i].empty() ? std::string("\"\"") : labels.names[i]) + " (" +
            std::to_string(counts[i]) + ")";
  out.push_back(std::to_string(labels.names.size()) + " labels" + (cfg.labels_given ? " (data.labels)" : "") +
                ", with their counts in " + file.string() + ": " + list);
  // Values that are likely mistakes: an empty label, or a JSON type other than the others'
  // (1 among strings is read as the class "1", silently a class of its own).
  int64_t empty_line = 0, strings = 0, numbers = 0, string_line = 0, number_line = 0;
  std::string number_text;
  const auto look = [&](const json& v, int64_t line) {
    if (v.is_string()) {
      ++strings;
      if (!string_line) string_line = line;
      if (v.get<std::string>().empty() && !empty_line) empty_line = line;
    } else if (v.is_number() || v.is_boolean()) {
      ++numbers;
      if (!number_line) number_line = line, number_text = v.dump();
    }
  };
  for (const auto& r : records) {
    const auto it = r.fields.find(cfg.label_field);
    if (it == r.fields.end()) continue;
    if (it->is_array())
      for (const auto& x : *it) look(x, r.line);
    else
      look(*it, r.line);
  }
  if (empty_line)
    out.push_back("warning: " + file.string() + ":" + std::to_string(empty_line) + ": field '" + cfg.label_field +
                  "' holds an empty label \"\", which becomes a class of its own");
  if (strings > 0 && numbers > 0) {
    out.push_back("warning: " + file.string() + ": field '" + cfg.label_field + "' mixes strings (" +
                  std::to_string(strings) + ", e.g. line " + std::to_string(string_line) + ") and numbers (" +
                  std::to_string(numbers) + ", e.g. line " + std::to_string(number_line) + ": " + number_text +
                  "); each is read as text, so " + number_text + " is the class \"" + number_text +
                  "\": check those lines");
  }
  return out;
}

std::vector<Example> make_examples(Task task, const DataConfig& cfg, const LabelSet& labels,
                                   const std::filesystem::path& file, const std::vector<Record>& records,
                                   bool require_labels) {
  const TaskSpec& spec = task_spec(task);
  if (spec.input == TaskInput::QuestionContext) return make_span_examples(cfg, file, records, require_labels);
  std::vector<Example> out;
  out.reserve(records.size());
  auto label_id = [&](const Record& r, const std::string& name) {
    auto it = labels.index.find(name);
    if (it == labels.index.end()) {
      std::string known;
      for (size_t i = 0; i < labels.names.size() && i < 10; ++i) known += (i ? ", " : "") + labels.names[i];
      if (labels.names.size() > 10) known += ", ...";
      throw UserError(where(file, r) + "label '" + name + "' is not in the label set [" + known + "]");
    }
    return it->second;
  };
  const bool tsv = string_cells(file);  // TSV and CSV cells are strings
  for (const auto& r : records) {
    Example ex;
    ex.record = r.fields;
    try {
      for (const auto& f : cfg.text_fields) {
        const auto& v = field(file, r, f);
        if (spec.input == TaskInput::Tokens) {
          // TSV cells are strings (space-separated words); in JSON a string is a mistake (it
          // would be split on spaces, or taken as one token in a language without spaces).
          if (v.is_string() && !tsv)
            throw UserError(where(file, r) + "field '" + f +
                            "' must be a list of tokens (a JSON array of strings), got a string");
          ex.texts = list_field(v);
          if (ex.texts.empty()) throw UserError(where(file, r) + "field '" + f + "' has no tokens");
        } else {
          if (!v.is_string()) throw UserError(where(file, r) + "field '" + f + "' must be a string");
          ex.texts.push_back(v.get<std::string>());
        }
      }
      ex.weight = sample_weight(file, r);
      auto lv = r.fields.find(cfg.label_field);
      if (lv == r.fields.end() || lv->is_null()) {
        // An embedding example's score is optional (in-batch-negative losses take none).
        if (require_labels && spec.labels != TaskLabels::Score)
          throw UserError(where(file, r) + "missing field '" + cfg.label_field + "'");
        out.push_back(std::move(ex));
        continue;
      }
      ex.has_label = true;
      switch (spec.labels) {
        case TaskLabels::OneClass: ex.labels = {label_id(r, scalar_label(*lv))}; break;
        case TaskLabels::ClassSet:
          for (const auto& l : list_field(*lv)) ex.labels.push_back(label_id(r, l));
          break;
        case TaskLabels::Value:
        case TaskLabels::Score: {
          double v = 0;
          if (lv->is_number())
            v = lv->get<double>();
          else if (lv->is_string()) {
            size_t used = 0;
            const auto s = lv->get<std::string>();
            try {
              v = std::stod(s, &used);
            } catch (const std::exception&) { used = 0; }
            if (used == 0 || used != s.size()) throw std::invalid_argument("expected a number, got '" + s + "'");
          } else
            throw std::invalid_argument("expected a number");
          if (!std::isfinite(v) || std::abs(v) > std::numeric_limits<float>::max())
            throw std::invalid_argument("the target must be finite and within float32's range (|x| <= 3.4e38), got " +
                                        lv->dump());
          ex.value = v;
          break;
        }
        case TaskLabels::TagList: {
          if (lv->is_string() && !tsv)
            throw std::invalid_argument("expected a list of tags (a JSON array), got a string");
          auto tags = list_field(*lv);
          if (tags.size() != ex.texts.size())
            throw UserError(where(file, r) + "field '" + cfg.label_field + "' has " + std::to_string(tags.size()) +
                            " tags for " + std::to_string(ex.texts.size()) + " tokens");
          for (const auto& t : tags) ex.labels.push_back(label_id(r, t));
          break;
        }
        case TaskLabels::Answers: break;  // span_dataset.h
        case TaskLabels::None: break;     // masked_lm: mlm.h reads its own data
      }
    } catch (const std::invalid_argument& e) {
      throw UserError(where(file, r) + "field '" + cfg.label_field + "': " + e.what());
    }
    out.push_back(std::move(ex));
  }
  return out;
}

namespace {

// One text as data.long_text windows (TextWindows): the whole text's encoding, then windows of its
// pieces between its first and last special token.
void encode_text_windows(const Example& ex, int64_t index, const Tokenizer& tokenizer, int max_seq_length,
                         TruncateMethod method, const TextWindows& windows, std::vector<EncodedExample>& out) {
  const auto whole = encode(tokenizer, ex.texts[0], std::nullopt, 1 << 30, method, false);
  const auto& ids = whole.input_ids;
  const auto body = static_cast<size_t>(max_seq_length - 2);
  const size_t n = ids.size() - 2;  // pieces between the template's two specials
  const size_t stride = windows.stride > 0 ? static_cast<size_t>(windows.stride) : std::max<size_t>(1, body / 2);
  for (size_t s = 0;; s += stride) {
    EncodedExample e;
    e.example = index;
    const size_t end = std::min(n, s + body);
    e.input_ids.push_back(ids.front());
    e.input_ids.insert(e.input_ids.end(), ids.begin() + 1 + static_cast<std::ptrdiff_t>(s),
                       ids.begin() + 1 + static_cast<std::ptrdiff_t>(end));
    e.input_ids.push_back(ids.back());
    e.token_type_ids.assign(e.input_ids.size(), 0);
    out.push_back(std::move(e));
    if (end >= n) break;
  }
}

}  // namespace

std::vector<EncodedExample> encode_examples(Task task, const std::vector<Example>& examples, const Tokenizer& tokenizer,
                                            int max_seq_length, TruncateMethod method, const SpanConfig& span,
                                            const TextWindows& windows) {
  const TaskInput input = task_spec(task).input;
  if (input == TaskInput::QuestionContext) return encode_span_examples(examples, tokenizer, max_seq_length, span);
  if (windows.on && input == TaskInput::Text) {
    std::vector<EncodedExample> out;
    for (size_t i = 0; i < examples.size(); ++i) {
      if (examples[i].texts.size() != 1)
        throw UserError("data.long_text: windows cut one text; an example has " +
                        std::to_string(examples[i].texts.size()) + " text fields");
      encode_text_windows(examples[i], static_cast<int64_t>(i), tokenizer, max_seq_length, method, windows, out);
    }
    return out;
  }
  std::vector<EncodedExample> out(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    const auto& ex = examples[i];
    auto& e = out[i];
    e.example = static_cast<int64_t>(i);
    if (input == TaskInput::Tokens) {
      auto enc = encode_words(tokenizer, ex.texts, max_seq_length, method, false);
      e.input_ids = std::move(enc.input_ids);
      e.token_type_ids = std::move(enc.token_type_ids);
      e.word_start = std::move(enc.word_start);
      e.token_labels.assign(e.input_ids.size(), -100);
      if (ex.has_label)
        for (size_t p = 0; p < e.word_start.size(); ++p)
          if (e.word_start[p] >= 0) e.token_labels[p] = ex.labels[static_cast<size_t>(e.word_start[p])];
    } else if (input == TaskInput::Texts) {
      for (const auto& text : ex.texts) {
        auto enc = encode(tokenizer, text, std::nullopt, max_seq_length, method, false);
        e.columns.push_back(std::move(enc.input_ids));
      }
      e.input_ids = e.columns.front();
      e.token_type_ids.assign(e.input_ids.size(), 0);
    } else {
      std::optional<std::string_view> b;
      if (ex.texts.size() > 1) b = ex.texts[1];
      auto enc = encode(tokenizer, ex.texts[0], b, max_seq_length, method, false);
      e.input_ids = std::move(enc.input_ids);
      e.token_type_ids = std::move(enc.token_type_ids);
      e.truncated = enc.truncated;
    }
  }
  return out;
}

}  // namespace unif::framework
