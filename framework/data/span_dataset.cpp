#include "framework/data/span_dataset.h"

#include <algorithm>

#include "framework/common/error.h"
#include "framework/common/json_input.h"
#include "framework/text/unicode.h"

namespace unif::framework {

namespace {

using nlohmann::json;

const json& string_field(const std::filesystem::path& file, const Record& r, const std::string& name) {
  auto it = r.fields.find(name);
  if (it == r.fields.end() || it->is_null()) throw UserError(where(file, r) + "missing field '" + name + "'");
  if (!it->is_string()) throw UserError(where(file, r) + "field '" + name + "' must be a string");
  return *it;
}

int64_t answer_start(const std::filesystem::path& file, const Record& r, const std::string& field, const json& v) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    throw UserError(where(file, r) + "field '" + field + "': answer_start must be a non-negative integer, got " +
                    json_excerpt(v));
  return v.get<int64_t>();
}

// SQuAD list form or HF datasets' column form.
std::vector<SpanAnswer> parse_answers(const std::filesystem::path& file, const Record& r, const std::string& field,
                                      const json& v) {
  std::vector<SpanAnswer> out;
  auto text_of = [&](const json& t) {
    if (!t.is_string()) throw UserError(where(file, r) + "field '" + field + "': an answer's text must be a string");
    return t.get<std::string>();
  };
  if (v.is_string() && string_cells(file)) {
    // A TSV or CSV cell: the same JSON as a JSONL file's field, as text.
    json parsed;
    try {
      parsed = parse_json(v.get<std::string>());
    } catch (const JsonInputError& e) {
      throw UserError(where(file, r) + "field '" + field +
                      "': a TSV or CSV cell of answers holds JSON, "
                      "[{\"text\": ..., \"answer_start\": ...}] or {\"text\": [...], \"answer_start\": [...]} (" +
                      e.what() + ")");
    }
    if (parsed.is_array() || parsed.is_object()) return parse_answers(file, r, field, parsed);
  }
  if (v.is_array()) {
    for (const auto& a : v) {
      if (!a.is_object() || !a.contains("text") || !a.contains("answer_start"))
        throw UserError(where(file, r) + "field '" + field +
                        "': expected a list of {\"text\": ..., \"answer_start\": ...} objects");
      out.push_back({text_of(a["text"]), answer_start(file, r, field, a["answer_start"])});
    }
  } else if (v.is_object() && v.contains("text") && v.contains("answer_start") && v["text"].is_array() &&
             v["answer_start"].is_array()) {
    if (v["text"].size() != v["answer_start"].size())
      throw UserError(where(file, r) + "field '" + field + "': 'text' and 'answer_start' lists differ in length");
    for (size_t i = 0; i < v["text"].size(); ++i)
      out.push_back({text_of(v["text"][i]), answer_start(file, r, field, v["answer_start"][i])});
  } else {
    throw UserError(
        where(file, r) + "field '" + field +
        "': expected [{\"text\": ..., \"answer_start\": ...}] or {\"text\": [...], \"answer_start\": [...]}");
  }
  return out;
}

}  // namespace

std::string code_point_substr(const std::string& utf8, int64_t start, int64_t end) {
  const auto cps = unicode::decode_utf8(utf8);
  const auto n = static_cast<int64_t>(cps.size());
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  return unicode::encode_utf8(
      std::u32string_view(cps).substr(static_cast<size_t>(start), static_cast<size_t>(end - start)));
}

std::vector<Example> make_span_examples(const DataConfig& cfg, const std::filesystem::path& file,
                                        const std::vector<Record>& records, bool require_labels) {
  if (cfg.text_fields.size() != 2)
    throw UserError("data.text_fields: span_extraction needs exactly 2 fields (question, context)");
  std::vector<Example> out;
  out.reserve(records.size());
  for (const auto& r : records) {
    Example ex;
    ex.record = r.fields;
    const auto& question = string_field(file, r, cfg.text_fields[0]);
    const auto& context = string_field(file, r, cfg.text_fields[1]);
    ex.texts = {question.get<std::string>(), context.get<std::string>()};
    if (auto id = r.fields.find("id"); id != r.fields.end() && !id->is_null())
      ex.id = id->is_string() ? id->get<std::string>() : id->dump();
    else
      ex.id = std::to_string(r.line);
    ex.weight = sample_weight(file, r);
    auto av = r.fields.find(cfg.label_field);
    if (av == r.fields.end() || av->is_null()) {
      if (require_labels) throw UserError(where(file, r) + "missing field '" + cfg.label_field + "'");
      out.push_back(std::move(ex));
      continue;
    }
    ex.answers = parse_answers(file, r, cfg.label_field, *av);
    if (ex.answers.empty()) {  // unanswerable (SQuAD 2.0 style): every window targets [CLS]
      ex.has_label = true;
      out.push_back(std::move(ex));
      continue;
    }
    const auto ctx = unicode::decode_utf8(ex.texts[1]);
    for (const auto& a : ex.answers) {
      const auto text = unicode::decode_utf8(a.text);
      const auto n = static_cast<int64_t>(ctx.size());
      if (text.empty()) throw UserError(where(file, r) + "field '" + cfg.label_field + "': an answer's text is empty");
      if (static_cast<int64_t>(text.size()) > n || a.start > n - static_cast<int64_t>(text.size()))
        throw UserError(where(file, r) + "field '" + cfg.label_field + "': answer '" + a.text + "' at " +
                        std::to_string(a.start) + " runs past the end of the context (" + std::to_string(n) +
                        " characters)");
      if (ctx.compare(static_cast<size_t>(a.start), text.size(), text) != 0)
        throw UserError(where(file, r) + "field '" + cfg.label_field + "': the context at answer_start " +
                        std::to_string(a.start) + " reads '" +
                        code_point_substr(ex.texts[1], a.start, a.start + static_cast<int64_t>(text.size())) +
                        "', not the answer '" + a.text + "' (answer_start counts Unicode code points)");
    }
    ex.has_label = true;
    out.push_back(std::move(ex));
  }
  return out;
}

std::vector<EncodedExample> encode_span_examples(const std::vector<Example>& examples, const Tokenizer& tokenizer,
                                                 int max_seq_length, const SpanConfig& span) {
  const SpecialTokens& specials = tokenizer.specials();
  const int64_t overhead = specials.pair_overhead();  // cls q sep (sep) c sep
  if (max_seq_length < overhead + 2)
    throw UserError("model.max_seq_length: span_extraction needs at least " + std::to_string(overhead + 2) + ", got " +
                    std::to_string(max_seq_length));
  std::vector<EncodedExample> out;
  const int64_t cls = tokenizer.token_to_id(specials.cls), sep = tokenizer.token_to_id(specials.sep);
  const int64_t context_type = specials.pair_token_types ? 1 : 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    const auto& ex = examples[i];
    auto q = tokenizer.tokenize_with_offsets(ex.texts[0]);
    auto c = tokenizer.tokenize_with_offsets(ex.texts[1]);
    {
      // A piece's span stops before combining marks that lower-casing stripped (NFD + drop Mn);
      // the answer text must keep them, so each span extends over the marks that follow it.
      const auto cps = unicode::decode_utf8(ex.texts[1]);
      for (size_t j = 0; j < c.offsets.size(); ++j) {
        auto& end = c.offsets[j].end;
        const int64_t next = j + 1 < c.offsets.size() ? c.offsets[j + 1].start : static_cast<int64_t>(cps.size());
        while (end < next && unicode::is_nonspacing_mark(cps[static_cast<size_t>(end)])) ++end;
      }
    }
    const auto q_len = std::min<int64_t>({static_cast<int64_t>(q.tokens.size()), span.max_query_length,
                                          static_cast<int64_t>(max_seq_length) - overhead - 1});
    const auto q_ids = tokenizer.convert_tokens_to_ids(q.tokens);
    const auto c_ids = tokenizer.convert_tokens_to_ids(c.tokens);
    const int64_t room = max_seq_length - q_len - overhead;  // >= 1
    const auto n = static_cast<int64_t>(c.tokens.size());

    // The first answer's pieces [tok_start, tok_end] in the context (or none).
    int64_t tok_start = -1, tok_end = -1;
    if (ex.has_label && !ex.answers.empty()) {
      const auto s = ex.answers[0].start;
      const auto e = s + static_cast<int64_t>(unicode::decode_utf8(ex.answers[0].text).size());
      for (int64_t j = 0; j < n; ++j) {
        if (tok_start < 0 && c.offsets[static_cast<size_t>(j)].end > s) tok_start = j;
        if (c.offsets[static_cast<size_t>(j)].start < e) tok_end = j;
      }
      if (tok_start < 0 || tok_end < tok_start) tok_start = tok_end = -1;  // the answer is only spaces/controls
    }

    for (int64_t w_start = 0;;) {
      const int64_t len = std::min(room, n - w_start);
      EncodedExample e;
      e.example = static_cast<int64_t>(i);
      e.input_ids.push_back(cls);
      for (int64_t k = 0; k < q_len; ++k) e.input_ids.push_back(q_ids[static_cast<size_t>(k)]);
      e.input_ids.push_back(sep);
      if (specials.pair_double_sep) e.input_ids.push_back(sep);
      const auto first = static_cast<int64_t>(e.input_ids.size());
      e.token_type_ids.assign(e.input_ids.size(), 0);
      e.context_spans.assign(e.input_ids.size(), CharSpan{});
      for (int64_t k = 0; k < len; ++k) {
        e.input_ids.push_back(c_ids[static_cast<size_t>(w_start + k)]);
        e.token_type_ids.push_back(context_type);
        e.context_spans.push_back(c.offsets[static_cast<size_t>(w_start + k)]);
      }
      e.input_ids.push_back(sep);
      e.token_type_ids.push_back(context_type);
      e.context_spans.push_back(CharSpan{});
      if (tok_start >= w_start && tok_end < w_start + len) {
        e.start_position = first + tok_start - w_start;
        e.end_position = first + tok_end - w_start;
      }
      out.push_back(std::move(e));
      if (w_start + len >= n) break;
      w_start += std::min(len, span.doc_stride);
    }
  }
  return out;
}

}  // namespace unif::framework
