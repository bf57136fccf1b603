"""A Hugging Face encoder as a textcls model: the wrapper (model.py: words in, word-level attention maps out) and
its word tokenizer (text.py: words to word pieces and back). Checkpoint folders: textcls.hf_checkpoint."""
