// `unif tokenize` (SPEC §2): tokenizes stdin lines with a model directory's tokenizer (any family)
// or a WordPiece vocabulary and writes one JSON object per line — pieces and ids, or with
// --max-seq-length the full model input.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/unif/commands.h"
#include "framework/checkpoint/hf_config.h"
#include "framework/common/error.h"
#include "framework/common/hf_dir.h"
#include "framework/common/hub_cache.h"
#include "framework/model/tokenizer_files.h"
#include "framework/text/bert_tokenizer.h"
#include "framework/text/encoding.h"
#include "models/architectures.h"

namespace unif::app {
namespace {

struct TokenizeArgs {
  std::string model;
  std::string vocab;
  bool cased = false;
  int max_seq_length = 0;
  std::string truncate_method = "LIFO";
};

int run_tokenize(const TokenizeArgs& args, bool encode_inputs) {
  using namespace unif::framework;
  const TruncateMethod method = parse_truncate_method(args.truncate_method);
  if (args.model.empty() == args.vocab.empty()) throw UserError("give one of --model DIR and --vocab FILE");
  if (encode_inputs && args.max_seq_length < 3)
    throw UserError("--max-seq-length " + std::to_string(args.max_seq_length) +
                    " is too small: [CLS] text [SEP] needs at least 3");
  std::shared_ptr<const Tokenizer> loaded;
  if (!args.model.empty()) {
    // The model's family (config.json's model_type) names its tokenizer; lower-casing as its
    // tokenizer_config.json says (else true, as HF's BertTokenizer), --cased keeps case.
    const std::filesystem::path dir = resolve_hf_dir(resolve_model(args.model, "main", "--model"));
    if (!std::filesystem::is_regular_file(dir / "config.json"))
      throw UserError("--model: '" + args.model + "' has no config.json (expected a model directory)");
    const auto hf = read_hf_config(dir / "config.json");
    const bool lower = !args.cased && read_do_lower_case(dir).value_or(true);
    loaded = load_tokenizer(dir, models::architecture(hf.bert.model_type()), lower).tokenizer;
  } else {
    loaded = std::make_shared<BertTokenizer>(std::make_shared<const Vocab>(Vocab::load(args.vocab)),
                                             /*do_lower_case=*/!args.cased);
  }
  const Tokenizer& tokenizer = *loaded;
  const std::string pad = tokenizer.specials().pad;

  std::ios::sync_with_stdio(false);
  std::string line;
  for (long line_no = 1; std::getline(std::cin, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // \r\n line endings
    nlohmann::ordered_json out;
    if (!encode_inputs) {
      const auto tokens = tokenizer.tokenize(line);
      out["tokens"] = tokens;
      out["ids"] = tokenizer.convert_tokens_to_ids(tokens);
    } else {
      const auto tab = line.find('\t');
      std::optional<std::string_view> b;
      std::string_view a = line;
      if (tab != std::string::npos) {
        a = std::string_view(line).substr(0, tab);
        b = std::string_view(line).substr(tab + 1);
      }
      Encoding enc;
      try {
        enc = encode(tokenizer, a, b, args.max_seq_length, method, /*pad_to_max=*/true);
      } catch (const UserError& e) { throw UserError("stdin line " + std::to_string(line_no) + ": " + e.what()); }
      auto tokens = enc.tokens;
      tokens.resize(enc.input_ids.size(), pad);
      out["tokens"] = tokens;
      out["input_ids"] = enc.input_ids;
      out["token_type_ids"] = enc.token_type_ids;
      out["attention_mask"] = enc.attention_mask;
    }
    std::cout << out.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace) << '\n';
  }
  std::cout.flush();
  return 0;
}

}  // namespace

Command add_tokenize(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  auto* cmd = app.add_subcommand(
      "tokenize",
      "Tokenize stdin lines with a model's tokenizer (--model DIR: any supported family, as HF's\n"
      "tokenizer of that model) or a WordPiece vocabulary (--vocab FILE, HF BertTokenizer rules).\n"
      "Writes one JSON object per input line: {\"tokens\":[...],\"ids\":[...]} (no special tokens).\n"
      "With --max-seq-length N: {\"tokens\",\"input_ids\",\"token_type_ids\",\"attention_mask\"},\n"
      "each of length N: [CLS] text [SEP] (the model's own template, e.g. <s> text </s>), truncated\n"
      "and padded; a line containing a TAB is a sentence pair: the text before the first TAB is a,\n"
      "the rest is b ([CLS] a [SEP] b [SEP], token types 0/1). \\r\\n line endings are accepted.");
  cmd->add_option("--model", args->model,
                  "a model directory (config.json + its tokenizer files), or a Hub id (org/name) through the "
                  "Hugging Face cache");
  cmd->add_option("--vocab", args->vocab, "vocab.txt: one WordPiece token per line");
  cmd->add_flag("--cased", args->cased, "keep case and accents (default: lower-case, strip accents)");
  auto* len =
      cmd->add_option("--max-seq-length", args->max_seq_length, "encode full model inputs of exactly N positions");
  cmd->add_option("--truncate-method", args->truncate_method,
                  "with --max-seq-length: LIFO (default), FIFO, longer-FO or longest_first")
      ->capture_default_str();
  return [args, len] { return run_tokenize(*args, len->count() > 0); };
}

}  // namespace unif::app
