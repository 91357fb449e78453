"""Random-init models of every family at one size, for the families' speed comparison
(bench/hf_compare --tasks family_bert,family_roberta,...): hidden 256, 4 layers, 4 heads,
intermediate 1024, room for 128 positions (RoBERTa/XLM-R: 130, their offset), ELECTRA's and ALBERT's
embedding_size 128, ALBERT with one shared layer group (as albert-base: the same compute as 4 layers).
Vocabularies are the tiny tokenizers of tests/fixtures/families (4000 pieces; XLM-R 8002); BERT
uses DistilBERT's WordPiece vocabulary, so the seven models differ in their architecture only.

Written with the transformers of the Python that runs it (bench/hf_compare/run.sh's environment),
tokenizer files as a hub checkpoint has them (vocab files + tokenizer_config.json naming the class),
into .cache/bench-families/<family>.

    .cache/hf-venv/bin/python bench/families/make_models.py
"""
import json
import os
import shutil

import torch
import transformers as tf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures", "families")
OUT = os.path.join(ROOT, ".cache", "bench-families")
SIZE = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)

FAMILIES = {
    # family: (config class, model class, fixture with the tokenizer, tokenizer files, tokenizer class, extra)
    "bert": (tf.BertConfig, tf.BertForSequenceClassification, "distilbert", ["vocab.txt"], "BertTokenizer",
             dict(max_position_embeddings=128)),
    "roberta": (tf.RobertaConfig, tf.RobertaForSequenceClassification, "roberta", ["vocab.json", "merges.txt"],
                "RobertaTokenizer", dict(max_position_embeddings=130, type_vocab_size=1, pad_token_id=1,
                                         layer_norm_eps=1e-5)),
    "xlm-roberta": (tf.XLMRobertaConfig, tf.XLMRobertaForSequenceClassification, "xlm-roberta",
                    ["sentencepiece.bpe.model"], "XLMRobertaTokenizer",
                    dict(max_position_embeddings=130, type_vocab_size=1, pad_token_id=1, layer_norm_eps=1e-5)),
    "distilbert": (tf.DistilBertConfig, tf.DistilBertForSequenceClassification, "distilbert", ["vocab.txt"],
                   "DistilBertTokenizer", None),
    "electra": (tf.ElectraConfig, tf.ElectraForSequenceClassification, "electra", ["vocab.txt"], "ElectraTokenizer",
                dict(max_position_embeddings=128, embedding_size=128)),
    "albert": (tf.AlbertConfig, tf.AlbertForSequenceClassification, "albert", ["spiece.model"], "AlbertTokenizer",
               dict(max_position_embeddings=128, embedding_size=128, num_hidden_groups=1, inner_group_num=1,
                    hidden_act="gelu_new", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)),
}


def main():
    for family, (config_class, model_class, fixture, files, tok_class, extra) in FAMILIES.items():
        d = os.path.join(OUT, family)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for f in files:
            shutil.copy(os.path.join(FIX, fixture, f), d)
        vocab = json.load(open(os.path.join(FIX, fixture, "config.json")))["vocab_size"]
        if extra is None:  # DistilBERT's own names
            config = config_class(vocab_size=vocab, dim=SIZE["hidden_size"], n_layers=SIZE["num_hidden_layers"],
                                  n_heads=SIZE["num_attention_heads"], hidden_dim=SIZE["intermediate_size"],
                                  max_position_embeddings=128)
        else:
            config = config_class(vocab_size=vocab, **SIZE, **extra)
        torch.manual_seed(0)
        model_class(config).save_pretrained(d, safe_serialization=True)
        lower = fixture in ("distilbert", "electra", "albert")
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": tok_class, "do_lower_case": lower, "model_max_length": 128}, f)
        print("%-12s %s, %d parameters -> %s" % (family, model_class.__name__,
                                                  sum(p.numel() for p in model_class(config).parameters()), d))


if __name__ == "__main__":
    main()
