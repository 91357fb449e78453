// The fuzz targets: see targets.h. Each one drives a parser the way the CLI does and checks what
// its header promises about the result (sizes, bounds, round trips), so a wrong answer is found
// as well as a crash.
#include "tests/fuzz/targets.h"

#include <unistd.h>
#include <zip.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "apps/unif/serve/embeddings_api.h"
#include "apps/unif/serve/request.h"
#include "apps/unif/serve/tei_api.h"
#include "framework/checkpoint/hf_config.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/checkpoint/torch_bin.h"
#include "framework/common/error.h"
#include "framework/config/model_meta.h"
#include "framework/config/run_config.h"
#include "framework/data/dataset.h"
#include "framework/data/records.h"
#include "framework/text/bert_tokenizer.h"
#include "framework/text/byte_level_bpe.h"
#include "framework/text/sentencepiece_tokenizer.h"
#include "framework/text/encoding.h"
#include "framework/text/unicode.h"
#include "framework/text/vocab.h"

namespace fs = std::filesystem;
using namespace unif::framework;
using unif::Task;

namespace unif::fuzz {

static fs::path folder_of(pid_t pid) { return fs::temp_directory_path() / ("unif-fuzz-" + std::to_string(pid)); }

void remove_scratch() {
  std::error_code ec;
  fs::remove_all(folder_of(getpid()), ec);
}

namespace {

// A broken promise: printed, then abort() so that libFuzzer (and the replay test's child) report it.
#define FUZZ_CHECK(cond, what)                                                                 \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "fuzz check failed at %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, \
                   std::string(what).c_str());                                                 \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)

// Inputs are written to files in one folder per process (parsers of user files take a path); a
// forked child (libFuzzer -fork, the replay test) gets its own.
const fs::path& scratch_dir() {
  static pid_t owner = -1;
  static fs::path dir;
  if (owner != getpid()) {
    if (owner == -1) std::atexit(remove_scratch);
    owner = getpid();
    dir = folder_of(owner);
    fs::create_directories(dir);
  }
  return dir;
}

fs::path write_input(std::string_view bytes, const std::string& name) {
  const fs::path file = scratch_dir() / name;
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  FUZZ_CHECK(out.good(), "cannot write " + file.string());
  return file;
}

std::shared_ptr<const Vocab> fixture_vocab() {
  static const auto vocab = std::make_shared<const Vocab>(
      Vocab::load(fs::path(UNIF_SOURCE_DIR) / "tests" / "fixtures" / "tiny-bert-zh" / "vocab.txt"));
  return vocab;
}

const BertTokenizer& fixture_tokenizer(bool lower) {
  static const BertTokenizer lower_tok(fixture_vocab(), true), cased_tok(fixture_vocab(), false);
  return lower ? lower_tok : cased_tok;
}

// UNIF_FUZZ_VERBOSE=1: print each error a parser answers (to see why a seed is refused, e.g.
// UNIF_FUZZ_VERBOSE=1 build-fuzz/fuzz_jsonl tests/fuzz/corpus/jsonl_data/*).
bool refused(const UserError& e) {
  static const bool verbose = std::getenv("UNIF_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "error: %s\n", e.what());
  return false;
}

uint32_t input_hash(std::string_view s) {  // picks options per input, reproducibly
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

// What tokenize_with_offsets promises: one span per token, inside the input's code points, and
// every piece a vocabulary token.
void check_tokenized(const Tokenizer& tok, std::string_view text, const Tokenized& t) {
  FUZZ_CHECK(t.tokens.size() == t.offsets.size(), "one offset per token");
  const auto n = static_cast<int64_t>(unicode::decode_utf8(text).size());
  for (size_t i = 0; i < t.tokens.size(); ++i) {
    const auto& o = t.offsets[i];
    FUZZ_CHECK(0 <= o.start && o.start <= o.end && o.end <= n,
               "token '" + t.tokens[i] + "' span [" + std::to_string(o.start) + ", " + std::to_string(o.end) + ") in " +
                   std::to_string(n) + " code points");
    FUZZ_CHECK(!t.tokens[i].empty(), "empty piece");
    bool special = false;  // cut from the text whether or not the vocabulary has them
    for (auto s : BertTokenizer::kSpecialTokens) special = special || t.tokens[i] == s;
    FUZZ_CHECK(special || tok.find_id(t.tokens[i]) >= 0, "piece '" + t.tokens[i] + "' is not in the vocabulary");
  }
}

void check_encoding(const Encoding& e, int max_len, bool padded) {
  const auto L = e.input_ids.size();
  FUZZ_CHECK(e.token_type_ids.size() == L && e.attention_mask.size() == L, "encoding rows of one length");
  FUZZ_CHECK(padded ? L == static_cast<size_t>(max_len) : L <= static_cast<size_t>(max_len),
             "length vs max_seq_length");
  FUZZ_CHECK(e.offsets.size() == e.tokens.size() && e.tokens.size() <= L, "tokens and offsets");
  FUZZ_CHECK(e.tokens.size() >= 2 && e.tokens.front() == "[CLS]" && e.tokens.back() == "[SEP]", "[CLS] ... [SEP]");
}

// ---- YAML config -> RunConfig ----
// The input is a config; lines after a line "--set" are `--set` overrides. An accepted config
// must survive to_yaml (parse_config(to_yaml(c)) == c, as run_config.h promises).
bool run_config(std::string_view input) {
  std::string yaml(input);
  std::vector<std::string> overrides;
  if (const auto cut = yaml.find("\n--set\n"); cut != std::string::npos) {
    std::string rest = yaml.substr(cut + 7);
    yaml.resize(cut + 1);
    for (size_t p = 0; p < rest.size();) {  // one a line (as one --set each on the command line)
      const size_t nl = std::min(rest.find('\n', p), rest.size());
      overrides.push_back(rest.substr(p, nl - p));
      p = nl + 1;
    }
  }
  RunConfig cfg;
  try {
    cfg = parse_config(yaml, "fuzz.yaml", overrides);
  } catch (const UserError& e) { return refused(e); }
  const std::string again = to_yaml(cfg);
  try {
    FUZZ_CHECK(parse_config(again, "fuzz.yaml") == cfg, "to_yaml round trip changed the config:\n" + again);
  } catch (const UserError& e) {
    FUZZ_CHECK(false, std::string("to_yaml wrote a config parse_config refuses: ") + e.what() + "\n" + again);
  }
  return true;
}

// ---- unif.yaml of a model directory ----
// What was read writes and reads back the same (the `span` section only for span extraction:
// write_model_meta leaves it out for other tasks).
bool run_model_meta(std::string_view input) {
  const auto file = write_input(input, "unif.yaml");
  try {
    const ModelMeta m = read_model_meta(file);
    write_model_meta(file, m);
    const ModelMeta back = read_model_meta(file);
    FUZZ_CHECK(back.task == m.task && back.labels == m.labels && back.text_fields == m.text_fields &&
                   back.label_field == m.label_field && back.max_seq_length == m.max_seq_length &&
                   back.do_lower_case == m.do_lower_case && back.truncate_method == m.truncate_method &&
                   (m.task != Task::SpanExtraction || back.span == m.span),  // only span extraction keeps `span`
               "unif.yaml round trip changed it");
    return true;
  } catch (const UserError& e) { return refused(e); }
}

// ---- data files: every task over one file ----
struct DataVariant {
  Task task;
  std::vector<std::string> text_fields;
  std::string label_field;
  std::vector<std::string> labels;  // empty: collected from the file (or none: regression, span)
};

const std::vector<DataVariant>& data_variants() {
  static const std::vector<DataVariant> v = {
      {Task::Classification, {"text"}, "label", {}},
      {Task::Classification, {"text_a", "text_b"}, "label", {"0", "1", "a", "b"}},
      {Task::Multilabel, {"text"}, "label", {}},
      {Task::Multilabel, {"text"}, "labels", {"a", "b", "c"}},
      {Task::Regression, {"text"}, "label", {}},
      {Task::Regression, {"text_a", "text_b"}, "score", {}},
      {Task::TokenClassification, {"tokens"}, "tags", {}},
      {Task::TokenClassification, {"tokens"}, "tags", {"O", "B-PER", "I-PER"}},
      {Task::SpanExtraction, {"question", "context"}, "answers", {}},
  };
  return v;
}

void check_encoded(Task task, const std::vector<Example>& examples, const std::vector<EncodedExample>& enc,
                   int max_len) {
  if (task != Task::SpanExtraction) FUZZ_CHECK(enc.size() == examples.size(), "one encoding per example");
  for (const auto& e : enc) {
    const auto L = e.input_ids.size();
    FUZZ_CHECK(L >= 2 && L <= static_cast<size_t>(max_len), "encoded length " + std::to_string(L));
    FUZZ_CHECK(e.token_type_ids.size() == L, "token_type_ids length");
    FUZZ_CHECK(e.example >= 0 && e.example < static_cast<int64_t>(examples.size()), "example index");
    if (task == Task::TokenClassification)
      FUZZ_CHECK(e.token_labels.size() == L && e.word_start.size() == L, "token rows");
    if (task == Task::SpanExtraction) {
      FUZZ_CHECK(e.context_spans.size() == L, "context spans");
      FUZZ_CHECK(
          0 <= e.start_position && e.start_position <= e.end_position && e.end_position < static_cast<int64_t>(L),
          "answer positions " + std::to_string(e.start_position) + ".." + std::to_string(e.end_position));
    }
    for (auto id : e.input_ids) FUZZ_CHECK(id >= 0 && id < fixture_vocab()->size(), "input id in the vocabulary");
  }
}

bool run_data(std::string_view input, const char* name) {
  const auto file = write_input(input, name);
  std::vector<Record> records;
  try {
    records = read_records(file);
  } catch (const UserError& e) { return refused(e); }
  const uint32_t h = input_hash(input);
  static const int lengths[] = {5, 12, 48};
  const int max_len = lengths[h % 3];
  const auto method = static_cast<TruncateMethod>((h / 3) % 4);
  SpanConfig span;
  span.doc_stride = 1 + (h / 12) % 8;
  span.max_query_length = 1 + (h / 96) % 6;
  const Tokenizer& tok = fixture_tokenizer((h / 576) % 2 == 0);
  bool accepted = false;  // by some task
  for (const auto& v : data_variants()) {
    DataConfig dc;
    dc.text_fields = v.text_fields;
    dc.label_field = v.label_field;
    dc.labels = v.labels;
    dc.labels_given = !v.labels.empty();
    // Training (labels required) and prediction (labels optional) read the same file.
    for (bool require_labels : {true, false}) {
      try {
        const LabelSet labels = collect_labels(v.task, dc, file, records);
        if (dc.labels_given) FUZZ_CHECK(labels.names == v.labels, "given labels kept in order");
        const auto examples = make_examples(v.task, dc, labels, file, records, require_labels);
        FUZZ_CHECK(examples.size() == records.size(), "one example per record");
        for (const auto& ex : examples)
          for (auto id : ex.labels) FUZZ_CHECK(id >= 0 && id < labels.size(), "label id in the label set");
        check_encoded(v.task, examples, encode_examples(v.task, examples, tok, max_len, method, span), max_len);
        accepted = true;
      } catch (const UserError& e) { refused(e); }
    }
  }
  return accepted;
}

bool run_jsonl(std::string_view input) { return run_data(input, "data.jsonl"); }
bool run_tsv(std::string_view input) { return run_data(input, "data.tsv"); }

// ---- safetensors ----
// A whole file, or (input starting with '{') a header: the bytes up to its last '}' become the
// JSON header with a correct length prefix, the rest the data buffer, so mutations of the
// header are not all refused for a wrong length.
bool run_safetensors(std::string_view input) {
  std::string bytes(input);
  if (!input.empty() && input[0] == '{') {
    const size_t end = input.rfind('}') + 1;
    uint64_t n = end;
    bytes.assign(reinterpret_cast<const char*>(&n), 8);  // little-endian host (checked by safetensors.cpp)
    bytes.append(input.substr(0, end)).append(input.substr(end));
  }
  const auto file = write_input(bytes, "model.safetensors");
  SafetensorsFile st;
  try {
    st = read_safetensors(file);
  } catch (const UserError& e) { return refused(e); }
  for (const auto& [name, t] : st.tensors) FUZZ_CHECK(t.is_contiguous() && t.device().is_cpu(), name);
  // What was read writes and reads back to the same bytes.
  const auto copy = scratch_dir() / "copy.safetensors";
  write_safetensors(copy, st.tensors, st.metadata);
  const auto back = read_safetensors(copy);
  FUZZ_CHECK(
      back.metadata == (st.metadata.empty() ? std::map<std::string, std::string>{{"format", "pt"}} : st.metadata),
      "metadata round trip");
  FUZZ_CHECK(back.tensors.size() == st.tensors.size(), "tensor count round trip");
  for (const auto& [name, t] : st.tensors) {
    const auto& u = back.tensors.at(name);
    FUZZ_CHECK(u.scalar_type() == t.scalar_type() && u.sizes() == t.sizes() &&
                   (t.nbytes() == 0 || std::memcmp(u.data_ptr(), t.data_ptr(), t.nbytes()) == 0),
               "tensor '" + name + "' round trip");
  }
  return true;
}

// ---- pytorch_model.bin (torch.save zip + pickle) ----
// A whole file, or (input starting with the pickle PROTO opcode 0x80) a data.pkl: it is zipped
// with storages "0".."3" of 4, 16, 64 and 256 bytes, so the fuzzer reaches the pickle machine
// (a mutated entry in a real zip mostly fails its CRC).
void add_entry(zip_t* z, const std::string& name, const std::string& data) {
  void* copy = std::malloc(data.size() ? data.size() : 1);
  std::memcpy(copy, data.data(), data.size());
  zip_source_t* src = zip_source_buffer(z, copy, data.size(), /*freep=*/1);
  FUZZ_CHECK(src && zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE) >= 0, zip_strerror(z));
}

bool run_torch_bin(std::string_view input) {
  fs::path file;
  if (!input.empty() && static_cast<unsigned char>(input[0]) == 0x80) {
    file = scratch_dir() / "pytorch_model.bin";
    int err = 0;
    zip_t* z = zip_open(file.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
    FUZZ_CHECK(z, "zip_open for writing");
    add_entry(z, "archive/data.pkl", std::string(input));
    add_entry(z, "archive/byteorder", "little");
    for (int k = 0; k < 4; ++k) {
      std::string storage(size_t{4} << (2 * k), '\0');
      for (size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<char>(i * 37 + k);
      add_entry(z, "archive/data/" + std::to_string(k), storage);
    }
    FUZZ_CHECK(zip_close(z) == 0, zip_strerror(z));
  } else {
    file = write_input(input, "pytorch_model.bin");
  }
  try {
    for (const auto& [name, t] : read_torch_bin(file)) {
      FUZZ_CHECK(t.device().is_cpu(), name);
      (void)t.sum().item<double>();  // every element of every view is readable memory
    }
    return true;
  } catch (const UserError& e) { return refused(e); }
}

// ---- config.json ----
// An accepted config.json writes and reads back to the same typed fields.
bool run_hf_config(std::string_view input) {
  const auto file = write_input(input, "config.json");
  HfConfig cfg;
  try {
    cfg = read_hf_config(file);
  } catch (const UserError& e) { return refused(e); }
  try {
    cfg.bert.validate();
  } catch (const std::invalid_argument&) {  // the trainer / loader turn this into a UserError
  }
  const auto copy = scratch_dir() / "copy.json";
  write_hf_config(copy, cfg);
  const HfConfig back = read_hf_config(copy);
  const auto &a = back.bert, &b = cfg.bert;
  FUZZ_CHECK(back.architectures == cfg.architectures && back.id2label == cfg.id2label &&
                 back.problem_type == cfg.problem_type && back.num_labels == cfg.num_labels &&
                 a.vocab_size() == b.vocab_size() && a.hidden_size() == b.hidden_size() &&
                 a.num_hidden_layers() == b.num_hidden_layers() && a.num_attention_heads() == b.num_attention_heads() &&
                 a.intermediate_size() == b.intermediate_size() && a.hidden_act() == b.hidden_act() &&
                 a.hidden_dropout_prob() == b.hidden_dropout_prob() &&
                 a.attention_probs_dropout_prob() == b.attention_probs_dropout_prob() &&
                 a.max_position_embeddings() == b.max_position_embeddings() &&
                 a.type_vocab_size() == b.type_vocab_size() && a.initializer_range() == b.initializer_range() &&
                 a.layer_norm_eps() == b.layer_norm_eps() && a.pad_token_id() == b.pad_token_id() &&
                 a.classifier_dropout() == b.classifier_dropout(),
             "config.json round trip");
  return true;
}

// ---- vocab.txt ----
// Parsed as Vocab::parse does, then a tokenizer on it must keep its promises on fixed texts
// and on the input itself.
bool run_vocab(std::string_view input) {
  std::shared_ptr<const Vocab> vocab;
  try {
    vocab = std::make_shared<const Vocab>(Vocab::parse(input, "vocab.txt"));
  } catch (const UserError& e) { return refused(e); }
  FUZZ_CHECK(vocab->size() >= vocab->distinct_size() && vocab->distinct_size() >= 1, "sizes");
  FUZZ_CHECK(vocab->token(vocab->unk_id()) == "[UNK]", "[UNK] id");
  for (int64_t id = 0; id < vocab->size() && id < 4096; ++id) {
    const auto& t = vocab->token(id);
    FUZZ_CHECK(t == "[UNK]" || vocab->id(t) == id, "token(" + std::to_string(id) + ") = '" + t + "'");
  }
  for (bool lower : {true, false}) {
    BertTokenizer tok(vocab, lower);
    for (std::string_view text :
         {std::string_view("Hello, WORLD! unaffable 今天天气很好 café İstanbul [SEP]x"), input.substr(0, 512)})
      check_tokenized(tok, text, tok.tokenize_with_offsets(text));
  }
  return true;
}

// ---- the tokenizer on arbitrary bytes ----
bool run_tokenizer(std::string_view input) {
  const uint32_t h = input_hash(input);
  const Tokenizer& tok = fixture_tokenizer(h % 2 == 0);
  const auto t = tok.tokenize_with_offsets(input);
  check_tokenized(tok, input, t);
  FUZZ_CHECK(tok.tokenize(input) == t.tokens, "tokenize() == tokenize_with_offsets().tokens");
  const int max_len = 4 + static_cast<int>((h / 2) % 20);
  const auto method = static_cast<TruncateMethod>((h / 40) % 4);
  check_encoding(encode(tok, input, std::nullopt, max_len, method, true), max_len, true);
  const auto mid = input.size() / 2;
  check_encoding(encode(tok, input.substr(0, mid), input.substr(mid), max_len, method, false), max_len, false);
  // Lines as pre-split words (token classification).
  std::vector<std::string> words;
  for (size_t p = 0; p < input.size();) {
    const size_t sp = std::min(input.find(' ', p), input.size());
    words.emplace_back(input.substr(p, sp - p));
    p = sp + 1;
  }
  const auto we = encode_words(tok, words, max_len, method, false);
  check_encoding(we, max_len, false);
  FUZZ_CHECK(we.word_start.size() == we.input_ids.size(), "word_start length");
  for (auto w : we.word_start) FUZZ_CHECK(w >= -1 && w < static_cast<int64_t>(words.size()), "word index");
  return true;
}

// What the other families' tokenizers promise: one span per piece, inside the input, in order of
// their starts, every piece with an id; tokenize() the same pieces.
template <class Tokenizer>
void check_family_tokenized(const Tokenizer& tok, std::string_view text) {
  const auto t = tok.tokenize_with_offsets(text);
  FUZZ_CHECK(t.tokens.size() == t.offsets.size(), "one offset per piece");
  const auto n = static_cast<int64_t>(unicode::decode_utf8(text).size());
  int64_t last_start = 0;
  for (size_t i = 0; i < t.tokens.size(); ++i) {
    const auto& o = t.offsets[i];
    FUZZ_CHECK(0 <= o.start && o.start <= o.end && o.end <= n,
               "piece '" + t.tokens[i] + "' span [" + std::to_string(o.start) + ", " + std::to_string(o.end) + ") in " +
                   std::to_string(n) + " code points");
    FUZZ_CHECK(o.start >= last_start, "spans in order");
    last_start = o.start;
    FUZZ_CHECK(!t.tokens[i].empty() && tok.token_to_id(t.tokens[i]) >= 0, "piece '" + t.tokens[i] + "' has no id");
  }
  FUZZ_CHECK(tok.tokenize(text) == t.tokens, "tokenize() == tokenize_with_offsets().tokens");
}

const fs::path& family_fixtures() {
  static const fs::path dir = fs::path(UNIF_SOURCE_DIR) / "tests" / "fixtures" / "tokenizers";
  return dir;
}

const char* const kFamilyTexts[] = {"Hello <mask> world, it's 2024!", "今天天气很好 ｈｅｌｌｏ ½ e\u0301",
                                    "  a\tb\n\nc  ", ""};

// ---- RoBERTa's, XLM-R's, ModernBERT's and MPNet's tokenizers on arbitrary bytes ----
bool run_family_tokenizers(std::string_view input) {
  static const auto bpe = ByteLevelBpe::load((family_fixtures() / "roberta-bpe").string());
  static const auto spm = SentencePieceTokenizer::load((family_fixtures() / "xlmr-spm").string());
  // ModernBERT's tokenizer.json: NFC before the byte-level split, untrimmed offsets.
  static const auto modern = ByteLevelBpe::load((family_fixtures() / ".." / "families" / "modernbert").string());
  // MPNet's WordPiece: its added tokens cut out of the raw text (<mask> lstrip); and with <mask> matched
  // in the normalized text (a tokenizer.json marking it normalized).
  static const fs::path mpnet_dir = family_fixtures() / ".." / "families" / "mpnet";
  static const auto mpnet = BertTokenizer::load_mpnet(mpnet_dir, mpnet_dir / "vocab.txt", true);
  static const auto mpnet_normalized = [] {
    const fs::path dir = scratch_dir() / "mpnet-normalized";
    fs::create_directories(dir);
    std::ofstream(dir / "tokenizer.json")
        << R"({"added_tokens": [{"id": 4004, "content": "<mask>", "lstrip": true, "normalized": true}]})";
    return BertTokenizer::load_mpnet(dir, mpnet_dir / "vocab.txt", true);
  }();
  check_family_tokenized(bpe, input);
  check_family_tokenized(spm, input);
  check_family_tokenized(modern, input);
  check_family_tokenized(mpnet, input);
  check_family_tokenized(mpnet_normalized, input);
  return true;
}

// ---- a byte-level BPE's tokenizer.json (or, after a line "--merges--", vocab.json + merges.txt) ----
bool run_bpe_files(std::string_view input) {
  const fs::path dir = scratch_dir() / "bpe";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string text(input);
  if (const auto cut = text.find("\n--merges--\n"); cut != std::string::npos) {
    write_input(text.substr(0, cut), "bpe/vocab.json");
    write_input(text.substr(cut + 12), "bpe/merges.txt");
  } else {
    write_input(text, "bpe/tokenizer.json");
  }
  try {
    const auto bpe = ByteLevelBpe::load(dir.string());
    for (const char* t : kFamilyTexts) check_family_tokenized(bpe, t);
    return true;
  } catch (const UserError& e) { return refused(e); }
}

// ---- a SentencePiece model file (XLM-R's sentencepiece.bpe.model) ----
bool run_spm_model(std::string_view input) {
  try {
    const auto spm = SentencePieceTokenizer::from_bytes(std::string(input), "sentencepiece.bpe.model");
    for (const char* t : kFamilyTexts) check_family_tokenized(spm, t);
    return true;
  } catch (const UserError& e) { return refused(e); }
}

// ---- unif serve's request body ----
// The input's first line is the Content-Type header, the rest the body of POST /v1/predict. A
// refused request says why (400 or 415 and a message); an accepted one's records copy, compare and
// print (the nesting guard holds).
bool run_serve_request(std::string_view input) {
  const size_t nl = input.find('\n');
  const std::string_view type = nl == std::string_view::npos ? std::string_view() : input.substr(0, nl);
  const std::string_view body = nl == std::string_view::npos ? input : input.substr(nl + 1);
  const auto r = unif::app::serve::decode_predict_request(body, type);
  if (r.status != 200) {
    FUZZ_CHECK((r.status == 400 || r.status == 415) && !r.error.empty(), "status " + std::to_string(r.status));
    FUZZ_CHECK(r.inputs.empty(), "a refused request has no records");
    return false;
  }
  FUZZ_CHECK(r.error.empty(), "an accepted request has no error");
  for (const auto& record : r.inputs) {
    const nlohmann::json copy = record;
    FUZZ_CHECK(copy == record, "record copy");
    (void)record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  // The same body as the embedding routes' (TEI's /embed, OpenAI's /v1/embeddings) requests.
  using unif::app::serve::EmbeddingApi;
  for (const auto api : {EmbeddingApi::Tei, EmbeddingApi::OpenAi}) {
    const auto e = unif::app::serve::decode_embed_request(api, body, type, 32);
    FUZZ_CHECK(e.status == 200 ? e.error.empty() && !e.texts.empty() && e.texts.size() <= 32 : !e.error.empty(),
               "embed request status " + std::to_string(e.status));
    if (e.status != 200) (void)unif::app::serve::embed_error(api, e.error, e.param).dump();
  }
  return true;
}

// ---- unif serve's text-embeddings-inference routes ----
// The first line is the Content-Type, the rest the body, read by each route's decoder (/predict,
// /rerank, /tokenize, /similarity); what one accepts is shaped into its answer.
bool run_tei_request(std::string_view input) {
  namespace serve = unif::app::serve;
  const size_t nl = input.find('\n');
  const std::string_view type = nl == std::string_view::npos ? std::string_view() : input.substr(0, nl);
  const std::string_view body = nl == std::string_view::npos ? input : input.substr(nl + 1);
  constexpr size_t kMax = 8;
  const auto verdict = [](const serve::TeiStatus& r, const char* route) {
    if (r.ok()) {
      FUZZ_CHECK(r.error.empty() && r.error_type.empty(), std::string(route) + ": an accepted request has no error");
      return true;
    }
    FUZZ_CHECK(r.status == 400 || r.status == 413 || r.status == 415 || r.status == 422,
               std::string(route) + ": status " + std::to_string(r.status));
    FUZZ_CHECK(!r.error.empty() && !r.error_type.empty(), std::string(route) + ": a refusal names its error");
    FUZZ_CHECK(!serve::tei_error_body(r.error, r.error_type).empty(), std::string(route) + ": the error's body");
    return false;
  };
  bool accepted = false;
  const auto predict = serve::decode_tei_predict(body, type, kMax);
  if (verdict(predict, "predict")) {
    accepted = true;
    FUZZ_CHECK(!predict.inputs.empty() && predict.inputs.size() <= kMax, "predict: 1..max inputs");
    FUZZ_CHECK(predict.batch || predict.inputs.size() == 1, "predict: one input unless a batch");
    const auto scores = serve::tei_scores(Task::Classification, {1.0, -2.0, 0.5}, 0.0, predict.raw_scores);
    FUZZ_CHECK(serve::tei_predictions({"a", "b", "c"}, scores).size() == 3, "predict: every label");
  }
  const auto rerank = serve::decode_tei_rerank(body, type, kMax);
  if (verdict(rerank, "rerank")) {
    accepted = true;
    FUZZ_CHECK(!rerank.texts.empty() && rerank.texts.size() <= kMax, "rerank: 1..max texts");
    std::vector<double> scores(rerank.texts.size(), 0.5);
    const auto ranks = serve::tei_ranks(rerank, scores);
    FUZZ_CHECK(ranks.size() == rerank.texts.size(), "rerank: a rank per text");
    (void)ranks.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  const auto tokenize = serve::decode_tei_tokenize(body, type, kMax);
  if (verdict(tokenize, "tokenize")) {
    accepted = true;
    FUZZ_CHECK(!tokenize.inputs.empty() && tokenize.inputs.size() <= kMax, "tokenize: 1..max inputs");
    for (const auto& text : tokenize.inputs) {
      FUZZ_CHECK(serve::code_point_slice(text, 0, static_cast<int64_t>(text.size()) + 1) == text, "whole slice");
      std::string joined;
      for (int64_t i = 0; i <= static_cast<int64_t>(text.size()); ++i)
        joined += serve::code_point_slice(text, i, i + 1);
      FUZZ_CHECK(joined == text, "code points joined give the text");
      (void)serve::tei_tokens(text, {{1, "[CLS]", true, -1, -1}, {2, "x", false, 0, 3}}).dump();
    }
  }
  const auto similarity = serve::decode_tei_similarity(body, type, kMax);
  if (verdict(similarity, "similarity")) {
    accepted = true;
    FUZZ_CHECK(!similarity.sentences.empty() && similarity.sentences.size() + 1 <= kMax, "similarity: 1..max-1");
    FUZZ_CHECK(serve::is_similarity_body(body), "a similarity request is recognised as one");
  }
  return accepted;
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"config", run_config, {"config"}, "YAML run config (+ --set overrides) -> RunConfig, to_yaml round trip"},
      {"model_meta", run_model_meta, {"model_meta"}, "unif.yaml of a model directory, write/read round trip"},
      {"jsonl",
       run_jsonl,
       {"jsonl_data", "span_data"},
       "a JSONL data file through every task (span extraction included)"},
      {"tsv", run_tsv, {"tsv_data"}, "a TSV data file through every task"},
      {"safetensors", run_safetensors, {"safetensors"}, "model.safetensors (or a header alone), write/read round trip"},
      {"torch_bin", run_torch_bin, {"torch_bin"}, "pytorch_model.bin: the zip archive (or a data.pkl alone)"},
      {"hf_config", run_hf_config, {"hf_config"}, "config.json -> HfConfig, write/read round trip"},
      {"vocab", run_vocab, {"vocab"}, "vocab.txt, then a tokenizer on it"},
      {"tokenizer", run_tokenizer, {"tokenizer"}, "BertTokenizer and encode() on arbitrary bytes"},
      {"family_tokenizers",
       run_family_tokenizers,
       {"tokenizer"},
       "byte-level BPE, SentencePiece and MPNet's WordPiece on arbitrary bytes"},
      {"bpe_files", run_bpe_files, {"bpe_files"}, "a byte-level BPE's tokenizer.json, or vocab.json + merges.txt"},
      {"spm_model", run_spm_model, {"spm_model"}, "a SentencePiece model (sentencepiece.bpe.model)"},
      {"serve_request",
       run_serve_request,
       {"serve_request"},
       "unif serve's POST /v1/predict body (first line: the Content-Type)"},
      {"tei_request",
       run_tei_request,
       {"tei_request"},
       "unif serve's text-embeddings-inference bodies: /predict, /rerank, /tokenize, /similarity (first line: the "
       "Content-Type)"},
  };
  return all;
}

const Target* find_target(std::string_view name) {
  for (const auto& t : targets())
    if (name == t.name) return &t;
  return nullptr;
}

}  // namespace unif::fuzz
