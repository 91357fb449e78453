// BertTokenizer: the steps of HF 4.28 `PreTrainedTokenizer.tokenize` + `BertTokenizer._tokenize`
// in their order, carrying each code point's source position along for the offsets.
//
// 1. do_lower_case: HF lower-cases the whole text ONE CHARACTER AT A TIME (a regex `(.+?)` over
//    everything but the special tokens), so Python's final-sigma rule never fires ("ΟΔΟΣ" -> "οδοσ").
// 2. The special tokens are cut out wherever they occur (case-sensitive; from_pretrained's
//    no-split trie). Each piece between them is tokenized on its own. MPNet's layout cuts its added
//    tokens instead (split_added_tokens: lstrip / rstrip take the white space beside them), those
//    marked normalized in the text as BertNormalizer leaves it (tokenize_normalized).
// 3. BasicTokenizer: drop U+0000, U+FFFD and controls; whitespace splits; CJK ideographs become
//    single words; then per word (unless it is a special token): strip accents (NFD, drop Mn) when
//    lower-casing, split off every punctuation character. Words are split on Python's whitespace
//    (str.split), which also includes U+2028/U+2029.
// 4. WordPiece: greedy longest-match-first, "##" continuation pieces, [UNK] for a word over 100
//    code points or one that cannot be matched completely.
#include "framework/text/bert_tokenizer.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "framework/common/error.h"
#include "framework/common/strings.h"
#include "framework/text/unicode.h"

namespace unif::framework {

struct BertTokenizer::Text {
  std::u32string cps;
  std::vector<int64_t> src;  // source code point index of each cps[i]
  void push(char32_t cp, int64_t s) {
    cps.push_back(cp);
    src.push_back(s);
  }
  bool empty() const { return cps.empty(); }
  void clear() {
    cps.clear();
    src.clear();
  }
};

namespace {

bool equals_ascii(std::u32string_view cps, std::string_view ascii) {
  if (cps.size() != ascii.size()) return false;
  for (size_t i = 0; i < cps.size(); ++i)
    if (cps[i] != static_cast<char32_t>(ascii[i])) return false;
  return true;
}

bool is_special(std::u32string_view cps) {
  for (auto s : BertTokenizer::kSpecialTokens)
    if (equals_ascii(cps, s)) return true;
  return false;
}

// Length of the special token starting at cps[i], or 0.
size_t special_at(const std::u32string& cps, size_t i) {
  for (auto s : BertTokenizer::kSpecialTokens)
    if (i + s.size() <= cps.size() && equals_ascii(std::u32string_view(cps).substr(i, s.size()), s)) return s.size();
  return 0;
}

}  // namespace

BertTokenizer::BertTokenizer(std::shared_ptr<const Vocab> vocab, bool do_lower_case)
    : vocab_(std::move(vocab)), do_lower_case_(do_lower_case) {}

Tokenized BertTokenizer::tokenize_with_offsets(std::string_view utf8) const {
  const std::u32string cps = unicode::decode_utf8(utf8);
  Tokenized out;
  std::vector<Text> words;
  Text segment;
  // cps[begin, end), between special tokens: lower-cased, then tokenized.
  auto plain = [&](size_t begin, size_t end) {
    segment.clear();
    for (size_t k = begin; k < end; ++k) {
      if (do_lower_case_) {
        unicode::append_lower(cps[k], segment.cps);
        segment.src.resize(segment.cps.size(), static_cast<int64_t>(k));
      } else {
        segment.push(cps[k], static_cast<int64_t>(k));
      }
    }
    if (!added_normalized_.empty()) return tokenize_normalized(segment, out);
    words.clear();
    basic_tokenize(segment, words);
    for (const auto& w : words) wordpiece(w, out);
  };
  if (mpnet_) {
    split_added_tokens(
        cps, added_raw_,
        [&](int64_t begin, int64_t end) { plain(static_cast<size_t>(begin), static_cast<size_t>(end)); },
        [&](size_t index, int64_t start, int64_t end) {
          out.tokens.push_back(added_raw_[index].content);
          out.offsets.push_back({start, end});
        });
    return out;
  }
  size_t i = 0, begin = 0;
  while (i < cps.size()) {
    if (size_t n = special_at(cps, i)) {
      plain(begin, i);
      out.tokens.push_back(unicode::encode_utf8(std::u32string_view(cps).substr(i, n)));
      out.offsets.push_back({static_cast<int64_t>(i), static_cast<int64_t>(i + n)});
      begin = i += n;
      continue;
    }
    ++i;
  }
  plain(begin, cps.size());
  return out;
}

BertTokenizer::Text BertTokenizer::strip_accents(const Text& word) {
  // _run_strip_accents: NFD, canonical order, drop Mn.
  Text w;
  for (size_t k = 0; k < word.cps.size(); ++k) {
    unicode::append_canonical_decomposition(word.cps[k], w.cps);
    w.src.resize(w.cps.size(), word.src[k]);
  }
  for (size_t k = 1; k < w.cps.size(); ++k) {
    for (size_t j = k; j > 0; --j) {
      const int cj = unicode::combining_class(w.cps[j]);
      if (cj == 0 || unicode::combining_class(w.cps[j - 1]) <= cj) break;
      std::swap(w.cps[j], w.cps[j - 1]);
      std::swap(w.src[j], w.src[j - 1]);
    }
  }
  Text kept;
  for (size_t k = 0; k < w.cps.size(); ++k)
    if (!unicode::is_nonspacing_mark(w.cps[k])) kept.push(w.cps[k], w.src[k]);
  return kept;
}

void BertTokenizer::tokenize_normalized(const Text& segment, Tokenized& out) const {
  // HF's BertNormalizer over the whole stretch, as basic_tokenize's steps do it word by word:
  // U+0000, U+FFFD and controls dropped, white space to ' ', CJK ideographs between spaces, accents
  // stripped when lower-casing (lower-casing itself is done).
  Text norm;
  for (size_t k = 0; k < segment.cps.size(); ++k) {
    const char32_t cp = segment.cps[k];
    const int64_t src = segment.src[k];
    if (cp == 0 || cp == 0xFFFD || unicode::is_control(cp)) continue;
    if (unicode::is_bert_whitespace(cp) || unicode::is_python_space(cp)) {
      norm.push(U' ', src);
    } else if (unicode::is_chinese_char(cp)) {
      norm.push(U' ', src);
      norm.push(cp, src);
      norm.push(U' ', src);
    } else {
      norm.push(cp, src);
    }
  }
  if (do_lower_case_) norm = strip_accents(norm);
  // The rest goes through basic_tokenize again (each of its steps leaves normalized text as it is).
  std::vector<Text> words;
  auto plain = [&](int64_t begin, int64_t end) {
    Text part;
    for (int64_t k = begin; k < end; ++k) part.push(norm.cps[static_cast<size_t>(k)], norm.src[static_cast<size_t>(k)]);
    words.clear();
    basic_tokenize(part, words);
    for (const auto& w : words) wordpiece(w, out);
  };
  split_added_tokens(norm.cps, added_normalized_, plain, [&](size_t index, int64_t start, int64_t end) {
    // The span of the source characters the match came from.
    const auto [lo, hi] = std::minmax_element(norm.src.begin() + start, norm.src.begin() + end);
    out.tokens.push_back(added_normalized_[index].content);
    out.offsets.push_back({*lo, *hi + 1});
  });
}

void BertTokenizer::basic_tokenize(const Text& segment, std::vector<Text>& words) const {
  // Cleaning + CJK split + whitespace split.
  std::vector<Text> raw;
  Text cur;
  auto flush = [&](std::vector<Text>& to) {
    if (!cur.empty()) to.push_back(std::move(cur));
    cur.clear();
  };
  for (size_t k = 0; k < segment.cps.size(); ++k) {
    const char32_t cp = segment.cps[k];
    if (cp == 0 || cp == 0xFFFD || unicode::is_control(cp)) continue;
    if (unicode::is_bert_whitespace(cp) || unicode::is_python_space(cp)) {
      flush(raw);
    } else if (unicode::is_chinese_char(cp)) {
      flush(raw);
      cur.push(cp, segment.src[k]);
      flush(raw);
    } else {
      cur.push(cp, segment.src[k]);
    }
  }
  flush(raw);

  for (auto& word : raw) {
    // HF never_split (BERT's layout): kept whole, no accent stripping or split.
    if (!mpnet_ && is_special(word.cps)) {
      words.push_back(std::move(word));
      continue;
    }
    Text w = do_lower_case_ ? strip_accents(word) : std::move(word);
    // _run_split_on_punc; then str.split() again (a no-op: no whitespace is left).
    for (size_t k = 0; k < w.cps.size(); ++k) {
      if (unicode::is_punctuation(w.cps[k])) {
        flush(words);
        cur.push(w.cps[k], w.src[k]);
        flush(words);
      } else {
        cur.push(w.cps[k], w.src[k]);
      }
    }
    flush(words);
  }
}

void BertTokenizer::wordpiece(const Text& word, Tokenized& out) const {
  const size_t n = word.cps.size();
  auto span = [&](size_t a, size_t b) {  // source span of word.cps[a, b)
    auto [lo, hi] = std::minmax_element(word.src.begin() + static_cast<std::ptrdiff_t>(a),
                                        word.src.begin() + static_cast<std::ptrdiff_t>(b));
    return CharSpan{*lo, *hi + 1};
  };
  const std::string unk(Vocab::kUnkToken);
  if (n > kMaxInputCharsPerWord) {
    out.tokens.push_back(unk);
    out.offsets.push_back(span(0, n));
    return;
  }
  // Byte offset of each code point in the word's UTF-8.
  std::string utf8;
  std::vector<size_t> at;
  at.reserve(n + 1);
  for (char32_t cp : word.cps) {
    at.push_back(utf8.size());
    unicode::append_utf8(utf8, cp);
  }
  at.push_back(utf8.size());

  const size_t max_chars = static_cast<size_t>(vocab_->max_token_chars());
  const size_t first_piece = out.tokens.size();
  std::string candidate;
  size_t start = 0;
  while (start < n) {
    // A candidate longer than the longest vocabulary entry cannot match.
    const size_t budget = start == 0 ? max_chars : (max_chars >= 2 ? max_chars - 2 : 0);
    size_t end = std::min(n, start + budget);
    bool found = false;
    for (; end > start; --end) {
      candidate.assign(start > 0 ? "##" : "");
      candidate.append(utf8, at[start], at[end] - at[start]);
      if (vocab_->find(candidate)) {
        found = true;
        break;
      }
    }
    if (!found) {  // the whole word becomes [UNK]
      out.tokens.resize(first_piece);
      out.offsets.resize(first_piece);
      out.tokens.push_back(unk);
      out.offsets.push_back(span(0, n));
      return;
    }
    out.tokens.push_back(candidate);
    out.offsets.push_back(span(start, end));
    start = end;
  }
}

int64_t BertTokenizer::find_id(std::string_view token) const {
  const auto id = vocab_->find(std::string(token));
  return id ? *id : -1;
}

namespace {

// An added token of tokenizer.json / tokenizer_config.json ({"content", "lstrip", "rstrip",
// "normalized", "single_word", ...}) with its id; UserError (without the file) when it is not one
// this tokenizer keeps as HF does.
struct FileToken {
  AddedToken token;
  bool normalized = false;
};

FileToken file_token(const nlohmann::json& a, int64_t id, const Vocab& vocab) {
  if (!a.is_object() || !a.contains("content") || !a.at("content").is_string())
    throw UserError("an added token without a \"content\" string");
  FileToken t;
  t.token.content = a.at("content").get<std::string>();
  t.token.lstrip = a.value("lstrip", false);
  t.token.rstrip = a.value("rstrip", false);
  t.normalized = a.value("normalized", false);
  if (t.token.content.empty()) throw UserError("an added token is empty");
  if (a.value("single_word", false))
    throw UserError("the added token '" + t.token.content + "' has single_word true, which is not supported");
  const auto in_vocab = vocab.find(t.token.content);
  if (!in_vocab || *in_vocab != id)
    throw UserError("the added token '" + t.token.content + "' has id " + std::to_string(id) + ", but " +
                    vocab.source() +
                    (in_vocab ? " gives it id " + std::to_string(*in_vocab) : std::string(" does not hold it")));
  return t;
}

// A special token of tokenizer_config.json: a name, or an added token object; nullopt-like empty
// content when absent or null.
FileToken config_special(const nlohmann::json& config, const char* key) {
  FileToken t;
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return t;
  if (it->is_string()) {
    t.token.content = it->get<std::string>();
  } else if (it->is_object() && it->contains("content") && it->at("content").is_string()) {
    t.token.content = it->at("content").get<std::string>();
    t.token.lstrip = it->value("lstrip", false);
    t.token.rstrip = it->value("rstrip", false);
    t.normalized = it->value("normalized", false);
  } else {
    throw UserError(std::string(key) + ": expected a token, got " + it->dump());
  }
  return t;
}

}  // namespace

BertTokenizer BertTokenizer::load_mpnet(const std::filesystem::path& dir, const std::filesystem::path& vocab_file,
                                        bool do_lower_case) {
  auto vocab = std::make_shared<const Vocab>(Vocab::load(vocab_file));
  BertTokenizer t(vocab, do_lower_case);
  t.mpnet_ = true;
  // MPNetTokenizer's special tokens (RoBERTa's names, BERT's [UNK]); the mask takes the white space before it.
  struct Special {
    const char* key;
    std::string* name;
    const char* fallback;
  };
  SpecialTokens& sp = t.specials_;
  sp.pair_double_sep = true, sp.pair_token_types = false;
  const Special specials[] = {{"cls_token", &sp.cls, "<s>"},
                              {"sep_token", &sp.sep, "</s>"},
                              {"pad_token", &sp.pad, "<pad>"},
                              {"mask_token", &sp.mask, "<mask>"},
                              {"unk_token", &sp.unk, "[UNK]"}};
  std::vector<FileToken> added;
  auto add = [&](FileToken token) {
    for (const auto& a : added)
      if (a.token.content == token.token.content) return;
    added.push_back(std::move(token));
  };
  // No directory (a model from scratch with model.vocab): MPNetTokenizer's defaults.
  const std::filesystem::path config_file = dir / "tokenizer_config.json", json_file = dir / "tokenizer.json";
  std::error_code ec;
  nlohmann::json config = nlohmann::json::object();
  if (!dir.empty() && std::filesystem::is_regular_file(config_file, ec)) {
    try {
      config = nlohmann::json::parse(read_file(config_file.string()));
      if (!config.is_object()) throw UserError("expected a JSON object");
    } catch (const nlohmann::json::exception& e) {
      throw UserError(config_file.string() + ": " + e.what());
    } catch (const UserError& e) { throw UserError(config_file.string() + ": " + e.what()); }
  }
  std::vector<FileToken> named;
  try {
    for (const auto& s : specials) {
      FileToken token = config_special(config, s.key);
      if (token.token.content.empty()) token.token.content = s.fallback;
      // MPNetTokenizer's mask_token setter: a name (not an added token object) takes lstrip.
      const auto given = config.find(s.key);
      if (std::string(s.key) == "mask_token" && (given == config.end() || !given->is_object()))
        token.token.lstrip = true;
      *s.name = token.token.content;
      named.push_back(std::move(token));
    }
  } catch (const UserError& e) { throw UserError(config_file.string() + ": " + e.what()); }
  // The added tokens of tokenizer.json (what HF's fast tokenizer cuts), else tokenizer_config.json's.
  if (!dir.empty() && std::filesystem::is_regular_file(json_file, ec)) {
    try {
      const auto j = nlohmann::json::parse(read_file(json_file.string()));
      if (j.contains("added_tokens"))
        for (const auto& a : j.at("added_tokens")) add(file_token(a, a.at("id").get<int64_t>(), *vocab));
    } catch (const nlohmann::json::exception& e) {
      throw UserError(json_file.string() + ": " + e.what());
    } catch (const UserError& e) { throw UserError(json_file.string() + ": " + e.what()); }
  } else if (config.contains("added_tokens_decoder")) {
    try {
      for (const auto& [id, a] : config.at("added_tokens_decoder").items()) add(file_token(a, std::stoll(id), *vocab));
    } catch (const nlohmann::json::exception& e) {
      throw UserError(config_file.string() + ": added_tokens_decoder: " + e.what());
    } catch (const std::logic_error& e) {  // std::stoll
      throw UserError(config_file.string() + ": added_tokens_decoder: an id that is not a number");
    } catch (const UserError& e) { throw UserError(config_file.string() + ": " + e.what()); }
  }
  // The special tokens are added tokens too (HF adds those the files do not list).
  for (size_t i = 0; i < named.size(); ++i) {
    if (!vocab->find(named[i].token.content))
      throw UserError(vocab->source() + ": has no '" + named[i].token.content + "' (MPNet's " + specials[i].key + ")");
    add(std::move(named[i]));
  }
  for (auto& a : added) (a.normalized ? t.added_normalized_ : t.added_raw_).push_back(std::move(a.token));
  return t;
}

}  // namespace unif::framework
