#include "framework/inference/standard_records.h"

namespace unif::framework {

namespace {

using nlohmann::json;

bool is_string_pair(const json& j) { return j.is_array() && j.size() == 2 && j[0].is_string() && j[1].is_string(); }

// The model's fields for a text task: its own, or a plain HF directory's `text` / `text_a`, `text_b`.
std::vector<std::string> fields_of(const std::vector<std::string>& text_fields, bool pair) {
  if (!text_fields.empty()) return text_fields;
  return pair ? std::vector<std::string>{"text_a", "text_b"} : std::vector<std::string>{"text"};
}

}  // namespace

json with_model_fields(Task task, const json& record, const std::vector<std::string>& text_fields) {
  switch (task_spec(task).input) {
    case TaskInput::Text: {
      const bool plain = text_fields.empty();
      const bool pair_model = text_fields.size() == 2;
      if (record.is_string() && (plain || !pair_model)) return json{{fields_of(text_fields, false)[0], record}};
      if (is_string_pair(record) && (plain || pair_model)) {
        const auto f = fields_of(text_fields, true);
        return json{{f[0], record[0]}, {f[1], record[1]}};
      }
      if (!record.is_object() || !record.contains("text")) return record;
      const bool has_pair = record.contains("text_pair") && !record.at("text_pair").is_null();
      const auto f = fields_of(text_fields, plain ? has_pair : pair_model);
      if (record.contains(f[0]) && !record.at(f[0]).is_null()) return record;  // the model's own names
      json out = record;
      out[f[0]] = record.at("text");
      if (f.size() == 2 && has_pair) out[f[1]] = record.at("text_pair");
      // A plain HF directory reads `text` before `text_a`: a pair goes by text_a and text_b only.
      if (plain && has_pair) {
        out.erase("text");
        out.erase("text_pair");
      }
      return out;
    }
    case TaskInput::Tokens:  // {"text"} is split into words by the model's reading
    case TaskInput::MlmText:
    case TaskInput::Texts:
      if (record.is_string()) {
        const std::string field =
            task_spec(task).input == TaskInput::MlmText && !text_fields.empty() ? text_fields[0] : "text";
        return json{{field, record}};
      }
      return record;
    case TaskInput::QuestionContext:
      if (is_string_pair(record)) {
        const auto f = text_fields.size() == 2 ? text_fields : std::vector<std::string>{"question", "context"};
        return json{{f[0], record[0]}, {f[1], record[1]}};
      }
      return record;
  }
  return record;
}

std::string accepted_record_shapes(Task task, const std::vector<std::string>& text_fields) {
  const auto quoted = [](const std::string& s) { return "\"" + s + "\""; };
  switch (task_spec(task).input) {
    case TaskInput::Text: {
      if (text_fields.empty())
        return "{\"text\": ...}, {\"text_a\": ..., \"text_b\": ...}, {\"text\": ..., \"text_pair\": ...}, a string or "
               "a pair [a, b]";
      if (text_fields.size() == 2) {
        std::string own = "{" + quoted(text_fields[0]) + ": ..., " + quoted(text_fields[1]) + ": ...}";
        return own + (text_fields[0] == "text" ? "" : ", {\"text\": ..., \"text_pair\": ...}") + " or a pair [a, b]";
      }
      std::string own = "{" + quoted(text_fields[0]) + ": ...}";
      return own + (text_fields[0] == "text" ? "" : ", {\"text\": ...}") + " or a string";
    }
    case TaskInput::Tokens:
      return "{" + quoted(text_fields.empty() ? "tokens" : text_fields[0]) +
             ": [token, ...]}, {\"text\": ...} or a string";
    case TaskInput::MlmText: return "{" + quoted(text_fields.empty() ? "text" : text_fields[0]) + ": ...} or a string";
    case TaskInput::Texts: return "{\"text\": ...} or a string";
    case TaskInput::QuestionContext: {
      const auto f = text_fields.size() == 2 ? text_fields : std::vector<std::string>{"question", "context"};
      return "{" + quoted(f[0]) + ": ..., " + quoted(f[1]) + ": ...} or a pair [question, context]";
    }
  }
  return "";
}

}  // namespace unif::framework
