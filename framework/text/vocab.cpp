// placeholder: replaced by the tokenizer work
