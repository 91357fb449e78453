"""sentence-transformers' side of bench/embedding/compare.py (one job per run, JSON on stdout).

  st_side.py train MODEL_DIR TRIPLETS DEV SEED     MNRL fine-tuning with its trainer, then STS-B dev
  st_side.py eval MODEL_DIR DEV                    the untrained model's STS-B dev Spearman
  st_side.py encode MODEL_DIR TEXTS_JSONL          SentenceTransformer.encode over the texts

The hyperparameters are compare.py's for unif: batch 32, 1 epoch, AdamW lr 5e-5 (weight decay 0,
eps 1e-8), linear schedule with 10% warmup, max_grad_norm 1, max_seq_length 64, fp32 on the CPU, and
the file order (a sequential batch sampler; unif: training.shuffle false).
"""
import json
import sys
import time


def read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def sts_evaluator(dev):
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator
    rows = read(dev)
    return EmbeddingSimilarityEvaluator([r["text_a"] for r in rows], [r["text_b"] for r in rows],
                                        [float(r["label"]) / 5.0 for r in rows], name="stsb", show_progress_bar=False)


def main():
    job = sys.argv[1]
    t0 = time.perf_counter()
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(sys.argv[2], device="cpu")
    if job == "encode":
        texts = [r["text"] for r in read(sys.argv[3])]
        emb = model.encode(texts, batch_size=32, show_progress_bar=False)
        print(json.dumps({"texts": len(texts), "dim": int(emb.shape[1]), "process_s": time.perf_counter() - t0}))
        return
    model.max_seq_length = 64
    if job == "eval":
        r = sts_evaluator(sys.argv[3])(model)
        print(json.dumps({"spearman_cosine": r["stsb_spearman_cosine"]}))
        return
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import DefaultBatchSampler
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from torch.utils.data import SequentialSampler
    triplets = read(sys.argv[3])
    data = Dataset.from_dict({"anchor": [r["text_a"] for r in triplets], "positive": [r["text_b"] for r in triplets],
                              "negative": [r["text_neg"] for r in triplets]})
    seed = int(sys.argv[5])

    def sequential(dataset, **kwargs):  # the file order, as unif's training.shuffle: false
        return DefaultBatchSampler(SequentialSampler(dataset), **kwargs)

    args = SentenceTransformerTrainingArguments(
        output_dir="/tmp/st-bench-embedding", per_device_train_batch_size=32, num_train_epochs=1,
        learning_rate=5e-5, weight_decay=0.0, adam_epsilon=1e-8, warmup_ratio=0.1, lr_scheduler_type="linear",
        max_grad_norm=1.0, seed=seed, data_seed=seed, batch_sampler=sequential, report_to=[], save_strategy="no",
        eval_strategy="no", logging_strategy="no", use_cpu=True, disable_tqdm=True)
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data,
                                         loss=MultipleNegativesRankingLoss(model, scale=20.0))
    t = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - t
    r = sts_evaluator(sys.argv[4])(model)
    print(json.dumps({"train_s": train_s, "samples": len(triplets), "spearman_cosine": r["stsb_spearman_cosine"]}))


if __name__ == "__main__":
    main()
